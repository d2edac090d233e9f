/**
 * @file Defaults that several parts of dmlkit share, in one place (sharp's habit), so that a flag's
 * help, the library's option and the code that applies it cannot drift apart. Defaults of one part
 * only stay beside that part (onnx/devices.ts, metrics/kmeans-options.ts, serve/defaults.ts).
 */

/**
 * Images per inference call of a dynamic-batch model: `dml eval/index --batch-size`, the façade,
 * a training run's backbone features (`data.features.batchSize`) and the embedder itself.
 */
export const DEFAULT_EMBED_BATCH_SIZE = 32;

/**
 * Queries per exact-search chunk unless told otherwise (measured sweet spot 512-4096 on 2 vCPUs): the
 * evaluation's exact index, the training run's validation and the GEMM + TopK search itself.
 */
export const DEFAULT_QUERY_CHUNK = 512;
