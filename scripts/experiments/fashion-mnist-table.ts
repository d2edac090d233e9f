/**
 * @file The trainer's acceptance tables on Fashion-MNIST, class-disjoint (train classes 0-4, held-out
 * classes 5-9 from both IDX files): per method and seed one `train()` run of the config
 * `scripts/configs/fashion-mnist-mlp.json` with the method's loss (and sampler, where the method needs
 * its own), then Recall@1, Recall@2, MAP@R, NMI and NMI+ of the last epoch on the held-out sample,
 * against epoch 0 (the same architecture, untrained, with that seed's initial weights). Prints a
 * Markdown table (mean ± sample standard deviation over seeds, and min-max) and writes it, with every
 * run's numbers and NMI curve, to `<out>/table.md` and `table.json`.
 *
 *   npx tsx scripts/experiments/fashion-mnist-table.ts [--methods trainer|seed-methods-ii|baseline-pairs|pml] [--seeds 3] [--out <dir>] [--data <dir with the IDX files>]
 *                                          [--config scripts/configs/fashion-mnist-mlp.json] [--backend <name>] [--only key,key]
 *                                          [--max-train-items N] [--epochs N] [--max-validation-items N]   (smoke runs only)
 *
 * Method sets (`--methods`): `trainer` (default; the trainer issue's five losses, out dir
 * runs/fashion-mnist) and `seed-methods-ii` (issue 5: the direct-gradient presets dg-best, dg-circle,
 * dg-ms, dg-sct; LoOp triplet, HPHN and MS with the pairing sampler; EPS triplet, margin and MS; the
 * triplet-margin baseline of the `trainer` set for reference; out dir runs/fashion-mnist/seed-methods-ii)
 * and `baseline-pairs` (issue 16: every seed method beside the baseline its paper compares against, on
 * the same sampler, budget and seeds; out dir runs/fashion-mnist/baseline-pairs). With pairs, a second
 * table gives per pair the mean difference (method - baseline) and on how many seeds the method won.
 * `pml` (issue 41: PML's Proxy-Anchor with its proxies at 100x, Normalized Softmax, ArcFace and
 * multi-similarity beside the seed methods EPHN 1st/2nd order, EPSHN, LoOp triplet and EPS triplet; out
 * dir runs/fashion-mnist/pml; run it with `--backend onnx`, the graph trainer).
 * Every method gets the same budget: the base config's model, optimiser, 6,000 training images, 3
 * epochs of 75 batches of 80. LoOp's pairing sampler keeps batch 80 with groupSize 16 (5 classes x 16,
 * N even): groupSize 4 would need 20 distinct classes per batch, and there are 5 training classes.
 *
 * NMI+ (paper 004, docs/methods.md 5.4 and 8.4): NMI with 10x as many k-means clusters as held-out labels
 * (50 here); the runs record the NMI curve at 1x, 2x, 5x, 10x and 30x (`validation.clusterCounts`, the
 * default `dml eval --nmi-k` sweep), kept in table.json.
 *
 * The smoke flags shrink the budget (training sample, epochs, validation sample) and are for checking
 * that every method runs; tables for docs/results.md use the defaults.
 *
 * Needs the Fashion-MNIST IDX files (Debian: `apt-get install -y dataset-fashion-mnist`, installed
 * under /usr/share/datasets/fashion-mnist), or any copy given with --data.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_CLUSTER_COUNTS } from '../../lib/eval/cluster-counts.js';
import { parseTrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import type { EpochRecord } from '../../lib/train/epoch-record.js';
import { train } from '../../lib/train/trainer.js';
import { writeFileAtomic } from '../../lib/util/atomic-write.js';
import { argument, integerArgument, summary } from './table-support.js';

/** One row of a table: its name, the run folder's name, the loss spec and, where needed, its own sampler. */
interface Method {
  name: string;
  key: string;
  loss: Record<string, unknown>;
  sampler?: TrainConfigInput['sampler'];
}

/** LoOp's pairing sampler at the base config's batch size (see the file comment). */
const PAIRING_SAMPLER: TrainConfigInput['sampler'] = { kind: 'pairing', groupSize: 16, batchSize: 80 };

/** The triplet baseline of both sets: all triplets, margin 0.05. */
const TRIPLET_BASELINE: Method = { name: 'Triplet margin (all triplets, margin 0.05)', key: 'triplet-margin', loss: { name: 'triplet-margin' } };

/** A method beside the baseline its paper compares against (keys of the set's methods). */
interface Pair {
  method: string;
  baseline: string;
}

