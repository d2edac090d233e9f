#!/usr/bin/python3
"""A torchvision network with random weights as the ONNX file the graph trainer reads.

    /usr/bin/python3 scripts/reference/export_torchvision.py ARCH SIZE OUT.onnx [EMBEDDING_DIM]

ARCH: resnet18, resnet50, mobilenet_v3_small or efficientnet_b0 (torchvision.models, weights=None,
seeded), or vit_tiny (torchvision's VisionTransformer at SIZE px with 8 px patches, 2 layers of width 32,
2 heads), its classifier replaced by Linear(features -> EMBEDDING_DIM, default 128) and followed by
F.normalize, exported with torch.onnx.export at opset 17: input `input` float32 [batch, 3, SIZE, SIZE]
(dynamic batch), output `embedding`, BatchNormalization kept as its own nodes (eval-mode graph, no
constant folding; the top module's training flag set so that torch 1.13 does not merge equal
initializers through Identity nodes), initializers named as the state_dict. Used by
scripts/bench/bench-train.ts (`--models resnet18`). Debian: python3-torch, python3-torchvision. A reference only.
"""
import inspect
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class Embedder(nn.Module):
    def __init__(self, arch, dim, size):
        super().__init__()
        if arch == "vit_tiny":
            # torchvision's VisionTransformer at a test size: 8 px patches, 2 encoder layers of width 32, 2 heads.
            net = torchvision.models.VisionTransformer(image_size=size, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64)
        else:
            net = getattr(torchvision.models, arch)(weights=None)
        if arch.startswith("resnet"):
            net.fc = nn.Linear(net.fc.in_features, dim)
        elif arch == "vit_tiny":
            net.heads = nn.Linear(net.hidden_dim, dim)
        else:
            last = net.classifier[-1]
            net.classifier[-1] = nn.Linear(last.in_features, dim)
        self.net = net

    def forward(self, x):
        return F.normalize(self.net(x), dim=1)


def main():
    arch, size, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    dim = int(sys.argv[4]) if len(sys.argv) > 4 else 128
    torch.manual_seed(0)
    model = Embedder(arch, dim, size).eval()
    model.training = True  # only the top module: the graph stays the eval graph, initializers stay apart
    x = torch.randn(2, 3, size, size)
    # The TorchScript exporter (torch >= 2.9 defaults to the dynamo one, whose graphs are opset 18).
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, x, out, input_names=["input"], output_names=["embedding"], opset_version=17,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE,
                      dynamic_axes={"input": {0: "batch"}, "embedding": {0: "batch"}}, **legacy)
    print(out, sum(p.numel() for p in model.parameters()), "parameters")


if __name__ == "__main__":
    main()
