/**
 * @file The JSON Schema (2020-12) of a training config file, made from the zod schema that validates it
 * (config.ts) with the loss field spelled out as every registered loss's options (registry.ts): what
 * an editor needs to complete and check `train.json`. Shipped as `dmlkit/train-config.schema.json`
 * (schema/train-config.schema.json, written by scripts/tools/write-train-config-schema.ts; a spec
 * keeps the file equal to this and validates every config in scripts/configs against it). Checks the
 * schema cannot state (exactly one of `epochs` and `steps`, backend-dependent fields) remain
 * {@link parseTrainConfig}'s.
 */
import { z } from 'zod';
import { trainConfigSchema } from './config.js';
import { lossSpecSchema } from './losses/registry.js';

/** The `$id` of the training config's JSON Schema. */
export const TRAIN_CONFIG_SCHEMA_ID = 'urn:dmlkit:train-config:1';

/** The JSON Schema of a training config file (see the file comment). */
export function trainConfigJsonSchema(): Record<string, unknown> {
  // The config's fields with the loss as its registered specs (the config keeps it loose, for createLoss's own messages).
  const fileSchema = z.object({ ...trainConfigSchema.shape, loss: lossSpecSchema }).strict();
  const { $schema, ...rest } = z.toJSONSchema(fileSchema, { io: 'input', target: 'draft-2020-12', unrepresentable: 'throw' });
  return {
    $schema,
    $id: TRAIN_CONFIG_SCHEMA_ID,
    title: 'dmlkit training config (dml train --config)',
    description: 'What `dml train --config` reads (docs/configuration.md). Generated from the zod schema that validates it; exactly one of epochs and steps, and the fields that depend on the backend, are checked by dml train itself.',
    ...rest,
  };
}
