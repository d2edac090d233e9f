/**
 * The smallest real training run the specs use: an MLP on the embedded default images (28x28 Fashion-MNIST
 * crops) of five classes, cpu backend, one epoch; `overrides` replace top-level fields.
 */
export function tinyTrainConfig(out: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    data: { dataset: 'folder:data/default', trainClasses: 'bag,coat,dress,pullover,sandal', image: { height: 28, width: 28, channels: 1 } },
    model: { kind: 'mlp', inputDim: 784, hidden: [16], embeddingDim: 4 },
    loss: { name: 'ephn' },
    sampler: { kind: 'filled', groupSize: 6, batchSize: 30 },
    optimizer: { kind: 'adam', learningRate: 0.01, weightDecay: 0.01 },
    epochs: 1,
    backend: 'cpu',
    out,
    ...overrides,
  };
}
