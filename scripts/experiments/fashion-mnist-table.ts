/**
 * @file The trainer's acceptance tables, class-disjoint: per method and seed one `train()` run of a
 * base config with the method's loss (and sampler, where the method needs its own), then Recall@1,
 * Recall@2, MAP@R, NMI and NMI+ of the last validation on the held-out sample, against the first
 * (step or epoch 0: the same architecture, untrained, with that seed's initial weights). Prints a
 * Markdown table (mean ± sample standard deviation over seeds, and min-max) and writes it, with every
 * run's numbers and NMI curve, to `<out>/table.md` and `table.json`, rewritten after every run. Runs go
 * seed by seed (every method at seed 0, then seed 1, ...), so an interrupted table holds every method
 * at the seeds it finished.
 *
 *   npx tsx scripts/experiments/fashion-mnist-table.ts [--methods trainer|seed-methods-ii|baseline-pairs|pml] [--seeds 3] [--out <dir>]
 *                                          [--config scripts/configs/fashion-mnist-mlp.json] [--data <dir with the IDX files> | --dataset <spec>]
 *                                          [--backend <name>] [--only key,key]
 *                                          [--max-train-items N] [--epochs N] [--steps N] [--max-validation-items N]   (smoke runs only)
 *
 * The base config is `scripts/configs/fashion-mnist-mlp.json` (Fashion-MNIST, train classes 0-4,
 * held-out classes 5-9 from both IDX files); any other config works the same (`--config`, e.g.
 * `scripts/configs/icon-pml-table.json`, the icon set of `scripts/tools/icon-dataset.ts`, 400 training
 * classes, `steps: 300`), and its tables then go to the config's `out` folder. The class-table losses'
 * `numClasses` is the config's number of training classes, and LoOp's pairing sampler keeps the base
 * config's group size and batch size. `--dataset` replaces the config's dataset; `--data` is short for
 * `--dataset fashion-mnist:<dir>`. The config's `validation.clusterCounts` is kept where it sets one
 * (the icon config: 1x only, since 10x the 1,846 held-out classes is more clusters than images; NMI+ is
 * then left out of the table), else the runs record the default sweep.
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
 * With the Fashion-MNIST config every method gets the same budget: the base config's model, optimiser,
 * 6,000 training images, 3 epochs of 75 batches of 80. LoOp's pairing sampler keeps batch 80 with
 * groupSize 16 (5 classes x 16, N even): groupSize 4 would need 20 distinct classes per batch, and there
 * are 5 training classes.
 *
 * NMI+ (paper 004, docs/methods.md 5.4 and 8.4): NMI with 10x as many k-means clusters as held-out labels
 * (50 on Fashion-MNIST); the runs record the NMI curve at 1x, 2x, 5x, 10x and 30x (`validation.clusterCounts`,
 * the default `dml eval --nmi-k` sweep), kept in table.json.
 *
 * The smoke flags shrink the budget (training sample, epochs or steps, validation sample) and are for
 * checking that every method runs; tables for docs/results.md use the defaults.
 *
 * The Fashion-MNIST config needs the IDX files (Debian: `apt-get install -y dataset-fashion-mnist`,
 * installed under /usr/share/datasets/fashion-mnist), or any copy given with --data.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_CLUSTER_COUNTS } from '../../lib/eval/cluster-counts.js';
import { parseTrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import type { EpochRecord } from '../../lib/train/epoch-record.js';
import { selectRunItems } from '../../lib/train/run-inputs.js';
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

/**
 * What the method lists depend on: the number of training classes (the class-table losses' `numClasses`)
 * and LoOp's pairing sampler, which keeps the base config's group size and batch size (see the file comment).
 */
interface Setup {
  numClasses: number;
  pairing: NonNullable<TrainConfigInput['sampler']>;
  /** The pairing sampler in the method names, e.g. `pairing 5 x 16` (classes per batch x group size). */
  pairingName: string;
}

/** The triplet baseline of both sets: all triplets, margin 0.05. */
const TRIPLET_BASELINE: Method = { name: 'Triplet margin (all triplets, margin 0.05)', key: 'triplet-margin', loss: { name: 'triplet-margin' } };

/** A method beside the baseline its paper compares against (keys of the set's methods). */
interface Pair {
  method: string;
  baseline: string;
}

