/**
 * @file The `convnet` variants table (issue: a convnet that does not collapse): every combination of
 * `downsample` (stride, maxpool) and `pooling` (avg, avgmax) trained with EPHN of order 1 and 2 from
 * one base config, per seed; prints a Markdown table of the held-out Recall@1, MAP@R and NMI after
 * the run (and before it, the untrained network), the mean loss of the run's last period, and seconds,
 * and writes it with every run's numbers to `<out>/table.md` and `table.json`.
 *
 *   npx tsx scripts/experiments/convnet-variants-table.ts [--config scripts/configs/fashion-mnist-convnet-variants.json]
 *        [--out runs/convnet-variants/fashion-mnist] [--seeds 1] [--steps N] [--only stride-avg,maxpool-avgmax] [--orders 1,2]
 *        [--dataset folder:/path/to/icons]   (replaces the config's data.dataset)
 *        [--backend onnx]   (replaces the config's backend: the graph trainer, docs/graph-trainer.md)
 *
 * EPHN of order 1 at temperature 0.1 is Recipe R's loss: softplus((s_an - s_ap) / 0.1) per anchor; a
 * collapsed network (every embedding pointing the same way) sits at ln 2 = 0.693.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseTrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import { train } from '../../lib/train/trainer.js';
import { writeFileAtomic } from '../../lib/util/atomic-write.js';
import { argument, integerArgument, lastValidation, summary } from './table-support.js';

const VARIANTS = [
  { key: 'stride-avg', downsample: 'stride', pooling: 'avg' },
  { key: 'maxpool-avg', downsample: 'maxpool', pooling: 'avg' },
  { key: 'stride-avgmax', downsample: 'stride', pooling: 'avgmax' },
  { key: 'maxpool-avgmax', downsample: 'maxpool', pooling: 'avgmax' },
] as const;

interface RunResult {
  variant: string;
  order: number;
  seed: number;
  before: { r1: number; mapAtR: number; nmi: number };
  after: { r1: number; mapAtR: number; nmi: number };
  lastLoss: number | null;
  seconds: number;
}

async function main(): Promise<void> {
  const configFile = argument('--config', 'scripts/configs/fashion-mnist-convnet-variants.json');
  const base = JSON.parse(readFileSync(configFile, 'utf8')) as TrainConfigInput & Record<string, unknown>;
  const out = argument('--out', base.out);
  const seeds = integerArgument('--seeds', 1) as number;
  const steps = integerArgument('--steps');
  const only = argument('--only', '').split(',').filter((k) => k !== '');
  const orders = argument('--orders', '1,2').split(',').map(Number);
  const dataset = argument('--dataset', '');
  if (dataset !== '') base.data = { ...base.data, dataset };
  const backend = argument('--backend', '');
  if (backend !== '') base.backend = backend as TrainConfigInput['backend'];
  const results: RunResult[] = [];
  for (const variant of VARIANTS.filter((v) => only.length === 0 || only.includes(v.key))) {
    for (const order of orders) {
      for (let seed = 0; seed < seeds; seed++) {
        const runOut = path.join(out, `${variant.key}-order${order}-seed${seed}`);
        const config = parseTrainConfig(
          {
            ...base,
            model: { ...base.model, downsample: variant.downsample, pooling: variant.pooling } as TrainConfigInput['model'],
            loss: { ...base.loss, order },
            seed,
            ...(steps !== undefined ? { steps, validation: { ...(base.validation ?? {}), everySteps: steps } } : {}),
            out: runOut,
          },
          configFile,
        );
        const start = performance.now();
        const result = await train(config, { log: (line) => process.stderr.write(`[${variant.key} order ${order} seed ${seed}] ${line}\n`) });
        const first = result.history[0]?.validation;
        const last = lastValidation(result.history);
        const pick = (v: NonNullable<typeof first>): RunResult['after'] => ({ r1: 100 * (v.recall['1'] ?? Number.NaN), mapAtR: 100 * (v.mapAtR ?? Number.NaN), nmi: 100 * v.nmi });
        results.push({
          variant: variant.key,
          order,
          seed,
          before: pick(first as NonNullable<typeof first>),
          after: pick(last),
          lastLoss: result.history[result.history.length - 1]?.loss ?? null,
          seconds: (performance.now() - start) / 1000,
        });
      }
    }
  }
  const rows = [
    '| variant (downsample-pooling) | EPHN order | R@1 before | R@1 after | MAP@R after | NMI after | last loss | seconds |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const variant of VARIANTS) {
    for (const order of orders) {
      const runs = results.filter((r) => r.variant === variant.key && r.order === order);
      if (runs.length === 0) continue;
      const losses = runs.map((r) => r.lastLoss ?? Number.NaN);
      rows.push(
        `| ${variant.key} | ${order} | ${summary(runs.map((r) => r.before.r1))} | ${summary(runs.map((r) => r.after.r1))} | ${summary(runs.map((r) => r.after.mapAtR))} | ${summary(runs.map((r) => r.after.nmi))} | ${summary(losses.map((l) => l))} | ${summary(runs.map((r) => r.seconds))} |`,
      );
    }
  }
  const table = `${rows.join('\n')}\n`;
  process.stdout.write(table);
  await writeFileAtomic(path.join(out, 'table.md'), table);
  await writeFileAtomic(path.join(out, 'table.json'), `${JSON.stringify({ config: configFile, seeds, steps: steps ?? null, results }, null, 2)}\n`);
}

await main();
