/**
 * @file Opens the network a run trains, on the engine its engine selection names
 * (lib/train/training-engine.ts), restored from its checkpoint for a resume: the one place that
 * knows both engines (as lib/index-store/open-store.ts knows both stores).
 */
import { GraphTrainingNetwork } from './graph-training-network.js';
import { TfjsTrainingNetwork } from './tfjs-network.js';
import type { NetworkSetup, TrainingNetwork } from './training-network.js';

/** Opens the network `setup.engine` trains (see the file comment). */
export async function openTrainingNetwork(setup: NetworkSetup): Promise<TrainingNetwork> {
  return setup.engine === 'onnx' ? GraphTrainingNetwork.open(setup) : TfjsTrainingNetwork.open(setup);
}
