#!/usr/bin/python3
"""PyTorch's side of scripts/experiments/outcome-parity.ts: Recipe R's recipe on the exact images dmlkit trains on.

    /usr/bin/python3 scripts/reference/torch_outcome.py DIR

DIR holds what the harness wrote: `train-x.npy` (float32 [N, H, W, C], dmlkit's preprocessed training
images), `train-y.npy` (int32 class numbers) and `recipe.json` (network: widths, depth, downsample,
pooling, embeddingDim; loss: EPHN order and temperature; batch: classes x groupSize; Adam learning rate,
OneCycle pctStart, cycleMomentum with baseMomentum and maxMomentum, steps, seed (the initialisation), batchSeed
(the batches; default seed), threads; optionally `augmentation` and `export`, below). Builds the `convnet` network as
scripts/reference/torch_convnet_variants.py does (conv_bn blocks, MaxPool2d(2) or stride-2 downsampling,
[average, max] pooling, BatchNorm1d, Linear, L2), with PyTorch's default initialisation, and writes its
initial weights to DIR/initial.onnx before the first step (the graph trainer starts from that file).
Trains: each step `classes` distinct classes drawn at random among those with at least `groupSize`
images and `groupSize` images of each without replacement; EPHN mean over anchors; Adam with
OneCycleLR(cos, pct_start, cycle_momentum as the recipe's cycleMomentum, base_momentum, max_momentum) as
dmlkit's `onecycle`. With `augmentation` ({rescale: [lo, hi], translate, fill: per-channel normalised
value}), each batch is rescaled about its centre and shifted as dmlkit's data.augmentation does
(lib/train/batch-affine.ts: scale s uniform in rescale, shifts round(U(-translate, translate)), output
pixel i samples the input at c + (i - c - t) / s bilinearly, the border filled), with this script's own
draws. Writes DIR/final.onnx and DIR/torch.json (the mean loss of every 100 steps and the seconds the
steps took). Input NCHW [batch, C, H, W], output `embedding`; the TorchScript exporter, BatchNorm kept:
by default opset 17 with the initializers apart (`export: "preserve"`), or as users write the call
(`export: "user"`: `torch.onnx.export(model.eval(), x, f, opset_version=13,
training=TrainingMode.PRESERVE, do_constant_folding=False)`, whose fresh BatchNorms share initializers
through Identity aliases; the final export then has trained values, so no aliases). Debian:
python3-torch, python3-numpy. A reference only: dmlkit never runs Python.
"""
import inspect
import json
import sys
import time

import numpy as np
import torch

from torch_convnet_variants import Net, train_step


def export(net, example, path, mode="preserve"):
    net.eval()
    if mode == "preserve":
        net.training = True  # the top module's flag only: initializers stay apart (see torch_step_parity.py)
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(net, example, path, opset_version=17 if mode == "preserve" else 13, input_names=["input"], output_names=["embedding"],
                      dynamic_axes={"input": {0: "batch"}, "embedding": {0: "batch"}},
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False, **legacy)
    net.train()


def axis_matrix(n, s, t):
    """dmlkit's interpolation matrix of one axis (lib/train/batch-affine.ts axisInterpolation) and its inside mask."""
    matrix, inside = np.zeros((n, n), np.float32), np.zeros(n, np.float32)
    c = (n - 1) / 2
    for i in range(n):
        u = c + (i - c - t) / s
        if u < -1e-9 or u > n - 1 + 1e-9:
            continue
        u = min(max(u, 0.0), n - 1.0)
        inside[i] = 1
        j0 = int(np.floor(u))
        w = u - j0
        matrix[i, j0] += 1 - w
        matrix[i, min(j0 + 1, n - 1)] += w
    return matrix, inside


def augment(x, rng, augmentation):
    """Each image of NCHW batch x rescaled about its centre and shifted, the border filled (see the file comment)."""
    lo, hi = augmentation["rescale"]
    translate = augmentation["translate"]
    fill = torch.tensor(augmentation["fill"], dtype=torch.float32).view(1, -1, 1, 1)
    out = torch.empty_like(x)
    n, _, height, width = x.shape
    for r in range(n):
        s = lo + (hi - lo) * rng.random()
        dy, dx = (int(np.round(-translate + 2 * translate * rng.random())) for _ in range(2))
        ay, iy = axis_matrix(height, s, dy)
        ax, ix = axis_matrix(width, s, dx)
        sampled = torch.from_numpy(ay) @ x[r] @ torch.from_numpy(ax).t()
        inside = torch.from_numpy(np.outer(iy, ix))
        out[r] = sampled + (1 - inside) * fill[0]
    return out


def main():
    folder = sys.argv[1]
    recipe = json.load(open(f"{folder}/recipe.json"))
    torch.set_num_threads(recipe["threads"])
    torch.manual_seed(recipe["seed"])
    x = torch.from_numpy(np.load(f"{folder}/train-x.npy")).permute(0, 3, 1, 2).contiguous()
    y = np.load(f"{folder}/train-y.npy").astype(np.int64)
    n = recipe["network"]
    net = Net(n["downsample"], n["pooling"], tuple(n["widths"]), n["depth"], n["embeddingDim"], channels=x.shape[1])
    mode = recipe.get("export", "preserve")
    export(net, x[:2], f"{folder}/initial.onnx", mode)
    rng = np.random.default_rng(recipe.get("batchSeed", recipe["seed"]))
    group, classes, steps = recipe["groupSize"], recipe["classes"], recipe["steps"]
    by_class = {c: np.flatnonzero(y == c) for c in np.unique(y)}
    eligible = [c for c, rows in by_class.items() if len(rows) >= group]
    opt = torch.optim.Adam(net.parameters(), lr=recipe["learningRate"])
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=recipe["learningRate"], total_steps=steps,
                                                pct_start=recipe["pctStart"], cycle_momentum=recipe["cycleMomentum"],
                                                base_momentum=recipe["baseMomentum"], max_momentum=recipe["maxMomentum"])
    augmentation = recipe.get("augmentation")
    augment_rng = np.random.default_rng(recipe.get("batchSeed", recipe["seed"]) + 1)
    if recipe["loss"]["temperature"] != 0.1:
        raise SystemExit("torch_convnet_variants.ephn has temperature 0.1")
    net.train()
    losses, start = [], time.perf_counter()
    for _ in range(steps):
        picked = rng.choice(eligible, classes, replace=False)
        rows = np.concatenate([rng.choice(by_class[c], group, replace=False) for c in picked])
        images = augment(x[rows], augment_rng, augmentation) if augmentation else x[rows]
        losses.append(train_step(net, opt, sched, images, torch.from_numpy(y[rows]), recipe["loss"]["order"]))
    seconds = time.perf_counter() - start
    export(net, x[:2], f"{folder}/final.onnx", mode)
    per100 = [float(np.mean(losses[i:i + 100])) for i in range(0, steps, 100)]
    json.dump({"torch": torch.__version__, "seconds": seconds, "lossPer100Steps": per100}, open(f"{folder}/torch.json", "w"))
    print(json.dumps({"seconds": seconds, "lastLoss": per100[-1]}))


if __name__ == "__main__":
    main()
