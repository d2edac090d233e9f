/**
 * @file onnxruntime session factory with explicit execution-provider fallback, and a description of
 * a session's inputs and outputs.
 *
 * onnxruntime-node does not fall back by itself: `executionProviders: ['cuda', 'cpu']` throws when the
 * CUDA provider library cannot be loaded. {@link createSession} therefore tries one provider list per
 * attempt (`auto`: CUDA, then WebGPU, then CPU) and records why each failed attempt failed, so reports
 * can say which provider ran the model and why.
 *
 * - CUDA needs the GPU build of the provider libraries, which onnxruntime-node's install script
 *   downloads only with `ONNXRUNTIME_NODE_INSTALL=cuda12` (NuGet `Microsoft.ML.OnnxRuntime.Gpu.Linux`,
 *   built for CUDA 12 + cuDNN 9, which must be on the loader path). Written to the binding's documented
 *   options (`{ name: 'cuda', deviceId: 0 }`); on the machines measured so far it cannot load (no
 *   download offline; CUDA 13 on the GPU machine), so the tests cover the fallback from it.
 * - WebGPU is bundled in onnxruntime-node 1.30 (Dawn). On Linux it needs a Vulkan loader
 *   (`libvulkan.so.1`) and a GPU driver's Vulkan ICD; nothing to install from npm. Measured on an H100
 *   machine: ResNet-50 at 844 img/s against 145 on the CPU provider with 16 threads. It is asked for
 *   only where a Vulkan loader and a GPU device node exist (see {@link webgpuUnavailable}); elsewhere
 *   the attempt fails at once with that reason (`auto` moves on; an explicit `webgpu` is an error). onnxruntime-node does not tell which adapter
 *   Dawn picked, so reports name the provider only.
 */
import { access } from 'node:fs/promises';
import ort from './ort.js';
import { DmlError, invalidParameterError } from '../errors.js';
import { AUTO_PROVIDER_ORDER, DEVICE_CHOICES, EXECUTION_DEVICES, type DeviceChoice, type ExecutionProviderName, type ProviderAttempt } from './devices.js';
import { FallbackExhausted, firstWorking } from '../util/fallback.js';


/** Options of {@link createSession}. */
export interface CreateSessionOptions {
  /** Execution provider choice. */
  device: DeviceChoice;
  /** Intra-op threads; onnxruntime's default (one per physical core) when omitted. */
  threads?: number;
  /** Name for error messages and onnxruntime's log id; defaults to the path, or `'model'` for bytes. */
  name?: string;
  /**
   * onnxruntime's graph optimisation level; default `all`. The graph trainer's step graphs use
   * `extended`: `all` adds the CPU provider's NCHWc rewrite, which takes only convolutions with
   * constant weights (in a step graph, im2col's identity convolutions, whose reorders cost more than
   * they saved); the trainer writes the blocked layout itself where it pays (lib/onnx/nchwc.ts,
   * docs/graph-trainer.md, "Speed").
   */
  optimization?: 'extended' | 'all';
  /**
   * onnxruntime's CPU memory arena; default true. Off, a run's buffers go back to the system after it
   * instead of staying with the session at its peak: less memory where a process holds several large
   * sessions (the graph trainer's micro-batches), a little slower.
   */
  memoryArena?: boolean;
  /**
   * Outputs to leave on the device where the provider can ({@link ExecutionDevice.outputLocation}:
   * WebGPU's `gpu-buffer` tensors, fed to a later run as they are and read with `getData()`); on
   * other providers every output comes back to JavaScript memory as usual. Default none.
   */
  deviceOutputs?: readonly string[];
  /**
   * Whether onnxruntime's intra-op threads spin while they wait for work; default true (onnxruntime's
   * own default). Off, they sleep between parallel sections: a little slower for a session that has
   * the cores to itself, but a spinning thread takes a core from the work that runs beside the session
   * (the embedder's image decoding; see docs/benchmarks.md, "Evaluation: the image pipeline").
   */
  spinning?: boolean;
}

/** A created session with the provider that runs it and the history of attempts. */
export interface CreatedSession {
  session: ort.InferenceSession;
  /** The provider of the successful attempt. */
  provider: ExecutionProviderName;
  /** Every attempt in order; the last one succeeded. */
  attempts: ProviderAttempt[];
}

/** Declared metadata of one model input or output. */
export interface IoValueInfo {
  name: string;
  /** Element type as onnxruntime names it (`float32`, `int64`, ...); undefined for non-tensor values. */
  type: ort.Tensor.Type | undefined;
  /** Dimensions: numbers for fixed sizes, strings for symbolic (`dim_param`) ones; empty when undeclared. */
  shape: Array<number | string>;
}

/** A session's declared inputs and outputs, in model order. */
export interface IoDescription {
  inputs: IoValueInfo[];
  outputs: IoValueInfo[];
}


let logLevelSet = false;

/**
 * Silences onnxruntime's stderr line for an expected failed GPU attempt. onnxruntime reads the level
 * once, when its environment is created: call this before the first session and before anything else
 * initialises onnxruntime (the ort-cpu training backend does, through the native binding).
 */
