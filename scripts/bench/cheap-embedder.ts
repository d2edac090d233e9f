/**
 * @file The benchmarks' cheap image embedder (bench-eval.ts --mode images, normalization-place.ts): so
 * cheap that the image pipeline, not the model, is what they measure. Seeded: the same weights every
 * time (PyTorch's reference rebuilds the model from them, scripts/reference/torch_pipeline.py).
 */
import { encodeModel, floatTensor, node, tensorValueInfo } from '../../lib/onnx/builder.js';
import { Rng } from '../../lib/util/rng.js';

/** The cheap benchmark embedder: Conv(3->32, 16x16, stride 16) -> ReLU -> GlobalAveragePool -> Gemm(32->64) -> L2 outside. */
export function cheapModel(): { bytes: Uint8Array; weights: Record<string, unknown> } {
  const rng = new Rng(3);
  const channels = 32;
  const patch = 16;
  const dim = 64;
  const convWeight = Float32Array.from({ length: channels * 3 * patch * patch }, () => rng.nextGaussian() * 0.05);
  const convBias = Float32Array.from({ length: channels }, () => rng.nextGaussian() * 0.1);
  const linearWeight = Float32Array.from({ length: dim * channels }, () => rng.nextGaussian() * 0.2);
  const linearBias = Float32Array.from({ length: dim }, () => rng.nextGaussian() * 0.1);
  const bytes = encodeModel({
    graphName: 'bench_cheap_embedder',
    inputs: [tensorValueInfo('images', 'float32', ['batch', 3, 224, 224])],
    outputs: [tensorValueInfo('embedding', 'float32', ['batch', dim])],
    initializers: [
      floatTensor('conv_w', [channels, 3, patch, patch], convWeight),
      floatTensor('conv_b', [channels], convBias),
      floatTensor('fc_w', [dim, channels], linearWeight),
      floatTensor('fc_b', [dim], linearBias),
    ],
    nodes: [
      node('Conv', ['images', 'conv_w', 'conv_b'], ['conv'], { kernel_shape: { ints: [patch, patch] }, strides: { ints: [patch, patch] } }),
      node('Relu', ['conv'], ['relu']),
      node('GlobalAveragePool', ['relu'], ['pooled']),
      node('Flatten', ['pooled'], ['flat'], { axis: { i: 1 } }),
      node('Gemm', ['flat', 'fc_w', 'fc_b'], ['embedding'], { transB: { i: 1 } }),
    ],
  });
  const weights = { channels, patch, dim, convWeight: [...convWeight], convBias: [...convBias], linearWeight: [...linearWeight], linearBias: [...linearBias] };
  return { bytes, weights };
}
