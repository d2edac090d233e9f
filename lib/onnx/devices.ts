/**
 * @file The device choices of dmlkit's inference (`--device`, `device` in the API) and how a choice is
 * told to the user: names and help text only, so that command-line parsing and reports need not load
 * onnxruntime (session.ts creates the sessions).
 */

/**
 * Where to run a model: `auto` tries CUDA, then WebGPU, then CPU; `cuda`, `webgpu` or `cpu` uses that
 * provider or fails with the reason.
 */
export type DeviceChoice = 'auto' | ExecutionProviderName;

/** An execution provider dmlkit knows how to ask for. */
export type ExecutionProviderName = 'cuda' | 'webgpu' | 'cpu';

/** The providers `auto` tries, in order. */
export const AUTO_PROVIDER_ORDER: readonly ExecutionProviderName[] = ['cuda', 'webgpu', 'cpu'];

/** Every `--device` value, for parsers and messages. */
export const DEVICE_CHOICES: readonly DeviceChoice[] = ['auto', ...AUTO_PROVIDER_ORDER];

/** One line of help text for a `--device` flag. */
export const DEVICE_HELP = 'auto (CUDA, else WebGPU, else CPU), cuda, webgpu or cpu';

/**
 * One line for the user: which provider runs `name`, and why the ones tried before it failed, e.g.
 * `model.onnx runs on cpu (cuda: Failed to load shared library; webgpu: no Vulkan loader ...)`.
 */
export function describeProviderChoice(name: string, created: { provider: string; attempts: ReadonlyArray<{ provider: string; error?: string }> }): string {
  const failed = created.attempts.filter((a) => a.error !== undefined).map((a) => `${a.provider}: ${a.error}`);
  return `${name} runs on ${created.provider}${failed.length > 0 ? ` (${failed.join('; ')})` : ''}`;
}
