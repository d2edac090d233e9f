#!/usr/bin/python3
"""PyTorch's run of the README's training example (scripts/configs/fashion-mnist-finetune.json): the
shipped models/default.onnx fine-tuned on Fashion-MNIST classes 0-4, written as an ONNX file that
`dml eval` scores like dmlkit's own export.

    /usr/bin/python3 scripts/reference/torch_finetune_default.py OUT.onnx [--data /usr/share/datasets/fashion-mnist]
                                                                 [--steps 300] [--lr 1e-4] [--seed 0]

The network is the shipped file's: flatten, subtract `mean`, multiply by `projection` (784 x 64), L2
normalisation (its LpNormalization), read from models/default.onnx, on pixels x / 255 (its
`dml.preprocessing` metadata, copied into OUT.onnx). Training as the config says: the 30,000 training
images of classes 0-4; each step the 5 classes x 16 images drawn without replacement (dmlkit's `filled`
sampler at groupSize 16 and batch 80 has every class in every batch; its draws are its own); EPHN of
paper 000 as dmlkit's `ephn` defaults (first order, temperature 0.1, the easiest positive with
similarity <= 0.9999, the hardest negative, softplus((s_n - s_p) / 0.1), mean over the anchors that have
both); Adam at LR (torch.optim defaults otherwise), STEPS steps. Prints one JSON line: the mean loss of
the first and of the last 50 steps. Debian: python3-torch, python3-numpy, python3-onnx. A reference
only: dmlkit never runs Python.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fashion_mnist import idx  # noqa: E402

DUPLICATE = 0.9999


class Shipped(torch.nn.Module):
    def __init__(self, mean, projection):
        super().__init__()
        self.mean = torch.nn.Parameter(torch.tensor(mean))
        self.projection = torch.nn.Parameter(torch.tensor(projection))

    def forward(self, image):
        flat = image.reshape(image.shape[0], -1)
        return F.normalize((flat - self.mean) @ self.projection, dim=1)


def ephn(e, labels):
    s = e @ e.t()
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(len(labels), dtype=torch.bool)
    positives = same & ~eye & (s <= DUPLICATE)
    negatives = ~same
    pos = s.masked_fill(~positives, -3).max(1).values
    neg = s.masked_fill(~negatives, -3).max(1).values
    kept = positives.any(1) & negatives.any(1)
    return F.softplus((neg - pos) / 0.1)[kept].mean()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    shipped = onnx.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../models/default.onnx"))
    weights = {t.name: numpy_helper.to_array(t).astype(np.float32) for t in shipped.graph.initializer}
    net = Shipped(weights["mean"], weights["projection"])
    x = idx(f"{args.data}/train-images-idx3-ubyte.gz").astype(np.float32) / 255
    y = idx(f"{args.data}/train-labels-idx1-ubyte.gz").astype(np.int64)
    by_class = {c: np.flatnonzero(y == c) for c in range(5)}
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    losses = []
    for _ in range(args.steps):
        rows = np.concatenate([rng.choice(by_class[c], 16, replace=False) for c in range(5)])
        loss = ephn(net(torch.tensor(x[rows][:, None])), torch.tensor(y[rows]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    net.eval()
    example = torch.zeros(2, 1, 28, 28)
    torch.onnx.export(net, example, args.out, input_names=["image"], output_names=["embedding"], opset_version=17,
                      dynamic_axes={"image": {0: "batch"}, "embedding": {0: "batch"}})
    exported = onnx.load(args.out)
    del exported.metadata_props[:]
    exported.metadata_props.extend(shipped.metadata_props)
    onnx.save(exported, args.out)
    print(json.dumps({"out": args.out, "steps": args.steps, "lossFirst50": float(np.mean(losses[:50])), "lossLast50": float(np.mean(losses[-50:])), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
