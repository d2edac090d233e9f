/**
 * @file onnxruntime session factory with explicit execution-provider fallback, and a description of
 * a session's inputs and outputs.
 *
 * onnxruntime-node does not fall back by itself: `executionProviders: ['cuda', 'cpu']` throws when the
 * CUDA provider library cannot be loaded. {@link createSession} therefore tries one provider list per
 * attempt (`auto`: CUDA, then CPU) and records why each failed attempt failed, so reports can say
 * which provider ran the model and why.
 *
 * The CUDA path needs the GPU build of the provider libraries (`ONNXRUNTIME_NODE_INSTALL=cuda12`) plus
 * CUDA 12 and cuDNN 9 on the loader path. It is written to the binding's documented options
 * (`{ name: 'cuda', deviceId: 0 }`) but is untested on the development machines, which have no GPU; the
 * tests cover the fallback from a failed CUDA attempt to CPU.
 */
import { access } from 'node:fs/promises';
import * as ort from 'onnxruntime-node';
import { DmlError, invalidParameterError } from '../errors.js';

/** Where to run a model: `auto` tries CUDA, then CPU; `cuda` or `cpu` uses that provider or fails. */
export type DeviceChoice = 'auto' | 'cuda' | 'cpu';

/** An execution provider dmlkit knows how to ask for. */
export type ExecutionProviderName = 'cuda' | 'cpu';

/** One try at creating the session. */
export interface ProviderAttempt {
  /** The provider tried first in this attempt. */
  provider: ExecutionProviderName;
  /** Why it failed (onnxruntime's message); absent for the attempt that succeeded. */
  error?: string;
}

/** Options of {@link createSession}. */
export interface CreateSessionOptions {
  /** Execution provider choice. */
  device: DeviceChoice;
  /** Intra-op threads; onnxruntime's default (one per physical core) when omitted. */
  threads?: number;
  /** Name for error messages and onnxruntime's log id; defaults to the path, or `'model'` for bytes. */
  name?: string;
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

const DEVICES: readonly DeviceChoice[] = ['auto', 'cuda', 'cpu'];

const PROVIDER_LISTS: Readonly<Record<ExecutionProviderName, ort.InferenceSession.ExecutionProviderConfig[]>> = {
  // 'cpu' after 'cuda' only places nodes the CUDA provider lacks; it does not rescue a failed CUDA load.
  cuda: [{ name: 'cuda', deviceId: 0 }, 'cpu'],
  cpu: ['cpu'],
};

let logLevelSet = false;

/** Silences onnxruntime's stderr line for an expected failed CUDA attempt; done before the first session only. */
function quietOrtLogging(): void {
  if (logLevelSet) return;
  ort.env.logLevel = 'fatal';
  logLevelSet = true;
}

function messageOf(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]?.trim() ?? '';
}

/**
 * Creates an onnxruntime session for `model` (a file path or the model's bytes), trying execution
 * providers per `options.device`. Graph optimisation level `all`.
 *
 * Errors: E_ARG for a bad option; E_NOT_FOUND when the path does not exist; E_MODEL when no attempt
 * succeeds (for `cuda`, the message carries the reason CUDA failed).
 */
export async function createSession(model: string | Uint8Array, options: CreateSessionOptions): Promise<CreatedSession> {
  const { device, threads } = options;
  if (!DEVICES.includes(device)) throw invalidParameterError('device', "one of 'auto', 'cuda', 'cpu'", device);
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
  const providers: ExecutionProviderName[] = device === 'auto' ? ['cuda', 'cpu'] : [device];
  quietOrtLogging();

  const attempts: ProviderAttempt[] = [];
  let lastError: unknown;
  for (const provider of providers) {
    const sessionOptions: ort.InferenceSession.SessionOptions = {
      executionProviders: PROVIDER_LISTS[provider],
      graphOptimizationLevel: 'all',
      logId: name,
      ...(threads !== undefined ? { intraOpNumThreads: threads } : {}),
    };
    try {
      const session =
        typeof model === 'string'
          ? await ort.InferenceSession.create(model, sessionOptions)
          : await ort.InferenceSession.create(model, sessionOptions);
      attempts.push({ provider });
      return { session, provider, attempts };
    } catch (err) {
      lastError = err;
      attempts.push({ provider, error: messageOf(err) });
    }
  }
  const history = attempts.map((a) => `${a.provider}: ${a.error ?? ''}`).join('; ');
  throw new DmlError('E_MODEL', `Cannot create an onnxruntime session for ${name} (device ${device}) — ${history}`, {
    cause: lastError,
  });
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