export function quietOrtLogging(): void {
  if (logLevelSet) return;
  ort.env.logLevel = 'fatal';
  logLevelSet = true;
}

/** onnxruntime's message, first line, without its source-location prefix (`/onnxruntime_src/...cc:136 ... was false.`). */
function messageOf(err: unknown): string {
  const line = (err instanceof Error ? err.message : String(err)).split('\n')[0]?.trim() ?? '';
  return line.replace(/^\/onnxruntime_src\/\S+:\d+ .*? was false\. /, '');
}

/**
 * Creates an onnxruntime session for `model` (a file path or the model's bytes), trying execution
 * providers per `options.device`. Graph optimisation level `all`.
 *
 * Errors: E_ARG for a bad option; E_NOT_FOUND when the path does not exist; E_MODEL when no attempt
 * succeeds (for `cuda`, the message carries the reason CUDA failed).
 */
export async function createSession(model: string | Uint8Array, options: CreateSessionOptions): Promise<CreatedSession> {
  const { device, threads, optimization = 'all' } = options;
  if (!DEVICE_CHOICES.includes(device)) throw invalidParameterError('device', `one of ${DEVICE_CHOICES.map((d) => `'${d}'`).join(', ')}`, device);
  if (threads !== undefined && (!Number.isInteger(threads) || threads < 1)) {
    throw invalidParameterError('threads', 'a positive integer', threads);
  }
  if (typeof model === 'string') {
    if (model.length === 0) throw invalidParameterError('model', 'a non-empty path or a Uint8Array', model);
    try {
      await access(model);
    } catch (err) {
      throw new DmlError('E_NOT_FOUND', `Model file ${model} cannot be read: ${messageOf(err)}`, { cause: err });
    }
  } else if (!(model instanceof Uint8Array) || model.length === 0) {
    throw invalidParameterError('model', 'a non-empty path or a non-empty Uint8Array', model);
  }
  const name = options.name ?? (typeof model === 'string' ? model : 'model');
  const providers: readonly ExecutionProviderName[] = device === 'auto' ? AUTO_PROVIDER_ORDER : [device];
  quietOrtLogging();

  try {
    const chosen = await firstWorking(
      providers,
      async (provider) => {
        // A device that cannot work here is not tried (for WebGPU: no Dawn warnings on stderr, one clear reason instead).
        const unavailable = await EXECUTION_DEVICES[provider].unavailable?.();
        if (unavailable !== undefined) return { unavailable };
        const sessionOptions: ort.InferenceSession.SessionOptions = {
          executionProviders: [...EXECUTION_DEVICES[provider].providers],
          graphOptimizationLevel: optimization,
          logId: name,
          // Per session too, not only ort.env: a process (or worker thread) whose onnxruntime environment
          // was set up before quietOrtLogging still keeps the failed GPU attempt's [E:onnxruntime ...] line off stderr.
          logSeverityLevel: 3,
          ...(options.memoryArena === false ? { enableCpuMemArena: false } : {}),
          ...(threads !== undefined ? { intraOpNumThreads: threads } : {}),
          ...(options.spinning === false ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
          ...deviceOutputLocations(provider, options.deviceOutputs),
        };
        const session = typeof model === 'string' ? await ort.InferenceSession.create(model, sessionOptions) : await ort.InferenceSession.create(model, sessionOptions);
        return { value: session };
      },
      messageOf,
    );
    return { session: chosen.value, provider: chosen.chosen, attempts: chosen.attempts.map(providerAttempt) };
  } catch (err) {
    if (!(err instanceof FallbackExhausted)) throw err;
    throw new DmlError('E_MODEL', `Cannot create an onnxruntime session for ${name} (device ${device}) — ${err.message}`, { cause: err.cause });
  }
}

/** The session option leaving `outputs` on `provider`'s device, when it can (see {@link CreateSessionOptions.deviceOutputs}). */
function deviceOutputLocations(provider: ExecutionProviderName, outputs: readonly string[] | undefined): Pick<ort.InferenceSession.SessionOptions, 'preferredOutputLocation'> {
  const location = EXECUTION_DEVICES[provider].outputLocation;
  if (!location || !outputs || outputs.length === 0) return {};
  return { preferredOutputLocation: Object.fromEntries(outputs.map((o) => [o, location])) };
}

/** A fallback attempt as reports record it (`provider`, `error`). */
function providerAttempt(attempt: { name: ExecutionProviderName; error?: string }): ProviderAttempt {
  return { provider: attempt.name, ...(attempt.error !== undefined ? { error: attempt.error } : {}) };
}

function describeValue(meta: ort.InferenceSession.ValueMetadata): IoValueInfo {
  if (!meta.isTensor) return { name: meta.name, type: undefined, shape: [] };
  return { name: meta.name, type: meta.type, shape: [...meta.shape] };
}

/** The declared inputs and outputs of `session` (from `inputMetadata` / `outputMetadata`). */
export function describeIo(session: ort.InferenceSession): IoDescription {
  return {
    inputs: session.inputMetadata.map(describeValue),
    outputs: session.outputMetadata.map(describeValue),
  };
}
