/**
 * @file Worker-thread entry of a {@link SessionThread} (session-thread.ts): creates one onnxruntime
 * session with {@link createSession} and runs it for the thread that started it. Does nothing when
 * imported on the main thread.
 *
 * Protocol: workerData is a {@link SessionThreadData}. The worker answers `ready` (provider, attempts,
 * declared inputs and outputs) or `fatal` (and exits), then one `result` or `error` per
 * {@link SessionThreadRequest} of type `run`, in order (a result hands the run's input buffers back),
 * and one `staged` or `error` per `stage` (an input stage opened in front of the model, see
 * staged-session.ts); `release` frees the session and ends the thread.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { DmlError, type DmlErrorCode } from '../errors.js';
import { createSession, type CreateSessionOptions, type IoDescription } from './session.js';
import type { ExecutionProviderName, ProviderAttempt } from './devices.js';
import { plainOutputs, transferableBuffers, type PlainTensor, type RunInputs } from './feeds.js';
import { StagedSession, type InputStage } from './staged-session.js';

/** What the thread is started with. */
export interface SessionThreadData {
  /** The model's path (external data files are found beside it) or its bytes. */
  model: string | Uint8Array;
  options: CreateSessionOptions;
}

/** A message to the thread. */
export type SessionThreadRequest =
  | { type: 'run'; id: number; inputs: RunInputs; outputNames: string[] }
  | { type: 'stage'; id: number; stage: InputStage }
  | { type: 'release' };

/** A message from the thread. */
export type SessionThreadReply =
  | { type: 'ready'; provider: ExecutionProviderName; attempts: ProviderAttempt[]; io: IoDescription }
  | { type: 'fatal'; code: DmlErrorCode | null; message: string }
  | { type: 'result'; id: number; outputs: Record<string, PlainTensor>; inputs: RunInputs }
  | { type: 'staged'; id: number }
  | { type: 'error'; id: number; message: string };

async function serve(port: MessagePort, data: SessionThreadData): Promise<void> {
  let session: StagedSession;
  try {
    session = new StagedSession(await createSession(data.model, data.options), data.options);
    port.postMessage({ type: 'ready', provider: session.provider, attempts: session.attempts, io: session.io } satisfies SessionThreadReply);
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
    const failed = (err: unknown): void => port.postMessage({ type: 'error', id: request.id, message: (err as Error)?.message ?? String(err) } satisfies SessionThreadReply);
    if (request.type === 'stage') {
      session.addInputStage(request.stage).then(() => port.postMessage({ type: 'staged', id: request.id } satisfies SessionThreadReply), failed);
      return;
    }
    session.run(request.inputs, request.outputNames).then(
      (result) => {
        // The inputs go back with the outputs (moved, not copied), so the caller can reuse its arrays.
        const reply: SessionThreadReply = { type: 'result', id: request.id, outputs: plainOutputs(result, request.outputNames), inputs: request.inputs };
        port.postMessage(reply, transferableBuffers(request.inputs));
      },
      failed,
    );
  });
}

if (parentPort) void serve(parentPort, workerData as SessionThreadData);
