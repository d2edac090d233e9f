/**
 * @file Worker-thread entry of a {@link SessionThread} (session-thread.ts): creates one onnxruntime
 * session with {@link createSession} and runs it for the thread that started it. Does nothing when
 * imported on the main thread.
 *
 * Protocol: workerData is a {@link SessionThreadData}. The worker answers `ready` (provider, attempts,
 * declared inputs and outputs) or `fatal` (and exits), then one `result` or `error` per
 * {@link SessionThreadRequest} of type `run`, in order (a result hands the run's input buffers back);
 * `release` frees the session and ends the thread.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type * as ort from 'onnxruntime-node';
import { DmlError, type DmlErrorCode } from '../errors.js';
import { createSession, describeIo, type CreateSessionOptions, type IoDescription } from './session.js';
import type { ExecutionProviderName, ProviderAttempt } from './devices.js';
import { ortFeeds, plainOutputs, type FloatInputs, type PlainTensor } from './session-runner.js';

/** What the thread is started with. */
export interface SessionThreadData {
  /** The model's path (external data files are found beside it) or its bytes. */
  model: string | Uint8Array;
  options: CreateSessionOptions;
}

/** A message to the thread. */
export type SessionThreadRequest =
  | { type: 'run'; id: number; inputs: FloatInputs; outputNames: string[] }
  | { type: 'release' };

/** A message from the thread. */
export type SessionThreadReply =
  | { type: 'ready'; provider: ExecutionProviderName; attempts: ProviderAttempt[]; io: IoDescription }
  | { type: 'fatal'; code: DmlErrorCode | null; message: string }
  | { type: 'result'; id: number; outputs: Record<string, PlainTensor>; inputs: FloatInputs }
  | { type: 'error'; id: number; message: string };

async function serve(port: MessagePort, data: SessionThreadData): Promise<void> {
  let session: ort.InferenceSession;
  let io: IoDescription;
  try {
    const created = await createSession(data.model, data.options);
    session = created.session;
    io = describeIo(session);
    port.postMessage({ type: 'ready', provider: created.provider, attempts: created.attempts, io } satisfies SessionThreadReply);
  } catch (err) {
    const reply: SessionThreadReply = err instanceof DmlError ? { type: 'fatal', code: err.code, message: err.message } : { type: 'fatal', code: null, message: (err as Error)?.message ?? String(err) };
    port.postMessage(reply);
    port.close();
    return;
  }
  port.on('message', (request: SessionThreadRequest) => {
    if (request.type === 'release') {
      void session.release().finally(() => port.close());
      return;
    }
    session.run(ortFeeds(request.inputs, io.inputs), request.outputNames).then(
      (result) => {
        // The inputs go back with the outputs (moved, not copied), so the caller can reuse its arrays.
        const reply: SessionThreadReply = { type: 'result', id: request.id, outputs: plainOutputs(result, request.outputNames), inputs: request.inputs };
        port.postMessage(reply, Object.values(request.inputs).map((input) => input.data.buffer as ArrayBuffer));
      },
      (err: unknown) => port.postMessage({ type: 'error', id: request.id, message: (err as Error)?.message ?? String(err) } satisfies SessionThreadReply),
    );
  });
}

if (parentPort) void serve(parentPort, workerData as SessionThreadData);
