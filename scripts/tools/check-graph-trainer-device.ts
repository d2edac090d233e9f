/**
 * @file The graph trainer's step graphs on a device against the CPU provider: for each network, one
 * training forward and one step (SGD, gradients recorded) run on both providers from the same weights,
 * images and loss gradient; every output of both graphs (the embeddings, the saved activations, each
 * parameter's gradient, the next weights and running statistics) is compared, and the tensors that
 * differ most are listed, in graph order, so that the first one points at the operator to blame.
 *
 *   node dist/scripts/tools/check-graph-trainer-device.js [--device webgpu] [--batch 32] [--tolerance 1e-4] [--size 64] [recipe-r] [model.onnx ...]
 *
 * Networks: `recipe-r` (dmlkit's `convnet` built as Recipe R's network, NHWC input, `--size` px) and
 * ONNX files with an NCHW input whose spatial size is fixed or `--size` (default: the graph trainer's
 * PyTorch parity fixtures, spec/fixtures/graph-trainer/&#42;/initial.onnx). A tensor passes when its largest
 * |device - cpu| is at most the tolerance times its largest |cpu| value (1e-6 at least). Exit 1 when one
 * does not, 2 when the device cannot be opened. Set ORT_LOG_LEVEL=0 to have onnxruntime log on stderr
 * where it places each node (which operators fall back to the CPU).
 */
import { readOnnxGraph } from '../../lib/engine/graph/onnx-ir.js';
import { createGraphOptimizer } from '../../lib/engine/graph-trainer/optimizer-graph.js';
import { compileStep, defaultTrainedInitializers } from '../../lib/engine/graph-trainer/step-graph.js';
import ort from '../../lib/onnx/ort.js';
import { Rng } from '../../lib/util/rng.js';
import { argument, compare, load, networks, relativeDifference, type Difference } from './device-check-support.js';

/** The flags that take a value. */
const FLAGS = new Set(['--device', '--batch', '--tolerance', '--size']);

async function main(): Promise<number> {
  const device = argument('--device', 'webgpu');
  const batch = Number(argument('--batch', '32'));
  const size = Number(argument('--size', '64'));
  const tolerance = Number(argument('--tolerance', '1e-4'));
  const logSeverityLevel = Number(process.env.ORT_LOG_LEVEL ?? 3) as 0 | 1 | 2 | 3 | 4;
  let failed = false;
  for (const which of networks(FLAGS)) {
    const { bytes, itemDims } = await load(which, size);
    const graph = readOnnxGraph(bytes, which);
    const compiled = compileStep({
      graph,
      inputDims: new Map([[graph.inputs[0]?.name ?? 'input', [batch, ...itemDims]]]),
      trained: defaultTrainedInitializers(graph),
      decayed: new Set(),
      output: graph.outputs[0]?.name ?? 'embedding',
      optimizer: createGraphOptimizer({ kind: 'sgd', momentum: 0, dampening: 0, nesterov: false, weightDecay: 0 }),
      gradientOutputs: true,
    });
    const open = async (model: Uint8Array, provider: string): Promise<ort.InferenceSession> =>
      ort.InferenceSession.create(model, { executionProviders: [provider], graphOptimizationLevel: 'all', logSeverityLevel: provider === 'cpu' ? 3 : logSeverityLevel });
    let onDevice: [ort.InferenceSession, ort.InferenceSession];
    try {
      onDevice = [await open(compiled.forwardModel, device), await open(compiled.stepModel, device)];
    } catch (err) {
      console.log(`${device} could not be opened: ${(err as Error).message.split('\n')[0]}`);
      return 2;
    }
    const onCpu = [await open(compiled.forwardModel, 'cpu'), await open(compiled.stepModel, 'cpu')] as const;
    const rng = new Rng(0);
    const noise = (dims: readonly number[], scale: number): ort.Tensor =>
      new ort.Tensor('float32', Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) }, () => scale * rng.nextGaussian()), [...dims]);
    const value = (name: string, dims: readonly number[]): ort.Tensor => {
      const init = graph.initializers.get(name);
      return init ? new ort.Tensor('float32', Float32Array.from(init.data), [...dims]) : noise(dims, 0.01);
    };
    const x = noise([batch, ...itemDims], 1);
    const forwardFeeds: Record<string, ort.Tensor> = { [compiled.io.data[0] as string]: x };
    for (const v of compiled.io.forwardVariables) forwardFeeds[v.input] = value(v.input, v.dims);
    const seed = noise(compiled.io.outputDims, 0.01);
    const differences: Difference[] = [];
    const outputs: Array<Record<string, ort.Tensor>> = [];
    for (const [forward, step] of [onCpu, onDevice]) {
      const out = await forward.run(forwardFeeds);
      const stepFeeds: Record<string, ort.Tensor> = { [compiled.io.seed]: seed };
      for (const v of compiled.io.variables) if (step.inputNames.includes(v.input)) stepFeeds[v.input] = value(v.input, v.dims);
      for (const name of Object.values(compiled.io.hyper)) stepFeeds[name] = new ort.Tensor('float32', Float32Array.of(name.endsWith('lr') ? 0.1 : 1), []);
      for (const name of compiled.io.saved) stepFeeds[name] = out[name] as ort.Tensor;
      for (const name of compiled.io.stepData) stepFeeds[name] = x;
      outputs.push({ ...out, ...(await step.run(stepFeeds)) });
    }
    const [cpu, dev] = outputs as [Record<string, ort.Tensor>, Record<string, ort.Tensor>];
    for (const name of Object.keys(cpu)) if (cpu[name]?.type === 'float32') differences.push(compare(name, cpu[name]?.data as Float32Array, dev[name]?.data as Float32Array));
    const bad = differences.filter((d) => !(relativeDifference(d) <= tolerance));
    const worst = Math.max(...differences.map(relativeDifference));
    console.log(`${which} (batch ${batch}, item [${itemDims.join(', ')}]): ${differences.length} tensors, worst relative difference ${worst.toExponential(2)}, ${bad.length} over ${tolerance}`);
    for (const d of bad.slice(0, 20)) console.log(`  ${d.name}: |${device} - cpu| ${d.diff.toExponential(2)}, scale ${d.scale.toExponential(2)}`);
    failed ||= bad.length > 0;
  }
  return failed ? 1 : 0;
}

process.exitCode = await main();
