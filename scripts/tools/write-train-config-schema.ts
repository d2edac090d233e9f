/**
 * Writes schema/train-config.schema.json, the JSON Schema of a training config, from the zod schema
 * (lib/train/config-json-schema.ts). Run after changing a config field:
 *
 *   npx tsx scripts/tools/write-train-config-schema.ts
 *
 * spec/train/config-schema.spec.ts fails while the committed file differs from what this writes.
 */
import { trainConfigJsonSchema } from '../../lib/train/config-json-schema.js';
import { writeFileAtomic } from '../../lib/util/atomic-write.js';

await writeFileAtomic('schema/train-config.schema.json', `${JSON.stringify(trainConfigJsonSchema(), null, 2)}\n`);
console.log('wrote schema/train-config.schema.json');
