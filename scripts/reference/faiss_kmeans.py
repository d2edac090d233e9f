#!/usr/bin/python3
"""Reference timings for scripts/bench/bench-eval.ts: faiss k-means on the benchmark's own vectors.

    /usr/bin/python3 scripts/reference/faiss_kmeans.py vectors.f32 DIM K[,K...] NITER [labels.i32 [SEED]]

Reads N x DIM float32 rows (raw little-endian), runs faiss.Kmeans(DIM, K, niter=NITER, seed=SEED (1),
max_points_per_centroid large enough that nothing is subsampled) for each K and prints one JSON line
per K: {"k", "seconds", "objective", "nmi"} (NMI against the labels when given, with scikit-learn's
arithmetic normalisation, else null). Debian: python3-faiss, python3-sklearn. A reference only:
dmlkit never runs Python.
"""
import json
import sys
import time

import faiss
import numpy as np


def main():
    path, dim, ks, niter = sys.argv[1], int(sys.argv[2]), [int(k) for k in sys.argv[3].split(",")], int(sys.argv[4])
    x = np.fromfile(path, dtype=np.float32).reshape(-1, dim)
    labels = np.fromfile(sys.argv[5], dtype=np.int32) if len(sys.argv) > 5 else None
    seed = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    for k in ks:
        start = time.perf_counter()
        km = faiss.Kmeans(dim, k, niter=niter, seed=seed, max_points_per_centroid=x.shape[0])
        km.train(x)
        _, assign = km.index.search(x, 1)
        seconds = time.perf_counter() - start
        nmi = None
        if labels is not None:
            from sklearn.metrics import normalized_mutual_info_score
            nmi = float(normalized_mutual_info_score(labels, assign[:, 0]))
        print(json.dumps({"k": k, "seconds": seconds, "objective": float(km.obj[-1]), "nmi": nmi}), flush=True)


if __name__ == "__main__":
    main()
