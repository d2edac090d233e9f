#!/usr/bin/python3
"""The fixture of spec/eval/diagnostics.spec.ts: the evaluation report's diagnostics in float64 numpy.

    /usr/bin/python3 scripts/reference/numpy_eval_diagnostics.py spec/fixtures/eval

Writes diagnostics.json: 90 L2-normalised vectors (16 dimensions, 5 overlapping classes of 18,
labels "c0".."c4", rounded to float32) and, with query set = gallery set (a query never paired with
itself): the 40-bin histograms over [-1, 1] of the cosine similarities of positive (same-label) and
negative pairs, their means, and the label pairs most often confused in each query's top 4 (ranked by
similarity, ties by index), counted over every query. A reference only, never a dmlkit dependency.
"""
import json
import os
import sys

import numpy as np


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(7)
    classes, per, dim, k, bins = 5, 18, 16, 4, 40
    centres = rng.normal(size=(classes, dim))
    labels = np.repeat(np.arange(classes), per)
    x = centres[labels] + 1.2 * rng.normal(size=(len(labels), dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x = x.astype(np.float32).astype(np.float64)  # the float32 values dmlkit reads
    n = len(labels)
    s = x @ x.T
    same = labels[:, None] == labels[None, :]
    off = ~np.eye(n, dtype=bool)
    edges = np.linspace(-1, 1, bins + 1)

    def histogram(values):
        idx = np.clip(np.floor((values + 1) / 2 * bins).astype(int), 0, bins - 1)
        return np.bincount(idx, minlength=bins).tolist()

    pos, neg = s[same & off], s[~same]
    confusions = {}
    for q in range(n):
        row = s[q].copy()
        row[q] = -np.inf
        top = np.argsort(-row, kind="stable")[:k]
        for g in top:
            if labels[g] != labels[q]:
                key = (int(labels[q]), int(labels[g]))
                confusions[key] = confusions.get(key, 0) + 1
    pairs = sorted(confusions.items(), key=lambda kv: (-kv[1], kv[0]))
    json.dump(
        {
            "source": "scripts/reference/numpy_eval_diagnostics.py (numpy %s, float64)" % np.__version__,
            "dim": dim,
            "k": k,
            "vectors": x.astype(np.float32).ravel().tolist(),
            "labels": ["c%d" % l for l in labels],
            "bins": bins,
            "edges": edges.tolist(),
            "positiveCounts": histogram(pos),
            "negativeCounts": histogram(neg),
            "positiveMean": float(pos.mean()),
            "negativeMean": float(neg.mean()),
            "confusions": [{"queryLabel": "c%d" % a, "neighbourLabel": "c%d" % b, "count": c, "fraction": c / (per * k)} for (a, b), c in pairs],
        },
        open(os.path.join(out, "diagnostics.json"), "w"),
        indent=1,
    )


if __name__ == "__main__":
    main()
