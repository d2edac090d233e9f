/**
 * @file The miners in one import: per-anchor selection (easy/hard positive, hard/semi-hard/easy
 * negative), pair lists and the multi-similarity miner, triplet lists and the triplet-margin miner.
 * Every miner works on detached similarities or distances (plain JavaScript arrays read back from
 * the live matrix) and returns plain index arrays.
 */
export {
  DEFAULT_DUPLICATE_THRESHOLD,
  selectNegatives,
  selectPositives,
  type AnchorSelection,
  type NegativeSelectionOptions,
  type NegativeStrategy,
  type PositiveSelectionOptions,
  type PositiveStrategy,
  type SemiHardRule,
} from './mining/anchor-selection.js';
export { allPairs, type MinedPairs, type PairList } from './mining/pairs.js';
export { DEFAULT_MULTI_SIMILARITY_EPSILON, mineMultiSimilarityPairs } from './mining/multi-similarity-miner.js';
export {
  allTriplets,
  groupTripletsByAnchor,
  mineTripletsByMargin,
  type TripletList,
  type TripletMarginMinerType,
  type TripletSlots,
} from './mining/triplet-margin-miner.js';
