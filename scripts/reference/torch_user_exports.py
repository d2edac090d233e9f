#!/usr/bin/python3
"""PyTorch exports as users make them, and PyTorch's training of them, for the graph trainer's specs.

    /usr/bin/python3 scripts/reference/torch_user_exports.py [out-folder]   (default spec/fixtures/user-exports)

A small CNN of the kind people fine-tune (conv 3x3 + BatchNorm + ReLU blocks in `features.<i>`, 2x2 max
pools, [average, max] global pooling, BatchNorm1d, Linear, L2), with PyTorch's default initialisation
(torch.manual_seed(0)), exported untrained twice with the calls people write:

- `aliased.onnx`: `torch.onnx.export(model.eval(), x, f, opset_version=13,
  training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)`. BatchNorm stays (PRESERVE), but
  with the model in eval mode the exporter stores equal initializers once
  (`_jit_pass_onnx_deduplicate_initializers`): every fresh BatchNorm's weight and running variance
  (ones) and bias and running mean (zeros) become `Identity` outputs of one tensor. The script checks
  that the file has such aliases, so the fixture keeps the case it exists for.
- `folded.onnx`: `torch.onnx.export(model.eval(), x, f, opset_version=13)`, PyTorch's defaults (eval
  mode, constant folding): every BatchNorm2d is folded into its convolution. The script checks that no
  BatchNormalization follows a convolution.

Then the model, in training mode, takes `steps` Adam steps (lr 0.01, torch 1.13's single-tensor Adam)
on one batch `x` with the loss L = sum(embedding * G_t) for seeded G_t, and `trained.json` records:
the input, each step's G_t, every state_dict tensor after the last step (running statistics included;
not num_batches_tracked), and the trained model's eval-mode output on `x`. From `aliased.onnx`, the
graph trainer with the same steps must end with each of those tensors under its own name in the model
it writes (GraphTrainer.exportModel), and that model's output must equal PyTorch's.

Deterministic (seeded, one thread): a rerun is byte-identical with the same torch and onnx. Debian:
python3-torch, python3-onnx. A reference only, never a dmlkit dependency.
"""
import inspect
import json
import os
import sys

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F


def block(ci, co):
    # No convolution bias (as torchvision's blocks): a bias before a BatchNorm has no gradient but rounding
    # noise, which Adam turns into steps of the learning rate, so no two implementations could agree on it.
    return nn.Sequential(nn.Conv2d(ci, co, 3, padding=1, bias=False), nn.BatchNorm2d(co), nn.ReLU())


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(block(3, 4), block(4, 4), nn.MaxPool2d(2), block(4, 8), block(8, 8))
        self.neck = nn.BatchNorm1d(16)
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        f = self.features(x)
        pooled = torch.cat([F.adaptive_avg_pool2d(f, 1), F.adaptive_max_pool2d(f, 1)], 1).flatten(1)
        return F.normalize(self.fc(self.neck(pooled)), dim=1)


def export(model, x, path, **options):
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model.eval(), x, path, opset_version=13, input_names=["input"], output_names=["embedding"],
                      dynamic_axes={"input": {0: "batch"}, "embedding": {0: "batch"}}, **options, **legacy)
    onnx.checker.check_model(onnx.load(path))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "spec/fixtures/user-exports"
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Net()
    x = torch.randn(6, 3, 8, 8)

    export(model, x, f"{out}/aliased.onnx", training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    graph = onnx.load(f"{out}/aliased.onnx").graph
    initializers = {t.name for t in graph.initializer}
    aliases = [n.output[0] for n in graph.node if n.op_type == "Identity" and n.input[0] in initializers]
    if not any(a.endswith("running_var") for a in aliases):
        raise SystemExit("aliased.onnx has no aliased running variance: the exporter no longer deduplicates")

    export(model, x, f"{out}/folded.onnx")
    folded = onnx.load(f"{out}/folded.onnx").graph
    if any(n.op_type == "BatchNormalization" and n.input[0].startswith("/features") for n in folded.node):
        raise SystemExit("folded.onnx kept a BatchNorm2d: the exporter no longer folds it")
    if not any(n.op_type == "Conv" for n in folded.node):
        raise SystemExit("folded.onnx has no convolution")

    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    seeds = []
    for _ in range(3):
        y = model(x)
        seed = torch.randn_like(y)
        seeds.append(seed.flatten().tolist())
        optimizer.zero_grad()
        (y * seed).sum().backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        output = model(x)
    record = {
        "torch": torch.__version__,
        "exportCall": "torch.onnx.export(model.eval(), x, f, opset_version=13, training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)",
        "aliases": aliases,
        "optimizer": {"kind": "adam", "lr": 0.01},
        "inputDims": list(x.shape),
        "input": x.flatten().tolist(),
        "seeds": seeds,
        "tensors": {k: v.flatten().tolist() for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")},
        "evalOutput": output.flatten().tolist(),
    }
    with open(f"{out}/trained.json", "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"{out}: {len(aliases)} aliases in aliased.onnx; trained.json with {len(record['tensors'])} tensors")


if __name__ == "__main__":
    main()
