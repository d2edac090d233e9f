/**
 * @file Worker-thread entry of the search service's inference: one {@link OnnxEmbedder} per worker,
 * since onnxruntime-node's `run()` blocks the thread it is called on (see docs/stack.md §1).
 * Started by {@link InferenceWorkerPool}; does nothing when imported on the main thread.
 *
 * Protocol: the pool sends {@link WorkerRequest}s; the worker answers `ready` once the model is loaded
 * (or `fatal` and exits), then one `vector` or `error` per request. Requests are decoded as they
 * arrive (sharp, on the libuv pool) and the decoded ones are embedded together, up to the embedder's
 * batch size per inference call, so a busy worker batches by itself.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import sharp from 'sharp';
import type { DmlErrorCode } from '../errors.js';
import { DmlError } from '../errors.js';
import { OnnxEmbedder } from '../embed/embedder.js';
import type { Preprocessing } from '../image/preprocessing.js';
import type { TokenPooling } from '../embed/model-signature.js';
import type { DeviceChoice, ProviderChoice } from '../onnx/devices.js';
import { preprocessImageBytes } from '../image/image-bytes.js';

/** What a worker is started with. */
export interface InferenceWorkerData {
  modelPath: string;
  /** Expected SHA-256 of the model; a different file is refused. */
  modelSha256: string;
  preprocessing: Preprocessing;
  outputName: string;
  /** How a token output is pooled; absent for an [N, D] output. */
  pooling?: TokenPooling;
  device: DeviceChoice;
  threads: number | undefined;
  batchSize: number;
  limitInputPixels: number | undefined;
}

/** A request to a worker: embed one encoded image. `name` names it in error messages. */
export interface WorkerRequest {
  id: number;
  bytes: Uint8Array;
  name: string;
}

/** A message from a worker. */
export type WorkerReply =
  | ({ type: 'ready' } & ProviderChoice)
  | { type: 'fatal'; code: DmlErrorCode; message: string }
  | { type: 'vector'; id: number; vector: Float32Array }
  | { type: 'error'; id: number; code: DmlErrorCode; message: string };

function errorFields(err: unknown): { code: DmlErrorCode; message: string } {
  if (err instanceof DmlError) return { code: err.code, message: err.message };
  return { code: 'E_MODEL', message: `inference failed: ${(err as Error)?.message ?? String(err)}` };
}

async function run(port: MessagePort, data: InferenceWorkerData): Promise<void> {
  const post = (reply: WorkerReply, transfer: ArrayBuffer[] = []): void => port.postMessage(reply, transfer);
  let embedder: OnnxEmbedder;
  try {
    embedder = await OnnxEmbedder.open(data.modelPath, {
      device: data.device,
      batchSize: data.batchSize,
      preprocessing: data.preprocessing,
      outputName: data.outputName,
      // The index records the whole preprocessing: no config file is looked for.
      preprocessorConfig: false,
      ...(data.pooling !== undefined ? { pooling: data.pooling } : {}),
      // This worker is already off the main thread and does nothing else while it infers.
      inferenceThread: false,
      ...(data.threads !== undefined ? { threads: data.threads } : {}),
    });
    if (embedder.modelSha256 !== data.modelSha256) {
      await embedder.release();
      throw new DmlError('E_MODEL', `${data.modelPath} has sha256 ${embedder.modelSha256}; the index was built with ${data.modelSha256}`);
    }
  } catch (err) {
    post({ type: 'fatal', ...errorFields(err) });
    return;
  }
  // Uploads are distinct images, each decoded once: libvips' operation cache would only hold memory.
  sharp.cache(false);
  const perImage = data.preprocessing.channels * data.preprocessing.height * data.preprocessing.width;
  const decoded: Array<{ id: number; input: Float32Array }> = [];
  let embedding = false;

  const drain = async (): Promise<void> => {
    if (embedding) return;
    embedding = true;
    try {
      while (decoded.length > 0) {
        const batch = decoded.splice(0, embedder.batchSize);
        const inputs = new Float32Array(batch.length * perImage);
        batch.forEach(({ input }, i) => inputs.set(input, i * perImage));
        try {
          const vectors = await embedder.embedTensor(inputs, batch.length);
          const dim = vectors.length / batch.length;
          batch.forEach(({ id }, i) => {
            const vector = vectors.slice(i * dim, (i + 1) * dim);
            post({ type: 'vector', id, vector }, [vector.buffer]);
          });
        } catch (err) {
          for (const { id } of batch) post({ type: 'error', id, ...errorFields(err) });
        }
      }
    } finally {
      embedding = false;
    }
  };

  port.on('message', (request: WorkerRequest) => {
    preprocessImageBytes(request.bytes, data.preprocessing, { name: request.name, limitInputPixels: data.limitInputPixels }).then(
      (input) => {
        decoded.push({ id: request.id, input });
        void drain();
      },
      (err: unknown) => post({ type: 'error', id: request.id, ...errorFields(err) }),
    );
  });
  post({ type: 'ready', provider: embedder.provider, attempts: embedder.providerAttempts });
}

if (parentPort) void run(parentPort, workerData as InferenceWorkerData);