/** LoOp's four losses and their bases, all on the pairing sampler with LoOp's margin 0.1 where the base has one. */
function loopPairs({ pairing }: Setup): Method[] {
  return [
    { name: 'LoOp triplet (paper 001)', key: 'loop-triplet', loss: { name: 'loop-triplet' }, sampler: pairing },
    { name: 'triplet, all triplets, margin 0.1 (LoOp triplet\'s base)', key: 'triplet-0.1', loss: { name: 'triplet-margin', margin: 0.1 }, sampler: pairing },
    { name: 'LoOp HPHN-triplet (paper 001)', key: 'loop-hphn', loss: { name: 'loop-hphn' }, sampler: pairing },
    { name: 'HPHN triplet (batch-hard), margin 0.1 (its base)', key: 'batch-hard-0.1', loss: { name: 'triplet-margin', margin: 0.1, miner: 'hard' }, sampler: pairing },
    { name: 'LoOp lifted structure (paper 001)', key: 'loop-lifted', loss: { name: 'loop-lifted' }, sampler: pairing },
    { name: 'lifted structure (its base)', key: 'lifted', loss: { name: 'lifted-structure' }, sampler: pairing },
    { name: 'LoOp multi-similarity (paper 001)', key: 'loop-ms', loss: { name: 'loop-ms' }, sampler: pairing },
    { name: 'multi-similarity, pairing sampler (its base)', key: 'ms-pairing', loss: { name: 'multi-similarity' }, sampler: pairing },
  ];
}

/** PML's losses: the class-table losses know the training classes. */
function pmlMethods({ numClasses }: Setup): Method[] {
  return [
    { name: 'Proxy-Anchor (proxies at 100x the rate)', key: 'proxy-anchor', loss: { name: 'proxy-anchor', numClasses, learningRateScale: 100 } },
    { name: 'Normalized Softmax (T 0.05)', key: 'normalized-softmax', loss: { name: 'normalized-softmax', numClasses } },
    { name: 'ArcFace (28.6 degrees, scale 64)', key: 'arcface', loss: { name: 'arcface', numClasses } },
    { name: 'multi-similarity (its miner)', key: 'ms', loss: { name: 'multi-similarity' } },
  ];
}

