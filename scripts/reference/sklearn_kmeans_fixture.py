#!/usr/bin/python3
"""The k-means fixture of spec/metrics/kmeans-sklearn.spec.ts: clustered vectors and scikit-learn's KMeans on them.

    /usr/bin/python3 scripts/reference/sklearn_kmeans_fixture.py spec/fixtures/metrics

Writes kmeans-blobs.f32 (row-major float32 vectors), kmeans-blobs.i32 (int32 labels) and
kmeans-sklearn.json: for random_state 0-4, KMeans(K, n_init=1) with scikit-learn's defaults (greedy
k-means++ with 2 + ln(K) local trials, up to 300 iterations, tol 1e-4): NMI against the labels,
inertia and iterations. The data: 150 classes of 4-9 points in 32 dimensions around class centres
that cluster around 7 super-centres (overlapping classes, like real embeddings), L2-normalised.
Debian: python3-sklearn. A reference only, never a dmlkit dependency.
"""
import json
import os
import sys

import numpy as np
import sklearn
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score


def main():
    out = sys.argv[1]
    k, per, dim, sigma, spread = 150, 7, 32, 1.3, 0.6
    rng = np.random.default_rng(0)
    supers = rng.normal(size=(k // 20, dim))
    centres = supers[rng.integers(0, k // 20, size=k)] + spread * rng.normal(size=(k, dim))
    sizes = rng.integers(per - 3, per + 3 + 1, size=k)
    labels = np.concatenate([np.full(s, c) for c, s in enumerate(sizes)])
    x = centres[labels] + sigma * rng.normal(size=(len(labels), dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x = x.astype(np.float32)
    perm = rng.permutation(len(labels))
    x, labels = x[perm], labels[perm].astype(np.int32)
    x.tofile(os.path.join(out, "kmeans-blobs.f32"))
    labels.tofile(os.path.join(out, "kmeans-blobs.i32"))
    runs = []
    for seed in range(5):
        km = KMeans(k, n_init=1, random_state=seed).fit(x)
        runs.append({"seed": seed, "nmi": float(normalized_mutual_info_score(labels, km.labels_)), "inertia": float(km.inertia_), "iterations": int(km.n_iter_)})
    meta = {"generator": "scripts/reference/sklearn_kmeans_fixture.py", "sklearn": sklearn.__version__, "count": int(len(labels)), "dim": dim, "k": k, "runs": runs}
    with open(os.path.join(out, "kmeans-sklearn.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
