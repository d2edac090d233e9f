#!/usr/bin/python3
"""PyTorch's gradients of whole torchvision backbones, for spec/engine/graph-trainer/torchvision-backbones.spec.ts.

    /usr/bin/python3 scripts/reference/torch_backbone_gradients.py OUT-FOLDER SIZE ARCH [ARCH ...]

Per ARCH (resnet18, resnet50, mobilenet_v3_small, efficientnet_b0, vit_tiny): `<out>/<arch>.onnx`, the network as
scripts/reference/export_torchvision.py exports it (random weights seeded 0, classifier replaced by
Linear(features -> 128), F.normalize; opset 17, BatchNormalization kept), and `<out>/<arch>.json`: the
input batch x [4, 3, SIZE, SIZE], a seed gradient G of the output and, in float64 from the same weights
in training mode, the output and per parameter the gradient of sum(output * G) summarised (a whole
ResNet-50's gradients would be 24 M numbers): its largest |value|, its L2 norm, its values at four
indices (0, n/3, 2n/3, n-1), and how far PyTorch's own float32 gradient lies from the float64 one (max
|difference| / max |gradient|); the running statistics after that forward likewise summarised. Dropout
and stochastic depth (EfficientNet) are left in eval mode: random in training, absent from the export.

Debian: python3-torch, python3-torchvision. A reference only, never a dmlkit dependency.
"""
import inspect
import json
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_torchvision import Embedder  # noqa: E402
from torch_graph_gradients import backpropagate, case_record, float64_copy  # noqa: E402


def summary(values, reference=None):
    flat = values.detach().double().flatten()
    n = flat.numel()
    indices = sorted({0, n // 3, 2 * n // 3, n - 1})
    record = {
        "size": n,
        "maxAbs": flat.abs().max().item(),
        "norm": flat.norm().item(),
        "probes": {str(i): flat[i].item() for i in indices},
    }
    if reference is not None:
        exact = reference.detach().double().flatten()
        record["float32Error"] = ((flat - exact).abs().max() / exact.abs().max().clamp_min(1e-12)).item()
    return record


def main():
    out, size, archs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    for arch in archs:
        torch.manual_seed(0)
        model = Embedder(arch, 128, size).eval()
        model.training = True  # as export_torchvision.py: the eval graph, initializers kept apart
        x = torch.randn(4, 3, size, size)
        torch.onnx.export(model, x, f"{out}/{arch}.onnx", input_names=["input"], output_names=["embedding"],
                          opset_version=17, do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE,
                          dynamic_axes={"input": {0: "batch"}, "embedding": {0: "batch"}}, **legacy)
        exact = float64_copy(model, Embedder(arch, 128, size))
        for net in (model, exact):
            net.train()
            # Dropout and stochastic depth are random in training mode and absent from the exported (eval) graph.
            for m in net.modules():
                if isinstance(m, (torch.nn.Dropout, torchvision.ops.StochasticDepth)):
                    m.eval()
        seed, y64 = backpropagate(model, exact, x)
        float32 = dict(model.named_parameters())
        record = {
            **case_record(x, seed, y64),
            "gradients": {n: {**summary(p.grad), "float32Error": summary(float32[n].grad, p.grad)["float32Error"]} for n, p in exact.named_parameters()},
            "runningStatistics": {n: summary(b) for n, b in exact.named_buffers() if "running" in n},
        }
        with open(f"{out}/{arch}.json", "w") as f:
            json.dump(record, f)
        print(arch, sum(p.numel() for p in model.parameters()), "parameters")


if __name__ == "__main__":
    main()
