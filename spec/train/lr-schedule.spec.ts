/**
 * @file The learning-rate schedules against PyTorch's schedulers, step by step: the golden rates in
 * spec/fixtures/train/lr-schedules.json come from scripts/reference/torch_lr_schedules.py (MultiStepLR,
 * LinearLR chained with MultiStepLR, CosineAnnealingLR, SequentialLR of LinearLR and CosineAnnealingLR,
 * OneCycleLR with cosine and linear annealing, its momentum cycled or not), and the schedule's checks and
 * config errors.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { parseTrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import { optimizerSchema } from '../../lib/train/optimizer.js';
import { checkSchedule, cosineAnnealing, oneCycle, oneCycleMomentum, scheduledLearningRate, scheduledMomentum, warmupFactor } from '../../lib/train/lr-schedule.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

interface GoldenCase {
  name: string;
  optimizer: Record<string, unknown>;
  totalSteps: number;
  milestoneUnit: 'steps';
  learningRates: number[];
  /** Adam's β1 or SGD's momentum at each step. */
  momenta: number[];
}

const golden = JSON.parse(readFileSync(new URL('../fixtures/train/lr-schedules.json', import.meta.url), 'utf8')) as { torch: string; cases: GoldenCase[] };

describe('train/lr-schedule', () => {
  for (const c of golden.cases) {
    it(`equals PyTorch ${golden.torch} step by step: ${c.name}`, () => {
      const optimizer = optimizerSchema.parse(c.optimizer);
      checkSchedule(optimizer, c.totalSteps);
      expect(c.learningRates).to.have.length(c.totalSteps);
      c.learningRates.forEach((expected, t) => {
        const got = scheduledLearningRate(optimizer, { step: t, epoch: 0, totalSteps: c.totalSteps, milestoneUnit: c.milestoneUnit });
        // PyTorch computes cosine annealing recursively (each rate from the previous one); the closed
        // form here agrees to rounding.
        expect(Math.abs(got - expected), `step ${t}: ${got} vs ${expected}`).to.be.at.most(1e-12 * Math.abs(expected) + 1e-18);
      });
      // The momentum a schedule sets, else the optimiser's own (Adam's β1 0.9, the configured SGD momentum, none).
      const own = optimizer.kind === 'adam' ? 0.9 : optimizer.kind === 'momentum' ? optimizer.momentum : 0;
      expect(c.momenta).to.have.length(c.totalSteps);
      c.momenta.forEach((expected, t) => {
        const got = scheduledMomentum(optimizer, { step: t, epoch: 0, totalSteps: c.totalSteps, milestoneUnit: c.milestoneUnit }) ?? own;
        expect(Math.abs(got - expected), `momentum at step ${t}: ${got} vs ${expected}`).to.be.at.most(1e-12);
      });
    });
  }

  it("OneCycle's momentum at hand-computed points, and only where there is a momentum to cycle", async () => {
    const options = { pctStart: 0.25, baseMomentum: 0.85, maxMomentum: 0.95, anneal: 'cos' as const };
    // 20 steps: the momentum falls while the rate rises (to step 4), then rises back.
    expect(oneCycleMomentum(0, 20, options)).to.be.closeTo(0.95, 1e-15);
    expect(oneCycleMomentum(2, 20, options)).to.be.closeTo(0.9, 1e-15);
    expect(oneCycleMomentum(4, 20, options)).to.be.closeTo(0.85, 1e-15);
    expect(oneCycleMomentum(19, 20, options)).to.be.closeTo(0.95, 1e-15);
    const at = (o: Record<string, unknown>): number | undefined => scheduledMomentum(optimizerSchema.parse({ learningRate: 0.1, ...o }), { step: 2, epoch: 0, totalSteps: 20, milestoneUnit: 'steps' });
    expect(at({ kind: 'adam', schedule: { kind: 'onecycle', pctStart: 0.25 } })).to.be.closeTo(0.9, 1e-15);
    expect(at({ kind: 'adam', schedule: { kind: 'onecycle', pctStart: 0.25, cycleMomentum: false } })).to.equal(undefined);
    expect(at({ kind: 'sgd', schedule: { kind: 'onecycle', pctStart: 0.25 } })).to.equal(undefined);
    expect(at({ kind: 'adam', schedule: { kind: 'cosine' } })).to.equal(undefined);
    expect(() => optimizerSchema.parse({ kind: 'sgd', learningRate: 0.1, schedule: { kind: 'onecycle', cycleMomentum: true } })).to.throw(/kind sgd has no momentum to cycle; use kind momentum/);
  });

  it('the formulas at hand-computed points', () => {
    expect(warmupFactor(0, 4, 0.25)).to.equal(0.25);
    expect(warmupFactor(2, 4, 0.25)).to.equal(0.625);
    expect(warmupFactor(9, 4, 0.25)).to.equal(1);
    expect(warmupFactor(3, 0, 0.25)).to.equal(1);
    expect(cosineAnnealing(1, 0, 0, 10)).to.equal(1);
    expect(cosineAnnealing(1, 0.2, 5, 10)).to.be.closeTo(0.6, 1e-15);
    expect(cosineAnnealing(1, 0.2, 10, 10)).to.be.closeTo(0.2, 1e-15);
    const options = { pctStart: 0.25, divFactor: 10, finalDivFactor: 100, anneal: 'cos' as const };
    // 20 steps: phase 1 ends at step 4 (0.25 x 20 - 1), phase 2 at step 19.
    expect(oneCycle(1, 0, 20, options)).to.be.closeTo(0.1, 1e-15);
    expect(oneCycle(1, 2, 20, options)).to.be.closeTo(0.55, 1e-15);
    expect(oneCycle(1, 4, 20, options)).to.be.closeTo(1, 1e-15);
    expect(oneCycle(1, 19, 20, options)).to.be.closeTo(0.001, 1e-15);
    expect(oneCycle(1, 19, 20, { ...options, anneal: 'linear' })).to.be.closeTo(0.001, 1e-15);
    expect(oneCycle(1, 2, 20, { ...options, anneal: 'linear' })).to.be.closeTo(0.55, 1e-15);
  });

  it('milestones count epochs in an epochs run (the rate is constant within an epoch), steps in a steps run', () => {
    const optimizer = optimizerSchema.parse({ learningRate: 0.1, milestones: [2], gamma: 0.5 });
    const at = (step: number, epoch: number, unit: 'epochs' | 'steps'): number => scheduledLearningRate(optimizer, { step, epoch, totalSteps: 0, milestoneUnit: unit });
    expect([at(0, 0, 'epochs'), at(7, 1, 'epochs'), at(8, 2, 'epochs'), at(100, 5, 'epochs')]).to.deep.equal([0.1, 0.1, 0.05, 0.05]);
    expect([at(0, 0, 'steps'), at(1, 0, 'steps'), at(2, 0, 'steps')]).to.deep.equal([0.1, 0.1, 0.05]);
  });

  it('refuses a OneCycle whose rising phase ends at step 0 and a warm-up that leaves no cosine, naming the field', async () => {
    const onecycle = optimizerSchema.parse({ learningRate: 0.1, schedule: { kind: 'onecycle', pctStart: 0.1 } });
    expect(() => checkSchedule(onecycle, 11)).not.to.throw();
    await expectDmlError(() => checkSchedule(onecycle, 10), 'E_ARG', /^optimizer\.schedule\.pctStart: .*got 0\.1 x 10 steps$/);
    const cosine = optimizerSchema.parse({ learningRate: 0.1, schedule: { kind: 'cosine' }, warmup: { steps: 10 } });
    await expectDmlError(() => checkSchedule(cosine, 10), 'E_ARG', /^optimizer\.warmup\.steps: must be below the run's 10 steps .*got 10$/);
    // An epochs run knows its steps only here: a warm-up longer than the run is refused under any schedule.
    const milestones = optimizerSchema.parse({ learningRate: 0.1, warmup: { steps: 12 } });
    expect(() => checkSchedule(milestones, 13)).not.to.throw();
    await expectDmlError(() => checkSchedule(milestones, 12), 'E_ARG', "optimizer.warmup.steps: must be below the run's 12 steps (a longer warm-up never reaches the learning rate), got 12");
  });

  const minimal: TrainConfigInput = {
    data: { dataset: 'folder:data/default' },
    model: { kind: 'mlp', inputDim: 784, embeddingDim: 4 },
    loss: { name: 'ephn' },
    sampler: { groupSize: 4, batchSize: 16 },
    optimizer: { learningRate: 0.01 },
    epochs: 2,
    out: 'runs/x',
  };
  const withOptimizer = (optimizer: Record<string, unknown>, extra: Partial<TrainConfigInput> = {}): TrainConfigInput =>
    ({ ...minimal, optimizer: { learningRate: 0.01, ...optimizer }, ...extra }) as TrainConfigInput;

  it('config: fills the schedule defaults (milestones; onecycle pctStart 0.3, divFactor 25, finalDivFactor 1e4, cos, momentum 0.85-0.95; warm-up from 1/3)', () => {
    expect(parseTrainConfig(minimal, 'a.json').optimizer.schedule).to.deep.equal({ kind: 'milestones' });
    expect(parseTrainConfig(withOptimizer({ schedule: { kind: 'onecycle' } }), 'a.json').optimizer.schedule).to.deep.equal({
      kind: 'onecycle',
      pctStart: 0.3,
      divFactor: 25,
      finalDivFactor: 1e4,
      baseMomentum: 0.85,
      maxMomentum: 0.95,
      anneal: 'cos',
    });
    expect(parseTrainConfig(withOptimizer({ schedule: { kind: 'cosine' } }), 'a.json').optimizer.schedule).to.deep.equal({ kind: 'cosine', minLearningRate: 0 });
    expect(parseTrainConfig(withOptimizer({ warmup: { steps: 5 } }), 'a.json').optimizer.warmup).to.deep.equal({ steps: 5, startFactor: 1 / 3 });
  });

  it('config: one clear error per invalid schedule field', async () => {
    const bad = async (optimizer: Record<string, unknown>, message: RegExp, extra: Partial<TrainConfigInput> = {}): Promise<void> => {
      await expectDmlError(() => parseTrainConfig(withOptimizer(optimizer, extra), 'a.json'), 'E_ARG', message);
    };
    await bad({ schedule: { kind: 'step' } }, /^a\.json: optimizer\.schedule\.kind: /);
    await bad({ schedule: { kind: 'onecycle', pctStart: 1 } }, /^a\.json: optimizer\.schedule\.pctStart: /);
    await bad({ schedule: { kind: 'onecycle', pctStart: 0 } }, /^a\.json: optimizer\.schedule\.pctStart: /);
    await bad({ schedule: { kind: 'onecycle', divFactor: 0 } }, /^a\.json: optimizer\.schedule\.divFactor: /);
    await bad({ schedule: { kind: 'onecycle', anneal: 'exp' } }, /^a\.json: optimizer\.schedule\.anneal: /);
    await bad({ schedule: { kind: 'cosine', minLearningRate: -1 } }, /^a\.json: optimizer\.schedule\.minLearningRate: /);
    await bad({ schedule: { kind: 'cosine', pctStart: 0.3 } }, /^a\.json: optimizer\.schedule: .*pctStart/);
    await bad({ warmup: { steps: 0 } }, /^a\.json: optimizer\.warmup\.steps: /);
    await bad({ warmup: { steps: 3, startFactor: 0 } }, /^a\.json: optimizer\.warmup\.startFactor: /);
    await bad({ schedule: { kind: 'cosine' }, milestones: [3] }, /^a\.json: optimizer\.milestones: milestones apply to the milestones schedule only, got \[3\] with schedule cosine$/);
    await bad({ schedule: { kind: 'onecycle' }, warmup: { steps: 3 } }, /^a\.json: optimizer\.warmup: onecycle warms up by itself .*got \{"steps":3,"startFactor":0\.333/);
    await bad({ schedule: { kind: 'cosine' }, warmup: { steps: 50 } }, /^a\.json: optimizer\.warmup\.steps: must be below steps \(50\): a longer warm-up never reaches the learning rate, got 50$/, { epochs: undefined, steps: 50 });
    // Impossible values that used to train: a warm-up longer than the run under any schedule, a cosine that climbs.
    await bad({ warmup: { steps: 80 } }, /^a\.json: optimizer\.warmup\.steps: must be below steps \(50\): a longer warm-up never reaches the learning rate, got 80$/, { epochs: undefined, steps: 50 });
    await bad(
      { learningRate: 0.01, schedule: { kind: 'cosine', minLearningRate: 0.1 } },
      /^a\.json: optimizer\.schedule\.minLearningRate: must be at most optimizer\.learningRate \(0\.01\), which the cosine anneals down from \(a larger one makes the rate climb\), got 0\.1$/,
    );
  });
});