/** LoOp's four losses and their bases, all on the pairing sampler with LoOp's margin 0.1 where the base has one. */
const LOOP_PAIRS: Method[] = [
  { name: 'LoOp triplet (paper 001)', key: 'loop-triplet', loss: { name: 'loop-triplet' }, sampler: PAIRING_SAMPLER },
  { name: 'triplet, all triplets, margin 0.1 (LoOp triplet\'s base)', key: 'triplet-0.1', loss: { name: 'triplet-margin', margin: 0.1 }, sampler: PAIRING_SAMPLER },
  { name: 'LoOp HPHN-triplet (paper 001)', key: 'loop-hphn', loss: { name: 'loop-hphn' }, sampler: PAIRING_SAMPLER },
  { name: 'HPHN triplet (batch-hard), margin 0.1 (its base)', key: 'batch-hard-0.1', loss: { name: 'triplet-margin', margin: 0.1, miner: 'hard' }, sampler: PAIRING_SAMPLER },
  { name: 'LoOp lifted structure (paper 001)', key: 'loop-lifted', loss: { name: 'loop-lifted' }, sampler: PAIRING_SAMPLER },
  { name: 'lifted structure (its base)', key: 'lifted', loss: { name: 'lifted-structure' }, sampler: PAIRING_SAMPLER },
  { name: 'LoOp multi-similarity (paper 001)', key: 'loop-ms', loss: { name: 'loop-ms' }, sampler: PAIRING_SAMPLER },
  { name: 'multi-similarity, pairing sampler (its base)', key: 'ms-pairing', loss: { name: 'multi-similarity' }, sampler: PAIRING_SAMPLER },
];

/** PML's losses: the class-table losses know the 5 training classes. */
const PML_METHODS: Method[] = [
  { name: 'Proxy-Anchor (proxies at 100x the rate)', key: 'proxy-anchor', loss: { name: 'proxy-anchor', numClasses: 5, learningRateScale: 100 } },
  { name: 'Normalized Softmax (T 0.05)', key: 'normalized-softmax', loss: { name: 'normalized-softmax', numClasses: 5 } },
  { name: 'ArcFace (28.6 degrees, scale 64)', key: 'arcface', loss: { name: 'arcface', numClasses: 5 } },
  { name: 'multi-similarity (its miner)', key: 'ms', loss: { name: 'multi-similarity' } },
];

