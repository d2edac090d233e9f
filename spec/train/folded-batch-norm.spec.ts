/**
 * foldedBatchNormWarning: a PyTorch export with its BatchNorms folded into the convolutions (PyTorch's
 * default export, spec/fixtures/user-exports/folded.onnx) gets the warning, with the export call that
 * keeps BatchNorm, in the run's warnings and report.json; networks that keep their normalisation do not.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { readOnnxGraph } from '../../lib/engine/graph/onnx-ir.js';
import { parseTrainConfig } from '../../lib/train/config.js';
import { foldedBatchNormWarning } from '../../lib/train/folded-batch-norm.js';
import { train } from '../../lib/train/trainer.js';
import { onCpuBackend } from '../helpers/tf-backend.js';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';

const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
const warningOf = (name: string): string | undefined => foldedBatchNormWarning(readOnnxGraph(new Uint8Array(readFileSync(fixture(name))), name), name);

describe('foldedBatchNormWarning', () => {
  it("warns of PyTorch's default export, whose BatchNorms are folded into the convolutions, and names the export call that keeps them", () => {
    expect(warningOf('user-exports/folded.onnx')).to.equal(
      'user-exports/folded.onnx: 4 of its 4 convolutions feed no normalisation layer. If the network was trained with BatchNorm, the export probably folded it into the convolutions ' +
        "(torch.onnx.export's default in eval mode), and fine-tuned without normalisation it tends to collapse; export it with " +
        'torch.onnx.export(model.eval(), x, f, training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False) (docs/graph-trainer.md, "Exporting from PyTorch for fine-tuning")',
    );
  });

  it('is silent for networks that keep their normalisation: the same network exported with PRESERVE, a ResNet, MobileNetV3 and EfficientNet blocks (squeeze-excite convolutions without BatchNorm), a ViT, a ConvNeXt', () => {
    for (const name of ['user-exports/aliased.onnx', 'graph-gradients/resnet.onnx', 'graph-gradients/mobile.onnx', 'hub/vit/onnx/model.onnx', 'hub/convnext/onnx/model.onnx']) expect(warningOf(name), name).to.equal(undefined);
  });

  it('a run that fine-tunes the folded export records the warning in report.json', async function () {
    this.timeout(60_000);
    onCpuBackend();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dml-folded-'));
    try {
      const out = path.join(dir, 'run');
      const model = { kind: 'onnx', path: fixture('user-exports/folded.onnx'), preprocessorConfig: false };
      const data = { dataset: 'folder:data/default', trainClasses: 'bag,coat,dress,pullover,sandal', image: { height: 8, width: 8, channels: 3 } };
      const result = await train(parseTrainConfig(tinyTrainConfig(out, { backend: 'onnx', device: 'cpu', model, data }), 'spec'));
      const folded = result.warnings.filter((w) => w.includes('feed no normalisation layer'));
      expect(folded).to.have.length(1);
      expect((JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as { warnings: string[] }).warnings).to.include(folded[0]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
