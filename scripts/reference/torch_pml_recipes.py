#!/usr/bin/python3
"""PyTorch's side of the `pml` table (scripts/experiments/fashion-mnist-table.ts --methods pml): the same recipe
trained by PyTorch, exported to ONNX, so that `dml eval` scores both trainers' networks on the same held-out
images.

    /usr/bin/python3 scripts/reference/torch_pml_recipes.py OUT REFERENCE.onnx LOSS SEED [SEED ...]

The recipe is scripts/configs/fashion-mnist-mlp.json's with the table's loss: an MLP 784-256-16 (ReLU, PyTorch's
default initialisation) with L2 normalisation, on a seeded sample of 6,000 Fashion-MNIST training images of
classes 0-4 (Debian's dataset-fashion-mnist), preprocessed as REFERENCE.onnx (a `dml export` of the dmlkit run)
says in its `dml.preprocessing` metadata; 225 steps of batches of 5 classes x 16 images drawn at random without
replacement within a batch; Adam (lr 1e-3, torch's defaults) over the network, and over the loss's class table
at `learningRateScale` x the rate. LOSS is `proxy-anchor` (margin 0.1, alpha 32, proxies at 100x, drawn
kaiming_normal_(mode='fan_out')) or `normalized-softmax` (temperature 0.05, weights N(0, 1), at the rate), the
formulas of scripts/reference/torch_pml_losses.py. Writes OUT/LOSS-seed<SEED>.onnx (input and metadata as
REFERENCE.onnx's, output `embedding`). The samples and batches are PyTorch's own draws (not dmlkit's): the
comparison is of outcomes. Debian: python3-torch, python3-numpy, python3-onnx. A reference only.
"""
import gzip
import inspect
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_pml_losses import normalized_softmax, proxy_anchor

DATA = "/usr/share/datasets/fashion-mnist"
CLASSES, GROUP, STEPS, SAMPLE, LEARNING_RATE = 5, 16, 225, 6000, 1e-3
RECIPES = {
    "proxy-anchor": {"loss": proxy_anchor, "options": {"numClasses": 5, "margin": 0.1, "alpha": 32}, "scale": 100, "init": "kaiming"},
    "normalized-softmax": {"loss": normalized_softmax, "options": {"numClasses": 5, "temperature": 0.05}, "scale": 1, "init": "normal"},
}


def idx(name):
    with gzip.open(os.path.join(DATA, name)) as handle:
        data = handle.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(784, 256)
        self.embedding = nn.Linear(256, 16)

    def forward(self, x):
        return F.normalize(self.embedding(torch.relu(self.hidden(x.flatten(1)))), p=2, dim=1)


def main():
    out, reference, loss_name, seeds = sys.argv[1], sys.argv[2], sys.argv[3], [int(s) for s in sys.argv[4:]]
    recipe = RECIPES[loss_name]
    model = onnx.load(reference)
    metadata = {p.key: p.value for p in model.metadata_props}
    preprocessing = json.loads(metadata["dml.preprocessing"])
    input_shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    if input_shape[1:] != [1, 28, 28]:
        raise SystemExit("expected REFERENCE.onnx's input [batch, 1, 28, 28] (NCHW), got %s" % input_shape)
    images, labels = idx("train-images-idx3-ubyte.gz"), idx("train-labels-idx1-ubyte.gz")
    keep = np.flatnonzero(labels < CLASSES)
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for seed in seeds:
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        rows = rng.choice(keep, SAMPLE, replace=False)
        x = (images[rows].astype(np.float32) / 255 - preprocessing["mean"][0]) / preprocessing["std"][0]
        x = torch.from_numpy(x).reshape(SAMPLE, 1, 28, 28)
        y = labels[rows].astype(np.int64)
        by_class = [np.flatnonzero(y == c) for c in range(CLASSES)]
        net = Net()
        table = torch.empty(CLASSES, 16, dtype=torch.float32)
        if recipe["init"] == "kaiming":
            nn.init.kaiming_normal_(table, mode="fan_out")
        else:
            nn.init.normal_(table)
        table = nn.Parameter(table)
        opt = torch.optim.Adam([{"params": net.parameters(), "lr": LEARNING_RATE}, {"params": [table], "lr": LEARNING_RATE * recipe["scale"]}])
        losses = []
        for _ in range(STEPS):
            batch = np.concatenate([rng.choice(by_class[c], GROUP, replace=False) for c in range(CLASSES)])
            value, _count = recipe["loss"](net(x[batch]), torch.from_numpy(y[batch]), table, recipe["options"])
            opt.zero_grad()
            value.backward()
            opt.step()
            losses.append(value.item())
        net.eval()
        path = os.path.join(out, "%s-seed%d.onnx" % (loss_name, seed))
        legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
        torch.onnx.export(net, torch.zeros(1, 1, 28, 28), path, opset_version=17, input_names=[model.graph.input[0].name], output_names=["embedding"],
                          dynamic_axes={model.graph.input[0].name: {0: "batch"}, "embedding": {0: "batch"}}, **legacy)
        exported = onnx.load(path)
        exported.metadata_props.add(key="dml.preprocessing", value=metadata["dml.preprocessing"])
        onnx.save(exported, path)
        print(json.dumps({"file": path, "firstLoss": losses[0], "lastLosses": float(np.mean(losses[-25:]))}))


if __name__ == "__main__":
    main()
