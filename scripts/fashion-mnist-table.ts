/**
 * @file The trainer's acceptance table on Fashion-MNIST, class-disjoint (train classes 0-4, held-out
 * classes 5-9 from both IDX files): per method and seed one `train()` run of the config
 * `scripts/configs/fashion-mnist-mlp.json` with the method's loss, then Recall@1, Recall@2, MAP@R and
 * NMI of the last epoch on the held-out sample, against epoch 0 (the same architecture, untrained,
 * with that seed's initial weights). Prints a Markdown table (mean ± sample standard deviation over
 * seeds, and min-max) and writes it, with every run's numbers, to `<out>/table.md` and `table.json`.
 *
 *   npx tsx scripts/fashion-mnist-table.ts [--seeds 3] [--out runs/fashion-mnist] [--data <dir with the IDX files>]
 *
 * Needs the Fashion-MNIST IDX files (Debian: `apt-get install -y dataset-fashion-mnist`, installed
 * under /usr/share/datasets/fashion-mnist), or any copy given with --data.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseTrainConfig, type TrainConfigInput } from '../lib/train/config.js';
import { train, type EpochRecord } from '../lib/train/trainer.js';
import { writeFileAtomic } from '../lib/util/atomic-write.js';

/** The methods of the table: a row name and the loss spec. */
const METHODS: Array<{ name: string; loss: Record<string, unknown> }> = [
  { name: 'EPHN, 1st order (paper 000)', loss: { name: 'ephn', order: 1 } },
  { name: 'EPHN, 2nd order (paper 000)', loss: { name: 'ephn', order: 2 } },
  { name: 'EPSHN (paper 000)', loss: { name: 'epshn' } },
  { name: 'N-pair (NCA, all negatives)', loss: { name: 'npair' } },
  { name: 'Triplet margin (all triplets, margin 0.05)', loss: { name: 'triplet-margin' } },
];

const METRICS = ['R@1', 'R@2', 'MAP@R', 'NMI'] as const;
type Metric = (typeof METRICS)[number];

function argument(flag: string, fallback: string): string {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

function metricsOf(record: EpochRecord | undefined): Record<Metric, number> {
  const v = record?.validation;
  if (!v || v.mapAtR === null) throw new Error(`epoch ${record?.epoch} has no validation`);
  return { 'R@1': 100 * (v.recall['1'] ?? Number.NaN), 'R@2': 100 * (v.recall['2'] ?? Number.NaN), 'MAP@R': 100 * v.mapAtR, NMI: 100 * v.nmi };
}

function summary(values: number[]): string {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const sd = values.length > 1 ? Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / (values.length - 1)) : 0;
  return `${mean.toFixed(2)} ± ${sd.toFixed(2)} (${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)})`;
}

async function main(): Promise<void> {
  const seeds = Number(argument('--seeds', '3'));
  const out = argument('--out', 'runs/fashion-mnist');
  const data = argument('--data', '/usr/share/datasets/fashion-mnist');
  const base = JSON.parse(readFileSync('scripts/configs/fashion-mnist-mlp.json', 'utf8')) as TrainConfigInput;
  const rows: Array<{ method: string; seed: number; untrained: Record<Metric, number>; trained: Record<Metric, number>; seconds: number }> = [];
  for (const method of METHODS) {
    for (let seed = 0; seed < seeds; seed++) {
      const config: TrainConfigInput = {
        ...base,
        data: { ...base.data, dataset: `fashion-mnist:${data}` },
        loss: method.loss as TrainConfigInput['loss'],
        seed,
        out: path.join(out, `${String(method.loss['name'])}${method.loss['order'] === 2 ? '-2nd' : ''}-seed${seed}`),
      };
      const start = performance.now();
      const result = await train(parseTrainConfig(config, 'table config'), { log: (line) => console.error(`[${method.name}, seed ${seed}] ${line}`) });
      rows.push({
        method: method.name,
        seed,
        untrained: metricsOf(result.history[0]),
        trained: metricsOf(result.history[result.history.length - 1]),
        seconds: (performance.now() - start) / 1000,
      });
    }
  }
  const lines = [
    `| model (${seeds} seeds) | ${METRICS.join(' | ')} |`,
    `|---|${METRICS.map(() => '---').join('|')}|`,
    `| untrained (epoch 0 of every run) | ${METRICS.map((m) => summary(rows.map((r) => r.untrained[m]))).join(' | ')} |`,
    ...METHODS.map((method) => {
      const mine = rows.filter((r) => r.method === method.name);
      return `| ${method.name} | ${METRICS.map((m) => summary(mine.map((r) => r.trained[m]))).join(' | ')} |`;
    }),
  ];
  const table = `${lines.join('\n')}\n`;
  process.stdout.write(table);
  await writeFileAtomic(path.join(out, 'table.md'), table);
  await writeFileAtomic(path.join(out, 'table.json'), `${JSON.stringify({ config: base, rows }, null, 2)}\n`);
}

await main();
