/**
 * @file dmlkit's losses written as ONNX nodes, for the graph trainer's fused step (one graph run per
 * step: forward, loss, backward and update; lib/engine/graph-trainer/step-graph.ts). A loss without
 * such a form keeps the two-run step, its gradient computed by its TensorFlow.js code in between.
 *
 * A loss's registry entry names its form (`graph` of lib/train/losses/loss-entry.ts; `graphLossOf` in
 * lib/train/losses/registry.ts). Written so far: the mined easy-positive family with one positive and one negative per anchor,
 * `ephn`, `hphn` and `epen` (lib/train/losses/easy-positive.ts), with every option: order 1 or 2,
 * temperature, `reduction`, `validity` and `duplicateThreshold`. Each is the same computation as its
 * TensorFlow.js code: S = E Eᵀ on the (already normalised) embeddings; per anchor the positive
 * (largest or smallest S among the other images of its class, duplicates with S > threshold
 * skipped) and the negative (largest or smallest S among the other classes' images), the first on ties
 * as the JavaScript selection keeps it; `softplus(u_n − u_p)` with the exponents of nca.ts; the mean
 * (or sum) over the kept anchors, 0 when none is kept. The selection is a masked ReduceMax/ReduceMin,
 * whose gradient goes to the selected element only, as the selection by index does.
 */
import type { GraphLoss } from '../engine/graph-trainer/graph-trainer.js';
import type { IrAttribute, IrNode, IrTensor } from '../engine/graph/onnx-ir.js';
import { labelPairMasks } from './similarity.js';

/** Which S each anchor's positive and negative is: the largest (`max`) or the smallest (`min`) of its candidates. */
const SELECTIONS: Readonly<Record<string, { positive: 'max' | 'min'; negative: 'max' | 'min' }>> = {
  ephn: { positive: 'max', negative: 'max' },
  hphn: { positive: 'min', negative: 'max' },
  epen: { positive: 'max', negative: 'min' },
};

/** The options of an easy-positive loss as parsed (loss.config). */
export interface NcaTripletConfig {
  temperature: number;
  order: 1 | 2;
  reduction: 'mean' | 'sum';
  validity: 'exists' | 'positive-similarity';
  duplicateThreshold: number | null;
}

/** Builds nodes with `loss/` names and float32 scalar constants. */
class LossNodes {
  readonly nodes: IrNode[] = [];
  readonly constants = new Map<string, IrTensor>();

  op(opType: string, inputs: readonly string[], name: string, attributes: Record<string, IrAttribute> = {}): string {
    const output = `loss/${name}`;
    this.nodes.push({ name: output, opType, inputs, outputs: [output], attributes: new Map(Object.entries(attributes)) });
    return output;
  }

  scalar(value: number): string {
    const name = `loss/const_${String(value).replace(/[^0-9a-zA-Z]/g, '_')}`;
    this.constants.set(name, { type: 'float32', dims: [], data: Float32Array.of(value) });
    return name;
  }

  axis0(): string {
    this.constants.set('loss/axis_0', { type: 'int64', dims: [1], data: Float64Array.of(0) });
    return 'loss/axis_0';
  }

  /** Per row of `values` [B, B], the largest or smallest entry where `candidates` is 1 (rows without any: ±4, outside [-1, 1]). */
  select(values: string, candidates: string, which: 'max' | 'min', name: string): string {
    const offset = this.op('Mul', [this.op('Sub', [candidates, this.scalar(1)], `${name}_outside`), this.scalar(which === 'max' ? 4 : -4)], `${name}_offset`);
    const masked = this.op('Add', [this.op('Mul', [values, candidates], `${name}_kept`), offset], `${name}_masked`);
    return this.op(which === 'max' ? 'ReduceMax' : 'ReduceMin', [masked], name, { axes: { ints: [1] }, keepdims: { i: 0 } });
  }

  /** 1 for rows of `candidates` with at least one 1. */
  any(candidates: string, name: string): string {
    return this.op('ReduceMax', [candidates], name, { axes: { ints: [1] }, keepdims: { i: 0 } });
  }
}

/** The easy-positive loss `name` (`ephn`, `hphn` or `epen`) with options `config` as ONNX nodes (see the file comment). */
export function ncaTripletGraphLoss(name: 'ephn' | 'hphn' | 'epen', config: NcaTripletConfig): GraphLoss {
  const selection = SELECTIONS[name] as (typeof SELECTIONS)[string];
  return {
    name,
    build(embeddings, batch) {
      const g = new LossNodes();
      const s = g.op('MatMul', [embeddings, g.op('Transpose', [embeddings], 'embeddings_t', { perm: { ints: [1, 0] } })], 'similarities');
      let positives = 'loss/positives';
      if (config.duplicateThreshold !== null) {
        const kept = g.op('Cast', [g.op('LessOrEqual', [s, g.scalar(config.duplicateThreshold)], 'not_duplicate')], 'not_duplicate_f', { to: { i: 1 } });
        positives = g.op('Mul', ['loss/positives', kept], 'positive_candidates');
      }
      const sap = g.select(s, positives, selection.positive, 'positive');
      const san = g.select(s, 'loss/negatives', selection.negative, 'negative');
      let valid = g.op('Mul', [g.any(positives, 'has_positive'), g.any('loss/negatives', 'has_negative')], 'has_tuple');
      if (config.validity === 'positive-similarity') {
        const above = (x: string, label: string): string => g.op('Cast', [g.op('Greater', [x, g.scalar(0)], `${label}_above_0`)], `${label}_above_0_f`, { to: { i: 1 } });
        valid = g.op('Mul', [valid, g.op('Mul', [above(sap, 'positive'), above(san, 'negative')], 'both_above_0')], 'valid');
      }
      const tau = g.scalar(config.temperature);
      const half = g.scalar(0.5);
      const up = config.order === 1 ? g.op('Div', [sap, tau], 'u_p') : g.op('Div', [g.op('Sub', [sap, g.op('Mul', [g.op('Mul', [sap, sap], 'sap_sq'), half], 'sap_sq_half')], 'phi_p'), tau], 'u_p');
      const un = config.order === 1 ? g.op('Div', [san, tau], 'u_n') : g.op('Div', [g.op('Mul', [g.op('Mul', [san, san], 'san_sq'), half], 'phi_n'), tau], 'u_n');
      const losses = g.op('Mul', [g.op('Softplus', [g.op('Sub', [un, up], 'exponent')], 'anchor_losses'), valid], 'kept_losses');
      const total = g.op('ReduceSum', [losses, g.axis0()], 'total', { keepdims: { i: 0 } });
      const count = g.op('ReduceSum', [valid, g.axis0()], 'valid_count', { keepdims: { i: 0 } });
      const loss = config.reduction === 'sum' ? total : g.op('Div', [total, g.op('Max', [count, g.scalar(1)], 'count_at_least_1')], 'mean');
      const pairs = [batch, batch];
      return { nodes: g.nodes, constants: g.constants, inputs: new Map([['loss/positives', pairs], ['loss/negatives', pairs]]), loss, validCount: count };
    },
    inputValues(labels) {
      const masks = labelPairMasks(labels);
      return new Map([
        ['loss/positives', Float32Array.from(masks.positive)],
        ['loss/negatives', Float32Array.from(masks.negative)],
      ]);
    },
  };
}
