/**
 * @file The training config's JSON Schema (schema/train-config.schema.json, shipped as
 * `dmlkit/train-config.schema.json`): the committed file is what lib/train/config-json-schema.ts makes
 * (so it cannot drift from the zod schema), every example config in scripts/configs validates against
 * it, and it refuses what dml train refuses (a misspelt key, a loss option of the wrong type, an
 * unknown loss); parseTrainConfig names every problem of a file at once, the loss's options included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { expect } from 'chai';
import { trainConfigJsonSchema } from '../../lib/train/config-json-schema.js';
import { parseTrainConfig } from '../../lib/train/config.js';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020') as typeof import('ajv/dist/2020.js').default;

const SHIPPED = JSON.parse(readFileSync('schema/train-config.schema.json', 'utf8')) as Record<string, unknown>;
const validate = new Ajv2020({ allErrors: true, strict: false }).compile(SHIPPED);
const errors = (config: unknown): string[] => (validate(config) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`));

describe('the training config JSON Schema', () => {
  it('is the file the generator writes (npx tsx scripts/tools/write-train-config-schema.ts)', () => {
    expect(SHIPPED).to.deep.equal(JSON.parse(JSON.stringify(trainConfigJsonSchema())));
    expect(require('../../package.json').exports['./train-config.schema.json']).to.equal('./schema/train-config.schema.json');
  });

  it('validates every config in scripts/configs', () => {
    const files = readdirSync('scripts/configs').filter((f) => f.endsWith('.json'));
    expect(files.length).to.be.at.least(10);
    for (const file of files) expect(errors(JSON.parse(readFileSync(path.join('scripts/configs', file), 'utf8'))), file).to.deep.equal([]);
  });

  it('refuses a misspelt key, a loss option of the wrong type and an unknown loss, as dml train does', () => {
    const base = JSON.parse(readFileSync('scripts/configs/fashion-mnist-mlp.json', 'utf8')) as Record<string, unknown>;
    expect(errors({ ...base, optimiser: { kind: 'adam' } })).to.not.deep.equal([]);
    expect(errors({ ...base, loss: { name: 'triplet-margin', margin: 'wide' } })).to.not.deep.equal([]);
    expect(errors({ ...base, loss: { name: 'tripplet' } })).to.not.deep.equal([]);
    expect(errors({ ...base, loss: { name: 'ephn', temperature: 0.05 } })).to.deep.equal([]);
    // An editor's $schema is allowed, by the schema and by dml train.
    const withSchema = { $schema: './node_modules/dmlkit/schema/train-config.schema.json', ...base };
    expect(errors(withSchema)).to.deep.equal([]);
    expect(parseTrainConfig(withSchema, 'train.json').$schema).to.equal(withSchema.$schema);
  });

  it('parseTrainConfig names every problem of a file at once, the loss options included', () => {
    const base = JSON.parse(readFileSync('scripts/configs/fashion-mnist-mlp.json', 'utf8')) as Record<string, unknown>;
    expect(() => parseTrainConfig({ ...base, seed: -1, loss: { name: 'ephn', temperature: 0, bogus: 1 } }, 'train.json')).to.throw(
      'train.json: 3 problems: seed: Too small: expected number to be >=0; loss.temperature: Too small: expected number to be >0; loss: Unrecognized key: "bogus"',
    );
  });
});
