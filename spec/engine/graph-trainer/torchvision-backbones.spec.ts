/**
 * The graph trainer on whole torchvision backbones as PyTorch exports them (ResNet-18, ResNet-50,
 * MobileNetV3-Small, EfficientNet-B0, and a VisionTransformer of 2 layers of width 32 with 8 px patches;
 * random weights, 64 x 64 px, batch 4), made at test time by
 * scripts/reference/torch_backbone_gradients.py (Debian python3-torch and python3-torchvision, installed
 * by .ci/run): the training-mode output against PyTorch's float64 output, and every parameter's gradient
 * and BatchNorm running statistic against PyTorch's float64 values (largest value, L2 norm and four
 * probes; a gradient within max(1e-4, 3x PyTorch's own float32 error there, 3x its median float32 error
 * over the network) of the tensor's scale; one that is zero in exact arithmetic within 1e-5 of zero;
 * the running statistics within 1e-3).
 * docs/graph-trainer.md ("Verified against PyTorch") has the errors measured.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { GraphTrainer } from '../../../lib/engine/graph-trainer/graph-trainer.js';

/** A tensor as torch_backbone_gradients.py summarises it. */
interface Summary {
  size: number;
  maxAbs: number;
  norm: number;
  probes: Record<string, number>;
  float32Error?: number;
}

interface BackboneFixture {
  inputDims: number[];
  input: number[];
  seed: number[];
  output: number[];
  gradients: Record<string, Summary>;
  runningStatistics: Record<string, Summary>;
}

const ARCHS = ['resnet18', 'resnet50', 'mobilenet_v3_small', 'efficientnet_b0', 'vit_tiny'];
const SCRIPT = fileURLToPath(new URL('../../../scripts/reference/torch_backbone_gradients.py', import.meta.url));

/** The largest difference of `values` from `expected`'s summary (largest |value|, norm, probes), over its scale (1e-3 at least). */
function summaryError(values: Float32Array, expected: Summary): number {
  expect(values.length).to.equal(expected.size);
  const scale = Math.max(expected.maxAbs, 1e-3);
  let maxAbs = 0;
  let squares = 0;
  for (const v of values) {
    maxAbs = Math.max(maxAbs, Math.abs(v));
    squares += v * v;
  }
  const probes = Object.entries(expected.probes).map(([i, v]) => Math.abs((values[Number(i)] as number) - v) / scale);
  return Math.max(Math.abs(maxAbs - expected.maxAbs) / scale, Math.abs(Math.sqrt(squares) - expected.norm) / Math.max(expected.norm, 1e-3), ...probes);
}

describe('GraphTrainer on torchvision backbones (against PyTorch)', function () {
  this.timeout(240_000);
  let dir: string | undefined;
  before(function () {
    try {
      execFileSync('/usr/bin/python3', ['-c', 'import torch, torchvision'], { stdio: 'ignore' });
    } catch {
      this.skip(); // PyTorch is a dev-only reference (.ci/run installs it), never a dependency
    }
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-torchvision-'));
    execFileSync('/usr/bin/python3', [SCRIPT, dir, '64', ...ARCHS], { stdio: ['ignore', 'ignore', 'pipe'] });
  });
  after(() => (dir ? rmSync(dir, { recursive: true, force: true }) : undefined));

  for (const arch of ARCHS) {
    it(`reproduces PyTorch's output, gradients and running statistics of ${arch}`, async () => {
      const fixture = JSON.parse(readFileSync(path.join(dir as string, `${arch}.json`), 'utf8')) as BackboneFixture;
      const trainer = await GraphTrainer.create({ model: readFileSync(path.join(dir as string, `${arch}.onnx`)), name: arch, itemDims: fixture.inputDims.slice(1), optimizer: { kind: 'sgd' }, recordGradients: true });
      const input = Float32Array.from(fixture.input);
      const output = await trainer.step(input, Float32Array.from(fixture.seed), 0);
      const outputError = Math.max(...fixture.output.map((v, i) => Math.abs((output[i] as number) - v)));
      expect(outputError, 'output').to.be.below(1e-4);
      expect(Object.keys(fixture.gradients)).to.have.members([...trainer.trainedNames]);
      // PyTorch's own float32 error of each gradient (relative to its scale) and across the network (the median).
      const torchErrors = new Map(Object.entries(fixture.gradients).map(([param, g]) => [param, ((g.float32Error as number) * g.maxAbs) / Math.max(g.maxAbs, 1e-3)]));
      const typical = [...torchErrors.values()].sort((a, b) => a - b)[Math.floor(torchErrors.size / 2)] as number;
      for (const [param, expected] of Object.entries(fixture.gradients)) {
        const gradient = trainer.gradient(param) as Float32Array;
        if (expected.maxAbs < 1e-12) {
          // Zero in exact arithmetic (a bias before a BatchNorm): float32 leaves the rounding of a cancelling sum.
          expect(Math.max(...Array.from(gradient, Math.abs)), param).to.be.below(1e-5);
          continue;
        }
        // As close to the exact (float64) gradient as PyTorch's float32 gradient is, there or typically in this network, or within 1e-4.
        expect(summaryError(gradient, expected), param).to.be.below(Math.max(1e-4, 3 * (torchErrors.get(param) as number), 3 * typical));
      }
      // Within 1e-3: float32 rounding through the forward of a deep network (EfficientNet-B0's worst, 2.8e-4).
      for (const [statistic, expected] of Object.entries(fixture.runningStatistics)) {
        expect(summaryError(trainer.value(statistic) as Float32Array, expected), statistic).to.be.below(1e-3);
      }
      await trainer.release();
    });
  }
});