/** The method sets of `--methods` (`out`: the default output folder with the Fashion-MNIST config). */
function methodSets(setup: Setup): Record<string, { out: string; methods: Method[]; pairs?: Pair[] }> {
  const { numClasses, pairingName } = setup;
  return {
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
        { name: `LoOp triplet (paper 001, ${pairingName})`, key: 'loop-triplet', loss: { name: 'loop-triplet' }, sampler: setup.pairing },
        { name: `LoOp HPHN-triplet (paper 001, ${pairingName})`, key: 'loop-hphn', loss: { name: 'loop-hphn' }, sampler: setup.pairing },
        { name: `LoOp multi-similarity (paper 001, ${pairingName})`, key: 'loop-ms', loss: { name: 'loop-ms' }, sampler: setup.pairing },
        { name: 'EPS + triplet, semi-hard (paper 004)', key: 'eps-triplet', loss: { name: 'eps-triplet' } },
        { name: 'EPS + margin, DWS, beta per class (paper 004)', key: 'eps-margin', loss: { name: 'eps-margin', numClasses } },
        { name: 'EPS + multi-similarity (paper 004)', key: 'eps-ms', loss: { name: 'eps-ms' } },
        TRIPLET_BASELINE,
      ],
    },
    pml: {
      out: 'runs/fashion-mnist/pml',
      methods: [
        ...pmlMethods(setup),
        { name: 'EPHN, 1st order (paper 000)', key: 'ephn', loss: { name: 'ephn', order: 1 } },
        { name: 'EPHN, 2nd order (paper 000)', key: 'ephn-2nd', loss: { name: 'ephn', order: 2 } },
        { name: 'EPSHN (paper 000)', key: 'epshn', loss: { name: 'epshn' } },
        { name: `LoOp triplet (paper 001, ${pairingName})`, key: 'loop-triplet', loss: { name: 'loop-triplet' }, sampler: setup.pairing },
        { name: 'EPS + triplet, semi-hard (paper 004)', key: 'eps-triplet', loss: { name: 'eps-triplet' } },
      ],
    },
    'baseline-pairs': {
      out: 'runs/fashion-mnist/baseline-pairs',
      methods: [
        ...loopPairs(setup),
        { name: 'EPS + triplet, semi-hard (paper 004)', key: 'eps-triplet', loss: { name: 'eps-triplet' } },
        { name: 'triplet, semi-hard, margin 0.2, squared distance (its base)', key: 'semihard-0.2', loss: { name: 'triplet-margin', margin: 0.2, distance: 'squared-euclidean', miner: 'semihard' } },
        { name: 'EPS + margin, beta per class (paper 004)', key: 'eps-margin', loss: { name: 'eps-margin', numClasses } },
        { name: 'margin, beta per class learnt (its base)', key: 'margin', loss: { name: 'margin', learnBeta: true, numClasses } },
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
}

/** The Fashion-MNIST base config; with another `--config` the tables go to that config's `out` folder. */
const DEFAULT_CONFIG = 'scripts/configs/fashion-mnist-mlp.json';

const METRICS = ['R@1', 'R@2', 'MAP@R', 'NMI', 'NMI+'] as const;
type Metric = (typeof METRICS)[number];

/** An epoch's metrics in %; NMI+ is NaN where the run's cluster counts have no 10x point. */
function metricsOf(record: EpochRecord | undefined): Record<Metric, number> {
  const v = record?.validation;
  if (!v || v.mapAtR === null) throw new Error(`epoch ${record?.epoch} has no validation with MAP@R`);
  return {
    'R@1': 100 * (v.recall['1'] ?? Number.NaN),
    'R@2': 100 * (v.recall['2'] ?? Number.NaN),
    'MAP@R': 100 * v.mapAtR,
    NMI: 100 * v.nmi,
    'NMI+': v.nmiPlus === null ? Number.NaN : 100 * v.nmiPlus,
  };
}

/** One training run of the table. */
interface Row {
  method: string;
  key: string;
  seed: number;
  untrained: Record<Metric, number>;
  trained: Record<Metric, number>;
  nmiCurve: Array<{ clusters: number; nmi: number }>;
  seconds: number;
}

/** The training classes of a config (after its class split): the class-table losses' `numClasses`. */
async function trainingClassCount(config: TrainConfigInput): Promise<number> {
  const { allTrainItems } = await selectRunItems(parseTrainConfig(config, 'table config'), (message) => console.error(message));
  return new Set(allTrainItems.map((item) => item.label)).size;
}

async function main(): Promise<void> {
  const setName = argument('--methods', 'trainer');
  const seeds = integerArgument('--seeds', 3) as number;
  const configPath = argument('--config', DEFAULT_CONFIG);
  const file = JSON.parse(readFileSync(configPath, 'utf8')) as TrainConfigInput;
  const fashionData = argument('--data', '');
  const dataset = argument('--dataset', fashionData !== '' ? `fashion-mnist:${fashionData}` : file.data.dataset);
  const backend = argument('--backend', file.backend ?? 'auto') as TrainConfigInput['backend'];
  const maxTrainItems = integerArgument('--max-train-items', file.data.maxTrainItems);
  const maxValidationItems = integerArgument('--max-validation-items', file.validation?.maxItems);
  const epochs = integerArgument('--epochs', file.epochs);
  const steps = integerArgument('--steps');
  const base: TrainConfigInput = {
    ...file,
    data: { ...file.data, dataset, ...(maxTrainItems !== undefined ? { maxTrainItems } : {}) },
    ...(epochs !== undefined ? { epochs } : {}),
    ...(steps !== undefined ? { steps } : {}),
    backend,
  };
  base.validation = {
    ...base.validation,
    // A shorter --steps run validates at its end (and at step 0), as the config's full run does.
    ...(steps !== undefined && file.validation?.everySteps !== undefined ? { everySteps: Math.min(steps, file.validation.everySteps) } : {}),
    ...(maxValidationItems !== undefined ? { maxItems: maxValidationItems } : {}),
    clusterCounts: file.validation?.clusterCounts ?? [...DEFAULT_CLUSTER_COUNTS],
  };
  const sampler = file.sampler ?? { kind: 'filled', groupSize: 16, batchSize: 80 };
  const groupSize = sampler.groupSize ?? 16;
  const batchSize = sampler.batchSize ?? 80;
  const sets = methodSets({
    numClasses: await trainingClassCount(base),
    pairing: { kind: 'pairing', groupSize, batchSize },
    pairingName: `pairing ${batchSize / groupSize} x ${groupSize}`,
  });
  const set = sets[setName];
  if (!set) throw new Error(`Expected one of ${Object.keys(sets).join(', ')} for --methods but received ${JSON.stringify(setName)}`);
  const out = argument('--out', configPath === DEFAULT_CONFIG ? set.out : file.out);
  const only = argument('--only', '');
  const methods = only === '' ? set.methods : set.methods.filter((m) => only.split(',').includes(m.key));
  if (methods.length === 0) throw new Error(`--only ${JSON.stringify(only)} names none of ${set.methods.map((m) => m.key).join(', ')}`);
  const rows: Row[] = [];
  // Seed-major, the table rewritten after every run: an interrupted table holds every method at the
  // seeds it finished.
  for (let seed = 0; seed < seeds; seed++) {
    for (const method of methods) {
      const config: TrainConfigInput = {
        ...base,
        loss: method.loss as TrainConfigInput['loss'],
        ...(method.sampler ? { sampler: method.sampler } : {}),
        seed,
        out: path.join(out, `${method.key}-seed${seed}`),
      };
      const start = performance.now();
      const result = await train(parseTrainConfig(config, 'table config'), { log: (line) => console.error(`[${method.name}, seed ${seed}] ${line}`) });
      rows.push({
        method: method.name,
        key: method.key,
        seed,
        untrained: metricsOf(result.history[0]),
        trained: metricsOf(result.history[result.history.length - 1]),
        nmiCurve: result.history[result.history.length - 1]?.validation?.nmiCurve ?? [],
        seconds: (performance.now() - start) / 1000,
      });
      await writeTable(out, { setName, methods, pairs: set.pairs, base, rows });
    }
  }
  process.stdout.write(await writeTable(out, { setName, methods, pairs: set.pairs, base, rows }));
}

/**
 * Writes `<out>/table.md` (the Markdown table of the runs so far: seeds counted per method) and
 * `<out>/table.json` (every run's numbers and NMI curve); returns the Markdown.
 */
async function writeTable(out: string, table: { setName: string; methods: Method[]; pairs: Pair[] | undefined; base: TrainConfigInput; rows: Row[] }): Promise<string> {
  const { setName, methods: allMethods, base, rows } = table;
  const methods = allMethods.filter((m) => rows.some((r) => r.key === m.key));
  const seeds = Math.max(...methods.map((m) => rows.filter((r) => r.key === m.key).length));
  const metrics = METRICS.filter((m) => rows.every((r) => !Number.isNaN(r.trained[m])));
  const lines = [
    `| model (${seeds} seed${seeds === 1 ? '' : 's'}) | ${metrics.join(' | ')} |`,
    `|---|${metrics.map(() => '---').join('|')}|`,
    `| untrained (epoch 0 of every run) | ${metrics.map((m) => summary(rows.map((r) => r.untrained[m]))).join(' | ')} |`,
    ...methods.map((method) => {
      const mine = rows.filter((r) => r.key === method.key);
      return `| ${method.name} | ${metrics.map((m) => summary(mine.map((r) => r.trained[m]))).join(' | ')} |`;
    }),
  ];
  if (table.pairs) {
    const ran = new Set(methods.map((m) => m.key));
    const pairs = table.pairs.filter((p) => ran.has(p.method) && ran.has(p.baseline));
    const nameOf = (key: string): string => methods.find((m) => m.key === key)?.name ?? key;
    /** Per metric: the mean over the seeds both ran of (method - baseline) and on how many the method was higher. */
    const difference = (pair: Pair, metric: Metric): string => {
      const deltas = rows
        .filter((r) => r.key === pair.method)
        .flatMap((r) => rows.filter((b) => b.key === pair.baseline && b.seed === r.seed).map((b) => r.trained[metric] - b.trained[metric]));
      const mean = deltas.reduce((a, b) => a + b, 0) / deltas.length;
      return `${mean >= 0 ? '+' : ''}${mean.toFixed(2)} (${deltas.filter((d) => d > 0).length}/${deltas.length})`;
    };
    lines.push(
      '',
      `| method - its baseline (${seeds} seed${seeds === 1 ? '' : 's'}; mean difference, seeds won) | ${metrics.join(' | ')} |`,
      `|---|${metrics.map(() => '---').join('|')}|`,
      ...pairs.map((pair) => `| ${nameOf(pair.method)} - ${nameOf(pair.baseline)} | ${metrics.map((m) => difference(pair, m)).join(' | ')} |`),
    );
  }
  const markdown = `${lines.join('\n')}\n`;
  await writeFileAtomic(path.join(out, 'table.md'), markdown);
  await writeFileAtomic(
    path.join(out, 'table.json'),
    `${JSON.stringify({ methods: setName, config: base, samplers: Object.fromEntries(methods.filter((m) => m.sampler).map((m) => [m.key, m.sampler])), rows }, null, 2)}\n`,
  );
  return markdown;
}

await main();
