#!/usr/bin/python3
"""Reference NMI for scripts/bench/bench-eval.ts --mode nmi: scikit-learn's KMeans on the benchmark's vectors.

    /usr/bin/python3 scripts/reference/sklearn_kmeans.py vectors.f32 DIM K[,K...] labels.i32

For each K and random_state 0, 1, 2: KMeans(K, n_init=1) with scikit-learn's defaults (greedy
k-means++, up to 300 iterations, tol 1e-4); prints one JSON line per run: {"k", "seed", "nmi",
"inertia", "iterations", "seconds"}. Debian: python3-sklearn. A reference only.
"""
import json
import sys
import time

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score


def main():
    path, dim, ks, label_path = sys.argv[1], int(sys.argv[2]), [int(k) for k in sys.argv[3].split(",")], sys.argv[4]
    x = np.fromfile(path, dtype=np.float32).reshape(-1, dim)
    labels = np.fromfile(label_path, dtype=np.int32)
    for k in ks:
        for seed in (0, 1, 2):
            start = time.perf_counter()
            km = KMeans(k, n_init=1, random_state=seed).fit(x)
            print(json.dumps({
                "k": k, "seed": seed, "nmi": float(normalized_mutual_info_score(labels, km.labels_)),
                "inertia": float(km.inertia_), "iterations": int(km.n_iter_), "seconds": time.perf_counter() - start,
            }), flush=True)


if __name__ == "__main__":
    main()
