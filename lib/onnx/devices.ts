/**
 * @file The execution devices of dmlkit, in one registry: for each, the onnxruntime execution providers
 * a session on it asks for and a check of why it cannot work on this machine. `--device` and `device`
 * in the API, in the training config and in the graph trainer take these names; `auto` tries them in
 * registry order (session.ts creates the sessions, with the fallback of lib/util/fallback.ts). Adding a
 * device is its name in {@link AUTO_PROVIDER_ORDER} and its entry in {@link EXECUTION_DEVICES}. No onnxruntime here: command-line parsing and
 * reports read this file without loading it.
 */
import { access, readdir } from 'node:fs/promises';
import type { InferenceSession } from 'onnxruntime-node';

/** Folders the Linux loader searches for libvulkan.so.1 (LD_LIBRARY_PATH first, then the usual ones). */
function vulkanSearchPath(): string[] {
  const fromEnv = (process.env.LD_LIBRARY_PATH ?? '').split(':').filter((d) => d !== '');
  const arch = process.arch === 'arm64' ? 'aarch64-linux-gnu' : 'x86_64-linux-gnu';
  return [...fromEnv, `/usr/lib/${arch}`, `/lib/${arch}`, '/usr/lib64', '/lib64', '/usr/lib', '/lib', '/usr/local/lib'];
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** Whether the machine exposes a GPU device node: DRM render nodes (Mesa drivers), NVIDIA's, or WSL's. */
async function gpuDeviceNodePresent(): Promise<boolean> {
  const dri = await readdir('/dev/dri').catch(() => [] as string[]);
  return dri.some((name) => name.startsWith('renderD')) || (await exists('/dev/nvidiactl')) || (await exists('/dev/dxg'));
}

/**
 * Why WebGPU cannot work here before onnxruntime is asked, or undefined. On Linux, Dawn needs the
 * Vulkan loader and a GPU the Vulkan driver can open; without them the session fails anyway, after
 * Dawn printed warnings to stderr that dmlkit cannot silence (measured: with Mesa's Vulkan drivers
 * installed and no GPU, Dawn also refuses the software rasterizer, "No supported adapters"). Other
 * platforms use Metal or Direct3D and are left to onnxruntime.
 */
async function webgpuUnavailable(): Promise<string | undefined> {
  if (process.platform !== 'linux') return undefined;
  if (!(await gpuDeviceNodePresent())) return `${NO_GPU_DEVICE} (/dev/dri/renderD*, /dev/nvidiactl or /dev/dxg) on this machine`;
  let loader = false;
  for (const dir of vulkanSearchPath()) if (!loader) loader = await exists(`${dir}/libvulkan.so.1`);
  if (!loader) return 'no Vulkan loader (libvulkan.so.1) on this machine; WebGPU needs it and a GPU driver with Vulkan support';
  return undefined;
}

/**
 * Why CUDA cannot work here before onnxruntime is asked, or undefined: on Linux, no NVIDIA device node
 * (`/dev/nvidiactl`, or WSL's `/dev/dxg`) means no GPU the CUDA provider could use. Other platforms
 * are left to onnxruntime.
 */
async function cudaUnavailable(): Promise<string | undefined> {
  if (process.platform !== 'linux' || (await exists('/dev/nvidiactl')) || (await exists('/dev/dxg'))) return undefined;
  return `${NO_GPU_DEVICE} for CUDA (/dev/nvidiactl or /dev/dxg) on this machine`;
}

/** How a device's reason begins when the machine has no GPU it could use (see {@link noGpuOnMachine}). */
export const NO_GPU_DEVICE = 'no GPU device';

/**
 * True when `auto` fell back to the CPU only because the machine has no GPU device at all: every
 * failed attempt says {@link NO_GPU_DEVICE}. Then the reasons are noise (nobody asked for a GPU and
 * none could exist) and one short note says it.
 */
export function noGpuOnMachine(choice: ProviderChoice): boolean {
  const failed = choice.attempts.filter((a) => a.error !== undefined);
  return choice.provider === 'cpu' && failed.length > 0 && failed.every((a) => a.error?.startsWith(NO_GPU_DEVICE) === true);
}

/** The execution devices `auto` tries, in order; each has its entry in {@link EXECUTION_DEVICES}. */
export const AUTO_PROVIDER_ORDER = ['cuda', 'webgpu', 'cpu'] as const;

/** An execution provider dmlkit knows how to ask for. */
export type ExecutionProviderName = (typeof AUTO_PROVIDER_ORDER)[number];

/** How to run on one execution device (see {@link EXECUTION_DEVICES}). */
export interface ExecutionDevice {
  /**
   * onnxruntime's `executionProviders` for a session on this device. `cpu` after a GPU provider only
   * places the nodes that provider lacks; it does not rescue a failed load.
   */
  readonly providers: readonly InferenceSession.ExecutionProviderConfig[];
  /** Why the device cannot work on this machine, found before onnxruntime is asked; undefined when it may. */
  readonly unavailable?: () => Promise<string | undefined>;
  /**
   * Where a session on this device can leave an output so that the next run reads it without a copy
   * (onnxruntime's IO binding: `preferredOutputLocation`); undefined when outputs always come back to
   * JavaScript memory. onnxruntime-node 1.30 binds WebGPU's `gpu-buffer` tensors only: its tensors have
   * no CUDA location, so CUDA outputs are copied to JavaScript after each run.
   */
  readonly outputLocation?: 'gpu-buffer';
}

/** The execution devices by name: adding one is its name in {@link AUTO_PROVIDER_ORDER} and its entry here. */
export const EXECUTION_DEVICES: Readonly<Record<ExecutionProviderName, ExecutionDevice>> = {
  cuda: { providers: [{ name: 'cuda', deviceId: 0 }, 'cpu'], unavailable: cudaUnavailable },
  webgpu: { providers: ['webgpu', 'cpu'], unavailable: webgpuUnavailable, outputLocation: 'gpu-buffer' },
  cpu: { providers: ['cpu'] },
};

/**
 * Where to run a model: `auto` tries CUDA, then WebGPU, then CPU; `cuda`, `webgpu` or `cpu` uses that
 * provider or fails with the reason.
 */
export type DeviceChoice = 'auto' | ExecutionProviderName;

/** The device used when none is given: `auto`. */
export const DEFAULT_DEVICE: DeviceChoice = 'auto';

/** One try at a device: the device tried and, when it failed, why (onnxruntime's message, one line). */
export interface ProviderAttempt {
  provider: ExecutionProviderName;
  error?: string;
}

/** Which device runs a model, and every device tried for it, in order (the last one succeeded). */
export interface ProviderChoice {
  provider: ExecutionProviderName;
  attempts: ProviderAttempt[];
}

/** Every `--device` value, for parsers and messages. */
export const DEVICE_CHOICES: readonly [DeviceChoice, ...DeviceChoice[]] = ['auto', ...AUTO_PROVIDER_ORDER];

/** One line of help text for a `--device` flag. */
export const DEVICE_HELP = 'auto (CUDA, else WebGPU, else CPU), cuda, webgpu or cpu';

/**
 * One line for the user: which provider runs `name`, and why the ones tried before it failed, e.g.
 * `model.onnx runs on cpu (cuda: Failed to load shared library; webgpu: no Vulkan loader ...)`.
 */
export function describeProviderChoice(name: string, created: ProviderChoice): string {
  if (noGpuOnMachine(created)) return `${name} runs on cpu (no GPU on this machine)`;
  const failed = created.attempts.filter((a) => a.error !== undefined).map((a) => `${a.provider}: ${a.error}`);
  return `${name} runs on ${created.provider}${failed.length > 0 ? ` (${failed.join('; ')})` : ''}`;
}

/**
 * Where the embedder (lib/embed/embedder.ts) normalises a batch, bit for bit the same values either way
 * (`host` by default):
 * - `host`: in JavaScript (`toTensor`, lib/image/to-tensor.ts), in the process that receives the decoded crops; the
 *   model gets float32 input. The faster choice on the CPU provider, where the graph costs 1.2-1.4 ms
 *   per 224x224 image against toTensor's 0.3-0.5 (scripts/experiments/normalisation-graph-cost.ts).
 * - `device`: the uint8 crops go to the model's provider and a small graph in front of the model
 *   (lib/onnx/normalization-graph.ts) normalises them there: a quarter of the bytes to upload, and no
 *   normalising in the process that receives the crops (on a GPU with many decode processes, that
 *   process is the bottleneck: docs/benchmarks.md). Meant for GPUs; not yet run on one
 *   (scripts/gpu/graph-trainer-gpu.sh measures it there), so not the default anywhere yet.
 */
export type NormalizationPlace = 'host' | 'device';

/** The choices of the embedder's `normalization` option, for parsing. */
export const NORMALIZATION_CHOICES: readonly NormalizationPlace[] = ['host', 'device'];
