#!/usr/bin/python3
"""PyTorch beside scripts/experiments/convnet-variants-table.ts on Fashion-MNIST: the same four convnet variants and losses.

    /usr/bin/python3 scripts/reference/torch_convnet_variants.py [/usr/share/datasets/fashion-mnist] [steps] [threads]

Mirrors scripts/configs/fashion-mnist-convnet-variants.json: train classes 0-4 (6,000 seeded training
images of the training file), held out classes 5-9 of both files (a seeded sample of 2,000); the
network conv_bn blocks (3x3, no bias, BatchNorm2d, ReLU), widths 32-64-128, depth 2, downsampling by
stride-2 convolutions or by the first convolution's stride 2 and MaxPool2d(2) before later stages,
global average or [average, max] pooling, BatchNorm1d, Linear(-> 64), L2 normalisation; EPHN
(easy positive, hard negative) of order 1 (softplus((s_an - s_ap) / 0.1)) or 2
(softplus((s_an^2 / 2 - s_ap + s_ap^2 / 2) / 0.1)), mean over anchors; batches of 80 = 5 classes x 16;
Adam 1e-3, OneCycleLR(pct_start 0.05, cycle_momentum False), input (x / 255 - 0.5) / 0.5. Prints one
JSON line per run: held-out Recall@1 (leave one out), MAP@R and NMI (KMeans, K = 5) before and after,
the last 50 steps' mean loss and seconds. Debian: python3-torch, python3-sklearn. A reference only.
"""
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

from fashion_mnist import idx


def conv_bn(cin, cout, stride):
    return [nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]


class Net(nn.Module):
    def __init__(self, downsample, pooling, widths=(32, 64, 128), depth=2, dim=64, channels=1):
        super().__init__()
        layers, c = [], channels
        for s, w in enumerate(widths):
            if downsample == "maxpool" and s > 0:
                layers.append(nn.MaxPool2d(2))
            for j in range(depth):
                stride = 2 if j == 0 and (downsample == "stride" or s == 0) else 1
                layers += conv_bn(c, w, stride)
                c = w
        self.body = nn.Sequential(*layers)
        self.pooling = pooling
        features = 2 * c if pooling == "avgmax" else c
        self.bn = nn.BatchNorm1d(features)
        self.fc = nn.Linear(features, dim)

    def forward(self, x):
        m = self.body(x)
        pooled = [F.adaptive_avg_pool2d(m, 1).flatten(1)] if self.pooling in ("avg", "avgmax") else []
        if self.pooling in ("max", "avgmax"):
            pooled.append(F.adaptive_max_pool2d(m, 1).flatten(1))
        return F.normalize(self.fc(self.bn(torch.cat(pooled, 1))), dim=1)


def ephn(e, labels, order):
    s = e @ e.t()
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(len(labels), dtype=torch.bool)
    pos = s.masked_fill(~same | eye, -2).max(1).values
    neg = s.masked_fill(same, -2).max(1).values
    z = (neg - pos) if order == 1 else (neg ** 2 / 2 - pos + pos ** 2 / 2)
    return F.softplus(z / 0.1).mean()


def train_step(net, opt, sched, x, labels, order):
    """One EPHN step on images x with labels (a LongTensor); returns the loss."""
    loss = ephn(net(x), labels, order)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    return float(loss)


def metrics(e, labels):
    s = e @ e.T
    np.fill_diagonal(s, -np.inf)
    order = np.argsort(-s, axis=1)
    r1 = float(np.mean(labels[order[:, 0]] == labels))
    aps = []
    for i in range(len(labels)):
        r = int(np.sum(labels == labels[i])) - 1
        hits = labels[order[i, :r]] == labels[i]
        aps.append(np.sum(np.cumsum(hits) / np.arange(1, r + 1) * hits) / r)
    nmi = normalized_mutual_info_score(labels, KMeans(5, n_init=1, random_state=0).fit(e).labels_)
    return {"r1": 100 * r1, "mapAtR": 100 * float(np.mean(aps)), "nmi": 100 * nmi}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    torch.set_num_threads(int(sys.argv[3]) if len(sys.argv) > 3 else 2)
    xtr, ytr = idx(f"{root}/train-images-idx3-ubyte.gz"), idx(f"{root}/train-labels-idx1-ubyte.gz")
    xte, yte = idx(f"{root}/t10k-images-idx3-ubyte.gz"), idx(f"{root}/t10k-labels-idx1-ubyte.gz")
    rng = np.random.default_rng(0)
    train = rng.choice(np.flatnonzero(ytr < 5), 6000, replace=False)
    xs, ys = np.concatenate([xtr, xte]), np.concatenate([ytr, yte])
    held = rng.choice(np.flatnonzero(ys >= 5), 2000, replace=False)
    norm = lambda a: torch.tensor((a.astype(np.float32) / 255 - 0.5) / 0.5)[:, None]
    xtrain, ytrain = norm(xtr[train]), ytr[train].astype(np.int64)
    xheld, yheld = norm(xs[held]), ys[held].astype(np.int64)
    by_class = {c: np.flatnonzero(ytrain == c) for c in range(5)}
    for downsample, pooling in [("stride", "avg"), ("maxpool", "avg"), ("stride", "avgmax"), ("maxpool", "avgmax")]:
        for order in (1, 2):
            torch.manual_seed(0)
            brng = np.random.default_rng(1)
            net = Net(downsample, pooling)

            def embed():
                net.eval()
                return torch.cat([net(xheld[i:i + 500]) for i in range(0, len(xheld), 500)]).detach().numpy()

            with torch.no_grad():
                before = metrics(embed(), yheld)
            opt = torch.optim.Adam(net.parameters(), lr=1e-3)
            sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=steps, pct_start=0.05, cycle_momentum=False)
            start, losses = time.perf_counter(), []
            net.train()
            for _ in range(steps):
                rows = np.concatenate([brng.choice(by_class[c], 16, replace=False) for c in range(5)])
                losses.append(train_step(net, opt, sched, xtrain[rows], torch.tensor(ytrain[rows]), order))
            seconds = time.perf_counter() - start
            with torch.no_grad():
                after = metrics(embed(), yheld)
            print(json.dumps({"variant": f"{downsample}-{pooling}", "order": order, "before": before, "after": after,
                              "lastLoss": float(np.mean(losses[-50:])), "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