/** The method sets of `--methods`. */
const METHOD_SETS: Record<string, { out: string; methods: Method[]; pairs?: Pair[] }> = {
  trainer: {
    out: 'runs/fashion-mnist',
    methods: [
      { name: 'EPHN, 1st order (paper 000)', key: 'ephn', loss: { name: 'ephn', order: 1 } },
      { name: 'EPHN, 2nd order (paper 000)', key: 'ephn-2nd', loss: { name: 'ephn', order: 2 } },
      { name: 'EPSHN (paper 000)', key: 'epshn', loss: { name: 'epshn' } },
      { name: 'N-pair (NCA, all negatives)', key: 'npair', loss: { name: 'npair' } },
      TRIPLET_BASELINE,
    ],
  },
  'seed-methods-ii': {
    out: 'runs/fashion-mnist/seed-methods-ii',
    methods: [
      { name: 'Direct gradient, best combination (paper 003)', key: 'dg-best', loss: { name: 'dg-best' } },
      { name: 'Direct gradient, circle preset (paper 003)', key: 'dg-circle', loss: { name: 'dg-circle' } },
      { name: 'Direct gradient, MS preset (paper 003)', key: 'dg-ms', loss: { name: 'dg-ms' } },
      { name: 'Direct gradient, SCT preset (paper 003)', key: 'dg-sct', loss: { name: 'dg-sct' } },
      { name: 'LoOp triplet (paper 001, pairing 5 x 16)', key: 'loop-triplet', loss: { name: 'loop-triplet' }, sampler: PAIRING_SAMPLER },
      { name: 'LoOp HPHN-triplet (paper 001, pairing 5 x 16)', key: 'loop-hphn', loss: { name: 'loop-hphn' }, sampler: PAIRING_SAMPLER },
      { name: 'LoOp multi-similarity (paper 001, pairing 5 x 16)', key: 'loop-ms', loss: { name: 'loop-ms' }, sampler: PAIRING_SAMPLER },
      { name: 'EPS + triplet, semi-hard (paper 004)', key: 'eps-triplet', loss: { name: 'eps-triplet' } },
      { name: 'EPS + margin, DWS, beta per class (paper 004)', key: 'eps-margin', loss: { name: 'eps-margin', numClasses: 5 } },
      { name: 'EPS + multi-similarity (paper 004)', key: 'eps-ms', loss: { name: 'eps-ms' } },
      TRIPLET_BASELINE,
    ],
  },
  pml: {
    out: 'runs/fashion-mnist/pml',
    methods: [
      ...PML_METHODS,
      { name: 'EPHN, 1st order (paper 000)', key: 'ephn', loss: { name: 'ephn', order: 1 } },
      { name: 'EPHN, 2nd order (paper 000)', key: 'ephn-2nd', loss: { name: 'ephn', order: 2 } },
      { name: 'EPSHN (paper 000)', key: 'epshn', loss: { name: 'epshn' } },
      { name: 'LoOp triplet (paper 001, pairing 5 x 16)', key: 'loop-triplet', loss: { name: 'loop-triplet' }, sampler: PAIRING_SAMPLER },
      { name: 'EPS + triplet, semi-hard (paper 004)', key: 'eps-triplet', loss: { name: 'eps-triplet' } },
    ],
  },
  'baseline-pairs': {
    out: 'runs/fashion-mnist/baseline-pairs',
    methods: [
      ...LOOP_PAIRS,
      { name: 'EPS + triplet, semi-hard (paper 004)', key: 'eps-triplet', loss: { name: 'eps-triplet' } },
      { name: 'triplet, semi-hard, margin 0.2, squared distance (its base)', key: 'semihard-0.2', loss: { name: 'triplet-margin', margin: 0.2, distance: 'squared-euclidean', miner: 'semihard' } },
      { name: 'EPS + margin, beta per class (paper 004)', key: 'eps-margin', loss: { name: 'eps-margin', numClasses: 5 } },
      { name: 'margin, beta per class learnt (its base)', key: 'margin', loss: { name: 'margin', learnBeta: true, numClasses: 5 } },
      { name: 'EPS + multi-similarity (paper 004)', key: 'eps-ms', loss: { name: 'eps-ms' } },
      { name: 'multi-similarity (base of EPS-MS and DG-MS)', key: 'ms', loss: { name: 'multi-similarity' } },
      { name: 'Direct gradient, best combination (paper 003)', key: 'dg-best', loss: { name: 'dg-best' } },
      { name: 'Direct gradient, baseline combination cos/con/con (paper 003)', key: 'dg-baseline', loss: { name: 'direct-gradient' } },
      { name: 'Direct gradient, cosine triplet preset (paper 003)', key: 'dg-triplet-cosine', loss: { name: 'dg-triplet-cosine' } },
      { name: 'Direct gradient, MS preset (paper 003)', key: 'dg-ms', loss: { name: 'dg-ms' } },
      { name: 'EPHN, 2nd order (paper 000)', key: 'ephn-2nd', loss: { name: 'ephn', order: 2 } },
      { name: 'EPHN, 1st order (paper 000; closed form of the cosine-triplet preset)', key: 'ephn', loss: { name: 'ephn', order: 1 } },
    ],
    pairs: [
      { method: 'loop-triplet', baseline: 'triplet-0.1' },
      { method: 'loop-hphn', baseline: 'batch-hard-0.1' },
      { method: 'loop-lifted', baseline: 'lifted' },
      { method: 'loop-ms', baseline: 'ms-pairing' },
      { method: 'eps-triplet', baseline: 'semihard-0.2' },
      { method: 'eps-margin', baseline: 'margin' },
      { method: 'eps-ms', baseline: 'ms' },
      { method: 'dg-best', baseline: 'dg-baseline' },
      { method: 'dg-triplet-cosine', baseline: 'ephn' },
      { method: 'dg-ms', baseline: 'ms' },
      { method: 'ephn-2nd', baseline: 'ephn' },
    ],
  },
};

const METRICS = ['R@1', 'R@2', 'MAP@R', 'NMI', 'NMI+'] as const;
type Metric = (typeof METRICS)[number];

function metricsOf(record: EpochRecord | undefined): Record<Metric, number> {
  const v = record?.validation;
  if (!v || v.mapAtR === null || v.nmiPlus === null) throw new Error(`epoch ${record?.epoch} has no validation with MAP@R and NMI+`);
  return { 'R@1': 100 * (v.recall['1'] ?? Number.NaN), 'R@2': 100 * (v.recall['2'] ?? Number.NaN), 'MAP@R': 100 * v.mapAtR, NMI: 100 * v.nmi, 'NMI+': 100 * v.nmiPlus };
}

