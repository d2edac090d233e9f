#!/usr/bin/python3
"""PyTorch's gradients of four small networks, for spec/engine/graph-trainer/graph-trainer.spec.ts.

    /usr/bin/python3 scripts/reference/torch_graph_gradients.py [out-folder [name ...]]

Writes, per network, `<out>/<name>.onnx` (the untrained network exported by torch.onnx.export, opset 17,
eval mode, no constant folding, so BatchNormalization stays its own node) and `<out>/<name>.json`: the
input batch x [6, 3, 16, 16], a seed gradient G of the output, and, computed in float64 from the same
initial weights (the exact values both float32 implementations approximate): the output of the
training-mode forward, the gradient of sum(output * G) for every parameter and the BatchNorm running
statistics after that one training-mode forward; plus `torchFloat32Error`, how far PyTorch's own float32
gradient lies from the float64 one (max |difference| / max |gradient|, per parameter): a gradient summed
over cancelling terms (a BatchNorm scale before another BatchNorm) is only that accurate in float32. The networks:

- `convnet`: conv_bn blocks (3x3, no bias, stride 2 first), MaxPool2d(2), [adaptive avg, adaptive max]
  pooling concatenated, BatchNorm1d, Linear, F.normalize (Recipe R's network, narrower);
- `resnet`: a stem and two torchvision BasicBlocks (identity and 1x1-conv shortcuts: Add), global average
  pooling, Linear, F.normalize;
- `zoo`: dilated convolution with bias, depthwise convolution, ReLU6, LeakyReLU, SiLU (x * sigmoid(x)),
  AvgPool2d(3, 2, 1, count_include_pad=False), overlapping MaxPool2d(3, 2, 1), a transpose, a matrix
  product with a weight (MatMul), Sigmoid, BatchNorm1d, F.normalize;
- `mobile`: the blocks of MobileNetV3 and EfficientNet at small widths, as torchvision builds them: a
  stem with Hardswish, an inverted residual (expand 1x1, depthwise 3x3, squeeze-excite with ReLU and
  Hardsigmoid, project 1x1, identity shortcut), an MBConv with SiLU and a sigmoid squeeze-excite
  (torchvision's SiLU exports as x * Sigmoid(x)), global average pooling, Linear, F.normalize.

With names after the folder, only those networks are written.

Debian: python3-torch, python3-onnx. A reference only.
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(ci, co, stride=1):
    return [nn.Conv2d(ci, co, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(co), nn.ReLU()]


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(*conv_bn(3, 8, 2), *conv_bn(8, 8), nn.MaxPool2d(2), *conv_bn(8, 16))
        self.neck = nn.BatchNorm1d(32)
        self.fc = nn.Linear(32, 8)

    def forward(self, x):
        x = self.features(x)
        x = torch.cat([F.adaptive_avg_pool2d(x, 1), F.adaptive_max_pool2d(x, 1)], 1).flatten(1)
        return F.normalize(self.fc(self.neck(x)), dim=1)


class BasicBlock(nn.Module):
    def __init__(self, ci, co, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(ci, co, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(co)
        self.conv2 = nn.Conv2d(co, co, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(co)
        self.down = None if stride == 1 and ci == co else nn.Sequential(nn.Conv2d(ci, co, 1, stride, bias=False), nn.BatchNorm2d(co))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(*conv_bn(3, 8))
        self.block1 = BasicBlock(8, 8, 1)
        self.block2 = BasicBlock(8, 16, 2)
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        x = self.block2(self.block1(self.stem(x)))
        return F.normalize(self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1)), dim=1)


class Zoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.dilated = nn.Conv2d(3, 8, 3, padding=2, dilation=2)
        self.bn1 = nn.BatchNorm2d(8)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.pointwise = nn.Conv2d(8, 16, 1)
        self.avg = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
        self.max = nn.MaxPool2d(3, stride=2, padding=1)
        self.project = nn.Parameter(torch.randn(16, 12) * 0.3)
        self.neck = nn.BatchNorm1d(12)
        self.fc = nn.Linear(12, 8)

    def forward(self, x):
        x = F.relu6(self.bn1(self.dilated(x)))
        x = F.leaky_relu(self.bn2(self.depthwise(x)), 0.1)
        x = self.pointwise(x)
        x = x * torch.sigmoid(x)
        x = self.max(self.avg(x))                       # [N, 16, 4, 4]
        x = x.flatten(2).transpose(1, 2)                # [N, 16 positions, 16 channels]
        x = torch.sigmoid(x @ self.project).mean(1)     # [N, 12]
        return F.normalize(self.fc(self.neck(x)), dim=1)


class SqueezeExcite(nn.Module):
    def __init__(self, channels, squeezed, activation, gate):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.fc2 = nn.Conv2d(squeezed, channels, 1)
        self.activation = activation
        self.gate = gate

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(self.activation(self.fc1(s))))


def conv_bn_act(ci, co, kernel, stride, groups, activation):
    return [nn.Conv2d(ci, co, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False), nn.BatchNorm2d(co), activation]


class Mobile(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(*conv_bn_act(3, 8, 3, 2, 1, nn.Hardswish()))
        # MobileNetV3's inverted residual: expand, depthwise, squeeze-excite (ReLU, Hardsigmoid), project.
        self.inverted = nn.Sequential(
            *conv_bn_act(8, 16, 1, 1, 1, nn.Hardswish()),
            *conv_bn_act(16, 16, 3, 1, 16, nn.Hardswish()),
            SqueezeExcite(16, 8, nn.ReLU(), nn.Hardsigmoid()),
            nn.Conv2d(16, 8, 1, bias=False), nn.BatchNorm2d(8))
        # EfficientNet's MBConv: expand, depthwise (stride 2), squeeze-excite (SiLU, Sigmoid), project.
        self.mbconv = nn.Sequential(
            *conv_bn_act(8, 24, 1, 1, 1, nn.SiLU()),
            *conv_bn_act(24, 24, 3, 2, 24, nn.SiLU()),
            SqueezeExcite(24, 6, nn.SiLU(), nn.Sigmoid()),
            nn.Conv2d(24, 12, 1, bias=False), nn.BatchNorm2d(12))
        self.fc = nn.Linear(12, 8)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.inverted(x)
        x = self.mbconv(x)
        return F.normalize(self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1)), dim=1)


def float64_copy(model, exact):
    """`exact` (a second instance of `model`'s class) in float64 holding `model`'s values."""
    exact.double()
    exact.load_state_dict({k: v.double() if v.is_floating_point() else v for k, v in model.state_dict().items()})
    return exact


def backpropagate(model, exact, x):
    """Back-propagates sum(output * G) through `model` (float32) and `exact` (its float64 copy) on x, G a
    random seed gradient of the output; returns G and the float64 output."""
    y = model(x)
    seed = torch.randn_like(y)
    (y * seed).sum().backward()
    y64 = exact(x.double())
    (y64 * seed.double()).sum().backward()
    return seed, y64


def case_record(x, seed, y64):
    """The fields every reference record starts with: the torch version, the input, the seed gradient G
    and the float64 output."""
    return {
        "torch": torch.__version__,
        "inputDims": list(x.shape),
        "input": x.flatten().tolist(),
        "seed": seed.flatten().tolist(),
        "output": y64.detach().flatten().tolist(),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "spec/fixtures/graph-gradients"
    only = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for name, make in [("convnet", ConvNet), ("resnet", ResNet), ("zoo", Zoo), ("mobile", Mobile)]:
        if only and name not in only:
            continue
        torch.manual_seed(1)
        model = make()
        x = torch.randn(6, 3, 16, 16)
        model.eval()
        torch.onnx.export(model, x, f"{out}/{name}.onnx", input_names=["input"], output_names=["embedding"],
                          opset_version=17, do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
        exact = float64_copy(model, make())  # the same initial weights in float64: the reference values
        model.train()
        exact.train()
        seed, y64 = backpropagate(model, exact, x)
        float32 = dict(model.named_parameters())

        def relative(a, b):
            return ((a.double() - b).abs().max() / b.abs().max().clamp_min(1e-3)).item()

        record = {
            **case_record(x, seed, y64),
            "gradients": {n: p.grad.flatten().tolist() for n, p in exact.named_parameters()},
            "torchFloat32Error": {n: relative(float32[n].grad, p.grad) for n, p in exact.named_parameters()},
            "runningStatistics": {n: b.flatten().tolist() for n, b in exact.named_buffers() if "running" in n},
        }
        with open(f"{out}/{name}.json", "w") as f:
            json.dump(record, f)
        print(name, "parameters", sum(p.numel() for p in model.parameters()))


if __name__ == "__main__":
    main()
