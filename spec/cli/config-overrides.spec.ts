/**
 * @file `dml train --config c.json key=value ...` (lib/cli/config-overrides.ts): dotted paths, JSON or
 * string values, objects made on the way, `steps` replacing `epochs`; a bad override is one line; a real
 * tiny run's config.json records the overrides, and a misspelt key is named with the override in the message.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { applyOverrides, parseOverride } from '../../lib/cli/config-overrides.js';
import { runCliCaptured } from '../helpers/run-cli.js';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';
import { makeTempDir } from '../image/image-fixtures.js';

describe('dml train key=value overrides', function () {
  this.timeout(60_000);

  it('sets dotted paths to JSON values or strings, makes missing objects, lets steps replace epochs, leaves the input alone', () => {
    const config = { epochs: 3, optimizer: { kind: 'adam', learningRate: 0.1 }, data: { dataset: 'folder:a' } };
    const result = applyOverrides(config, ['optimizer.learningRate=0.001', 'model.hidden=[64, 32]', 'data.dataset=folder:b', 'steps=100', 'validation.everySteps=10', 'data.image={"height": 28}', 'name=true']);
    expect(result).to.deep.equal({
      optimizer: { kind: 'adam', learningRate: 0.001 },
      data: { dataset: 'folder:b', image: { height: 28 } },
      model: { hidden: [64, 32] },
      steps: 100,
      validation: { everySteps: 10 },
      name: true,
    });
    expect(config.epochs).to.equal(3);
    expect(applyOverrides({ steps: 5 }, ['epochs=2'])).to.deep.equal({ epochs: 2 });
    expect(parseOverride('a.b=')).to.deep.equal({ path: ['a', 'b'], value: '' });
    expect(() => parseOverride('learningRate')).to.throw('Expected a config override key=value (e.g. optimizer.learningRate=0.001) but received "learningRate"');
    expect(() => parseOverride('a..b=1')).to.throw('received "a..b=1"');
    expect(() => applyOverrides({ optimizer: 'adam' }, ['optimizer.learningRate=1'])).to.throw('Cannot set optimizer.learningRate: optimizer is "adam", not an object');
  });

  it('a real run records them in config.json; a misspelt key is named, with the overrides, in one line', async () => {
    const tmp = makeTempDir('dml-overrides-');
    try {
      const out = path.join(tmp, 'run');
      const config = path.join(tmp, 'train.json');
      writeFileSync(config, JSON.stringify(tinyTrainConfig(out)));
      let res = await runCliCaptured(['--quiet', 'train', '--config', config, 'steps=2', 'optimizer.learningRate=0.05', 'validation.everySteps=2', 'validation.ks=[1]']);
      expect(res.code, res.stderr).to.equal(0);
      const written = JSON.parse(readFileSync(path.join(out, 'config.json'), 'utf8')) as Record<string, Record<string, unknown>>;
      expect([written['steps'], written['epochs'], written['optimizer']?.['learningRate'], written['validation']?.['ks']]).to.deep.equal([2, undefined, 0.05, [1]]);
      res = await runCliCaptured(['train', '--config', config, 'optimizer.learningrate=0.05', '--out', path.join(tmp, 'other')]);
      expect(res.code).to.equal(2);
      expect(res.stderr).to.equal(`dml: ${config} with optimizer.learningrate=0.05: optimizer: unknown key "learningrate" (did you mean "learningRate"?)\n`);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