async function main(): Promise<void> {
  const setName = argument('--methods', 'trainer');
  const set = METHOD_SETS[setName];
  if (!set) throw new Error(`Expected one of ${Object.keys(METHOD_SETS).join(', ')} for --methods but received ${JSON.stringify(setName)}`);
  const seeds = integerArgument('--seeds', 3) as number;
  const out = argument('--out', set.out);
  const data = argument('--data', '/usr/share/datasets/fashion-mnist');
  const configPath = argument('--config', 'scripts/configs/fashion-mnist-mlp.json');
  const file = JSON.parse(readFileSync(configPath, 'utf8')) as TrainConfigInput;
  const backend = argument('--backend', file.backend ?? 'auto') as TrainConfigInput['backend'];
  const only = argument('--only', '');
  const methods = only === '' ? set.methods : set.methods.filter((m) => only.split(',').includes(m.key));
  if (methods.length === 0) throw new Error(`--only ${JSON.stringify(only)} names none of ${set.methods.map((m) => m.key).join(', ')}`);
  const maxTrainItems = integerArgument('--max-train-items', file.data.maxTrainItems);
  const maxValidationItems = integerArgument('--max-validation-items', file.validation?.maxItems);
  const base: TrainConfigInput = {
    ...file,
    data: { ...file.data, dataset: `fashion-mnist:${data}`, ...(maxTrainItems !== undefined ? { maxTrainItems } : {}) },
    epochs: integerArgument('--epochs', file.epochs) as number,
    backend,
    validation: { ...file.validation, ...(maxValidationItems !== undefined ? { maxItems: maxValidationItems } : {}), clusterCounts: [...DEFAULT_CLUSTER_COUNTS] },
  };
  const rows: Array<{
    method: string;
    key: string;
    seed: number;
    untrained: Record<Metric, number>;
    trained: Record<Metric, number>;
    nmiCurve: Array<{ clusters: number; nmi: number }>;
    seconds: number;
  }> = [];
  for (const method of methods) {
    for (let seed = 0; seed < seeds; seed++) {
      const config: TrainConfigInput = {
        ...base,
        loss: method.loss as TrainConfigInput['loss'],
        ...(method.sampler ? { sampler: method.sampler } : {}),
        seed,
        out: path.join(out, `${method.key}-seed${seed}`),
      };
      const start = performance.now();
      const result = await train(parseTrainConfig(config, 'table config'), { log: (line) => console.error(`[${method.name}, seed ${seed}] ${line}`) });
      const last = result.history[result.history.length - 1];
      rows.push({
        method: method.name,
        key: method.key,
        seed,
        untrained: metricsOf(result.history[0]),
        trained: metricsOf(last),
        nmiCurve: last?.validation?.nmiCurve ?? [],
        seconds: (performance.now() - start) / 1000,
      });
    }
  }
  const lines = [
    `| model (${seeds} seed${seeds === 1 ? '' : 's'}) | ${METRICS.join(' | ')} |`,
    `|---|${METRICS.map(() => '---').join('|')}|`,
    `| untrained (epoch 0 of every run) | ${METRICS.map((m) => summary(rows.map((r) => r.untrained[m]))).join(' | ')} |`,
    ...methods.map((method) => {
      const mine = rows.filter((r) => r.key === method.key);
      return `| ${method.name} | ${METRICS.map((m) => summary(mine.map((r) => r.trained[m]))).join(' | ')} |`;
    }),
  ];
  if (set.pairs) {
    const ran = new Set(methods.map((m) => m.key));
    const pairs = set.pairs.filter((p) => ran.has(p.method) && ran.has(p.baseline));
    const nameOf = (key: string): string => methods.find((m) => m.key === key)?.name ?? key;
    /** Per metric: the mean over seeds of (method - baseline) and on how many seeds the method was higher. */
    const difference = (pair: Pair, metric: Metric): string => {
      const deltas = Array.from({ length: seeds }, (_, seed) => {
        const of = (key: string): number => (rows.find((r) => r.key === key && r.seed === seed) as (typeof rows)[number]).trained[metric];
        return of(pair.method) - of(pair.baseline);
      });
      const mean = deltas.reduce((a, b) => a + b, 0) / deltas.length;
      return `${mean >= 0 ? '+' : ''}${mean.toFixed(2)} (${deltas.filter((d) => d > 0).length}/${seeds})`;
    };
    lines.push(
      '',
      `| method - its baseline (${seeds} seed${seeds === 1 ? '' : 's'}; mean difference, seeds won) | ${METRICS.join(' | ')} |`,
      `|---|${METRICS.map(() => '---').join('|')}|`,
      ...pairs.map((pair) => `| ${nameOf(pair.method)} - ${nameOf(pair.baseline)} | ${METRICS.map((m) => difference(pair, m)).join(' | ')} |`),
    );
  }
  const table = `${lines.join('\n')}\n`;
  process.stdout.write(table);
  await writeFileAtomic(path.join(out, 'table.md'), table);
  await writeFileAtomic(
    path.join(out, 'table.json'),
    `${JSON.stringify({ methods: setName, config: base, samplers: Object.fromEntries(methods.filter((m) => m.sampler).map((m) => [m.key, m.sampler])), rows }, null, 2)}\n`,
  );
}

await main();
