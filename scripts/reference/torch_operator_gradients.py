#!/usr/bin/python3
"""Every gradient rule of the graph trainer, one operator at a time, against PyTorch in float64.

    /usr/bin/python3 scripts/reference/torch_operator_gradients.py [out.json]   (default spec/fixtures/operator-gradients/cases.json)

Each case is one ONNX node (opset 17) whose float inputs are trained tensors: its operator type,
attributes, inputs (values, dimensions, element type, whether trained; int64 and bool inputs are
constants) and the PyTorch function that computes the same thing (the function PyTorch's exporter
turns into that operator, where there is one). For a seeded output gradient G, the case records, in
float64: the output, PyTorch's autograd gradient of L = sum(output * G) with respect to each trained
input and, for the cases away from kinks and ties, the central finite differences of L (step 1e-6) of
every element of every trained input. The values are float32 numbers (drawn in float32), so that the
ONNX file holds exactly the inputs PyTorch saw. spec/engine/autodiff/operator-gradients.spec.ts builds
each node as a model, runs the graph trainer's forward (training mode) and backward on it, and compares
the output and the gradients with these; it fails for a gradient rule without a case.

Kinks and ties (the cases named "at ..."): the gradient PyTorch's autograd gives there, which is the
convention the rules follow (lib/engine/autodiff/rules/): Relu passes y > 0; LeakyRelu passes x > 0, else
alpha; Clip passes strictly inside the bounds (hardtanh's, and so ReLU6's: the exporter writes both as
Clip; torch.clamp's gradient would also pass at the bounds); HardSigmoid and HardSwish as PyTorch's
hardsigmoid and hardswish; Max and Min of two operands split a tie in halves (torch.maximum and
minimum); ReduceMax, ReduceMin, MaxPool and GlobalMaxPool give it to the first extreme element
(torch.max(dim), max pooling; torch.amax would split it). Finite differences are not recorded there.

Deterministic (seeded): a rerun is byte-identical with the same torch and numpy. Debian: python3-torch,
python3-numpy. A reference only, never a dmlkit dependency.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

RNG = np.random.default_rng(0)


def rand(*dims, low=-2.0, high=2.0):
    return RNG.uniform(low, high, dims).astype(np.float32)


def away(*dims, low=0.3, high=2.0):
    """Values with |v| in [low, high], random signs: away from zero."""
    return (rand(*dims, low=low, high=high) * RNG.choice([-1, 1], dims)).astype(np.float32)


def param(name, value):
    return {"name": name, "value": np.asarray(value, np.float32), "type": "float32", "trained": True}


def const(name, value, type="float32"):
    dtype = {"float32": np.float32, "int64": np.int64, "bool": np.bool_}[type]
    return {"name": name, "value": np.asarray(value, dtype), "type": type, "trained": False}


OMITTED = {"name": ""}

CASES = []


def case(name, op, inputs, fn, attributes=None, output=0, kink=False, outputs=1):
    CASES.append({"name": name, "op": op, "inputs": inputs, "fn": fn, "attributes": attributes or {}, "output": output, "kink": kink, "outputs": outputs})


def first_extreme(x, axes, keepdims, largest):
    """The first largest (smallest) element over `axes`, as torch.max(dim) picks it: the reduced axes moved last and flattened."""
    rank = x.dim()
    axes = sorted(a % rank for a in axes)
    kept = [a for a in range(rank) if a not in axes]
    moved = x.permute(*kept, *axes).reshape(*[x.shape[a] for a in kept], -1)
    value = moved.max(-1).values if largest else moved.min(-1).values
    if keepdims:
        value = value.reshape([1 if a in axes else x.shape[a] for a in range(rank)])
    return value


def hard_sigmoid(x, alpha, beta):
    """ONNX HardSigmoid with PyTorch hardsigmoid's gradient: alpha strictly inside 0 < alpha x + beta < 1, else 0."""
    linear = alpha * x + beta
    inside = (linear > 0) & (linear < 1)
    return torch.where(inside, linear, (linear >= 1).to(x.dtype))


def onnx_pads_2d(x, pads, value=0.0):
    """ONNX 2-D pads [top, left, bottom, right] as F.pad's (left, right, top, bottom)."""
    return F.pad(x, (pads[1], pads[3], pads[0], pads[2]), value=value)


def build():
    # ---- element-wise arithmetic, numpy broadcasting ----
    case("Add with broadcasting", "Add", [param("a", rand(2, 3)), param("b", rand(3))], lambda a, b: a + b)
    case("Sub with broadcasting", "Sub", [param("a", rand(2, 3)), param("b", rand(2, 1))], lambda a, b: a - b)
    case("Mul with broadcasting", "Mul", [param("a", rand(2, 3)), param("b", rand(1, 3))], lambda a, b: a * b)
    case("Div", "Div", [param("a", rand(2, 3)), param("b", away(2, 3))], lambda a, b: a / b)
    case("Div with a broadcast divisor", "Div", [param("a", rand(2, 3)), param("b", away(3))], lambda a, b: a / b)
    case("Sum of three with broadcasting", "Sum", [param("a", rand(2, 3)), param("b", rand(3)), param("c", rand(2, 1))], lambda a, b, c: a + b + c)
    tie_a = rand(2, 3)
    tie_b = np.where(np.arange(6).reshape(2, 3) % 2 == 0, tie_a, rand(2, 3)).astype(np.float32)
    case("Max of two (torch.maximum)", "Max", [param("a", rand(2, 3)), param("b", rand(2, 3))], torch.maximum)
    case("Max at ties: halves", "Max", [param("a", tie_a), param("b", tie_b)], torch.maximum, kink=True)
    case("Max with broadcasting", "Max", [param("a", rand(2, 3)), param("b", rand(3))], torch.maximum)
    case("Min of two (torch.minimum)", "Min", [param("a", rand(2, 3)), param("b", rand(2, 3))], torch.minimum)
    case("Min at ties: halves", "Min", [param("a", tie_a), param("b", tie_b)], torch.minimum, kink=True)
    case("Pow, exponent 3", "Pow", [param("x", rand(2, 3)), const("e", 3.0)], lambda x, e: torch.pow(x, e))
    case("Pow, exponent 2", "Pow", [param("x", rand(2, 3)), const("e", 2.0)], lambda x, e: torch.pow(x, e))
    case("Pow, exponent 0.5", "Pow", [param("x", rand(2, 3, low=0.2, high=2)), const("e", 0.5)], lambda x, e: torch.pow(x, e))
    case("Neg", "Neg", [param("x", rand(2, 3))], torch.neg)
    case("Sqrt", "Sqrt", [param("x", rand(2, 3, low=0.2, high=3))], torch.sqrt)
    case("Exp", "Exp", [param("x", rand(2, 3))], torch.exp)
    case("Log", "Log", [param("x", rand(2, 3, low=0.2, high=3))], torch.log)
    case("Reciprocal", "Reciprocal", [param("x", away(2, 3))], torch.reciprocal)
    case("Identity", "Identity", [param("x", rand(2, 3))], lambda x: x)
    case("Where with a broadcast operand", "Where", [const("c", [[True, False, True], [False, False, True]], "bool"), param("a", rand(2, 3)), param("b", rand(3))],
         lambda c, a, b: torch.where(c, a, b))

    # ---- activations ----
    case("Relu", "Relu", [param("x", away(2, 4))], F.relu)
    case("Relu at 0: no gradient", "Relu", [param("x", [[0, 0.5, -0.5, 0], [1, 0, -1, 2]])], F.relu, kink=True)
    case("Clip (ReLU6: hardtanh)", "Clip", [param("x", rand(2, 4, low=-3, high=9)), const("min", 0.0), const("max", 6.0)], lambda x, lo, hi: F.hardtanh(x, float(lo), float(hi)))
    case("Clip at its bounds: none passes", "Clip", [param("x", [[0, 6, 3, -1], [6, 0, 7, 0.5]]), const("min", 0.0), const("max", 6.0)], lambda x, lo, hi: F.hardtanh(x, float(lo), float(hi)), kink=True)
    case("Clip with a max only", "Clip", [param("x", rand(2, 4, low=-3, high=3)), OMITTED, const("max", 0.75)], lambda x, hi: torch.clamp(x, max=float(hi)))
    case("Clip with a min only", "Clip", [param("x", rand(2, 4, low=-3, high=3)), const("min", -0.5)], lambda x, lo: torch.clamp(x, min=float(lo)))
    case("LeakyRelu, alpha 0.1", "LeakyRelu", [param("x", away(2, 4))], lambda x: F.leaky_relu(x, 0.1), {"alpha": {"f": 0.1}})
    case("LeakyRelu at 0: alpha", "LeakyRelu", [param("x", [[0, 1, -1, 0]])], lambda x: F.leaky_relu(x, 0.1), {"alpha": {"f": 0.1}}, kink=True)
    case("Sigmoid", "Sigmoid", [param("x", rand(2, 4, low=-4, high=4))], torch.sigmoid)
    case("Tanh", "Tanh", [param("x", rand(2, 4, low=-3, high=3))], torch.tanh)
    case("Softplus", "Softplus", [param("x", rand(2, 4, low=-4, high=4))], F.softplus)
    case("Erf (GELU's)", "Erf", [param("x", rand(2, 4))], torch.erf)
    case("Softmax over axis 1", "Softmax", [param("x", rand(2, 3, 4))], lambda x: F.softmax(x, 1), {"axis": {"i": 1}})
    case("Softmax over the last axis (default -1)", "Softmax", [param("x", rand(2, 3, 4))], lambda x: F.softmax(x, -1))
    case("HardSigmoid, ONNX defaults (alpha 0.2, beta 0.5)", "HardSigmoid", [param("x", rand(2, 4, low=-4, high=4) + np.float32(0.01))], lambda x: hard_sigmoid(x, float(np.float32(0.2)), 0.5))
    case("HardSigmoid at its kinks (alpha 0.25: x = -2 and 2)", "HardSigmoid", [param("x", [[-2, 2, 0, -3], [3, 1, -2, 2]])], lambda x: hard_sigmoid(x, 0.25, 0.5),
         {"alpha": {"f": 0.25}, "beta": {"f": 0.5}}, kink=True)
    case("HardSwish", "HardSwish", [param("x", rand(2, 4, low=-5, high=5))], F.hardswish)
    case("HardSwish at its kinks (-3, 3)", "HardSwish", [param("x", [[-3, 3, 0, -4], [4, 1.5, -3, 3]])], F.hardswish, kink=True)

    # ---- convolution ----
    case("Conv, stride 2, pads 1, bias", "Conv", [param("x", rand(1, 2, 5, 5)), param("w", rand(3, 2, 3, 3, low=-0.5, high=0.5)), param("b", rand(3))],
         lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), {"strides": {"ints": [2, 2]}, "pads": {"ints": [1, 1, 1, 1]}, "kernel_shape": {"ints": [3, 3]}})
    case("Conv, dilation 2, asymmetric pads, no bias", "Conv", [param("x", rand(2, 2, 6, 5)), param("w", rand(2, 2, 2, 3, low=-0.5, high=0.5))],
         lambda x, w: F.conv2d(onnx_pads_2d(x, [1, 0, 0, 2]), w, dilation=2), {"dilations": {"ints": [2, 2]}, "pads": {"ints": [1, 0, 0, 2]}})
    case("Conv, depthwise (groups 4), stride 1", "Conv", [param("x", rand(1, 4, 4, 4)), param("w", rand(4, 1, 3, 3, low=-0.5, high=0.5)), param("b", rand(4))],
         lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=4), {"group": {"i": 4}, "pads": {"ints": [1, 1, 1, 1]}})

    # ---- normalisation (training mode: batch statistics) ----
    case("BatchNormalization in training mode (batch statistics)", "BatchNormalization",
         [param("x", rand(4, 3, 2, 2)), param("scale", rand(3, low=0.5, high=1.5)), param("bias", rand(3)), const("mean", rand(3)), const("var", rand(3, low=0.5, high=2))],
         lambda x, s, b, m, v: F.batch_norm(x, m.clone(), v.clone(), s, b, training=True, momentum=0.1, eps=1e-5), {"epsilon": {"f": 1e-5}, "momentum": {"f": 0.9}})
    case("BatchNormalization on [N, C] (BatchNorm1d)", "BatchNormalization",
         [param("x", rand(5, 3)), param("scale", rand(3, low=0.5, high=1.5)), param("bias", rand(3)), const("mean", rand(3)), const("var", rand(3, low=0.5, high=2))],
         lambda x, s, b, m, v: F.batch_norm(x, m.clone(), v.clone(), s, b, training=True, momentum=0.1, eps=1e-5), {"epsilon": {"f": 1e-5}, "momentum": {"f": 0.9}})
    case("LayerNormalization over the last axis", "LayerNormalization", [param("x", rand(2, 3, 4)), param("scale", rand(4, low=0.5, high=1.5)), param("bias", rand(4))],
         lambda x, s, b: F.layer_norm(x, (4,), s, b, eps=1e-5), {"axis": {"i": -1}, "epsilon": {"f": 1e-5}})
    case("LayerNormalization over axes 1 and 2", "LayerNormalization", [param("x", rand(2, 3, 4)), param("scale", rand(3, 4, low=0.5, high=1.5)), param("bias", rand(3, 4))],
         lambda x, s, b: F.layer_norm(x, (3, 4), s, b, eps=1e-5), {"axis": {"i": 1}, "epsilon": {"f": 1e-5}})

    # ---- pooling ----
    distinct = RNG.permutation(np.arange(32, dtype=np.float32)).reshape(1, 2, 4, 4) / np.float32(8)
    case("MaxPool 2x2, stride 2", "MaxPool", [param("x", distinct)], lambda x: F.max_pool2d(x, 2, 2), {"kernel_shape": {"ints": [2, 2]}, "strides": {"ints": [2, 2]}})
    case("MaxPool 3x3, stride 1, pads 1 (overlapping windows)", "MaxPool", [param("x", distinct)], lambda x: F.max_pool2d(x, 3, 1, 1),
         {"kernel_shape": {"ints": [3, 3]}, "strides": {"ints": [1, 1]}, "pads": {"ints": [1, 1, 1, 1]}})
    plateau = np.array([[[[1, 1, 0, 2], [1, 0, 2, 2], [3, 3, 1, 1], [3, 3, 1, 1]]]], np.float32)
    case("MaxPool at ties: the first maximum of each window", "MaxPool", [param("x", plateau)], lambda x: F.max_pool2d(x, 2, 2), {"kernel_shape": {"ints": [2, 2]}, "strides": {"ints": [2, 2]}}, kink=True)
    case("MaxPool at ties, overlapping windows", "MaxPool", [param("x", plateau)], lambda x: F.max_pool2d(x, 3, 1, 1),
         {"kernel_shape": {"ints": [3, 3]}, "strides": {"ints": [1, 1]}, "pads": {"ints": [1, 1, 1, 1]}}, kink=True)
    case("AveragePool 3x3, stride 2, pads 1, padding not counted", "AveragePool", [param("x", rand(1, 2, 5, 5))], lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
         {"kernel_shape": {"ints": [3, 3]}, "strides": {"ints": [2, 2]}, "pads": {"ints": [1, 1, 1, 1]}})
    case("AveragePool 3x3, stride 2, pads 1, padding counted", "AveragePool", [param("x", rand(1, 2, 5, 5))], lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=True),
         {"kernel_shape": {"ints": [3, 3]}, "strides": {"ints": [2, 2]}, "pads": {"ints": [1, 1, 1, 1]}, "count_include_pad": {"i": 1}})
    case("GlobalAveragePool", "GlobalAveragePool", [param("x", rand(2, 3, 2, 3))], lambda x: F.adaptive_avg_pool2d(x, 1))
    case("GlobalMaxPool", "GlobalMaxPool", [param("x", distinct)], lambda x: F.adaptive_max_pool2d(x, 1))
    case("GlobalMaxPool at ties: the first maximum", "GlobalMaxPool", [param("x", plateau)], lambda x: F.adaptive_max_pool2d(x, 1), kink=True)

    # ---- reductions ----
    case("ReduceMean over axis 1, kept", "ReduceMean", [param("x", rand(2, 3, 4))], lambda x: x.mean(1, keepdim=True), {"axes": {"ints": [1]}})
    case("ReduceMean over axes 1 and 2, dropped", "ReduceMean", [param("x", rand(2, 3, 4))], lambda x: x.mean((1, 2)), {"axes": {"ints": [1, 2]}, "keepdims": {"i": 0}})
    case("ReduceSum over axis 1 (axes input), kept", "ReduceSum", [param("x", rand(2, 3, 4)), const("axes", [1], "int64")], lambda x, axes: x.sum(1, keepdim=True))
    case("ReduceSum over every axis, dropped", "ReduceSum", [param("x", rand(2, 3))], lambda x: x.sum(), {"keepdims": {"i": 0}})
    distinct3 = (RNG.permutation(np.arange(24, dtype=np.float32)).reshape(2, 3, 4) / np.float32(6)).astype(np.float32)
    ties3 = np.array([[[1, 2, 2, 0], [0, 0, 0, 0], [3, 1, 3, 3]], [[2, 2, 1, 1], [5, 4, 5, 4], [1, 1, 1, 1]]], np.float32)
    case("ReduceMax over axis 2, dropped", "ReduceMax", [param("x", distinct3)], lambda x: first_extreme(x, [2], False, True), {"axes": {"ints": [2]}, "keepdims": {"i": 0}})
    case("ReduceMax over axes 1 and 2, kept", "ReduceMax", [param("x", distinct3)], lambda x: first_extreme(x, [1, 2], True, True), {"axes": {"ints": [1, 2]}})
    case("ReduceMax at ties: the first maximum", "ReduceMax", [param("x", ties3)], lambda x: first_extreme(x, [2], False, True), {"axes": {"ints": [2]}, "keepdims": {"i": 0}}, kink=True)
    case("ReduceMin over axis 1, kept", "ReduceMin", [param("x", distinct3)], lambda x: first_extreme(x, [1], True, False), {"axes": {"ints": [1]}})
    case("ReduceMin at ties: the first minimum", "ReduceMin", [param("x", ties3)], lambda x: first_extreme(x, [2], False, False), {"axes": {"ints": [2]}, "keepdims": {"i": 0}}, kink=True)
    case("ReduceL2 over axis 1, kept (F.normalize's norm)", "ReduceL2", [param("x", away(2, 3, 4))], lambda x: torch.linalg.vector_norm(x, dim=1, keepdim=True), {"axes": {"ints": [1]}})

    # ---- linear ----
    case("Gemm, transB, alpha 0.5, beta 2, C broadcast (nn.Linear's form)", "Gemm", [param("a", rand(2, 3)), param("b", rand(4, 3)), param("c", rand(4))],
         lambda a, b, c: 0.5 * a @ b.t() + 2 * c, {"alpha": {"f": 0.5}, "beta": {"f": 2.0}, "transB": {"i": 1}})
    case("Gemm, transA, C [2, 1]", "Gemm", [param("a", rand(3, 2)), param("b", rand(3, 4)), param("c", rand(2, 1))], lambda a, b, c: a.t() @ b + c, {"transA": {"i": 1}})
    case("MatMul 2-D", "MatMul", [param("a", rand(2, 3)), param("b", rand(3, 4))], torch.matmul)
    case("MatMul batched, the right operand broadcast", "MatMul", [param("a", rand(2, 2, 3)), param("b", rand(3, 4))], torch.matmul)
    case("MatMul batched, both operands", "MatMul", [param("a", rand(2, 1, 2, 3)), param("b", rand(3, 3, 4))], torch.matmul)

    # ---- shapes ----
    case("Flatten at axis 2", "Flatten", [param("x", rand(2, 3, 2, 2))], lambda x: x.reshape(6, 4), {"axis": {"i": 2}})
    case("Reshape with 0 and -1", "Reshape", [param("x", rand(2, 3, 4)), const("shape", [0, -1], "int64")], lambda x, s: x.reshape(2, 12))
    case("Squeeze axis 1", "Squeeze", [param("x", rand(2, 1, 3)), const("axes", [1], "int64")], lambda x, a: x.squeeze(1))
    case("Unsqueeze axes 0 and 3", "Unsqueeze", [param("x", rand(2, 3)), const("axes", [0, 3], "int64")], lambda x, a: x.reshape(1, 2, 3, 1))
    case("Transpose perm [2, 0, 1]", "Transpose", [param("x", rand(2, 3, 4))], lambda x: x.permute(2, 0, 1), {"perm": {"ints": [2, 0, 1]}})
    case("Expand [3, 1] to [2, 3, 4]", "Expand", [param("x", rand(3, 1)), const("shape", [2, 3, 4], "int64")], lambda x, s: x.expand(2, 3, 4))
    case("Concat along axis 1", "Concat", [param("a", rand(2, 3)), param("b", rand(2, 1)), param("c", rand(2, 2))], lambda a, b, c: torch.cat([a, b, c], 1), {"axis": {"i": 1}})
    case("Split along axis 1 into [1, 3]: part 1 (part 0 gets no gradient)", "Split", [param("x", rand(2, 4)), const("split", [1, 3], "int64")],
         lambda x, s: torch.split(x, [1, 3], 1)[1], {"axis": {"i": 1}}, output=1, outputs=2)
    case("Split along axis 0 into equal parts: part 0", "Split", [param("x", rand(4, 3))], lambda x: torch.split(x, 2, 0)[0], output=0, outputs=2)
    case("Slice [1:3, 0:4] (axes input)", "Slice", [param("x", rand(3, 5)), const("starts", [1, 0], "int64"), const("ends", [3, 4], "int64"), const("axes", [0, 1], "int64")],
         lambda x, *rest: x[1:3, 0:4])
    case("Slice with negative bounds, no axes", "Slice", [param("x", rand(3, 5)), const("starts", [-2, 1], "int64"), const("ends", [3, -1], "int64")], lambda x, *rest: x[-2:3, 1:-1])
    case("Pad constant 0.5, pads [0, 1, 0, 2]", "Pad", [param("x", rand(2, 3)), const("pads", [0, 1, 0, 2], "int64"), const("value", 0.5)],
         lambda x, p, v: F.pad(x, (1, 2), value=0.5))
    case("Gather along axis 1, repeated indices (scattered back, added)", "Gather", [param("x", rand(2, 3)), const("indices", [2, 0, 2], "int64")],
         lambda x, i: torch.index_select(x, 1, i), {"axis": {"i": 1}})
    case("Gather a scalar index along axis 0 (a class token)", "Gather", [param("x", rand(3, 4)), const("indices", 1, "int64")], lambda x, i: x[1])

    # ---- LpNormalization (after the others, so that their drawn values stay as they were) ----
    case("LpNormalization p 2 over axis 1", "LpNormalization", [param("x", rand(2, 3, 4))], lambda x: x / x.norm(2, 1, keepdim=True), {"axis": {"i": 1}, "p": {"i": 2}})
    case("LpNormalization, defaults (p 2, the last axis)", "LpNormalization", [param("x", rand(3, 5))], lambda x: x / x.norm(2, -1, keepdim=True))
    case("LpNormalization p 1 over axis 0", "LpNormalization", [param("x", away(3, 4))], lambda x: x / x.norm(1, 0, keepdim=True), {"axis": {"i": 0}, "p": {"i": 1}})


def loss_of(fn, tensors, seed):
    return (fn(*tensors) * seed).sum()


def run(c):
    present = [i for i in c["inputs"] if i["name"]]
    tensors = []
    for i in present:
        t = torch.from_numpy(np.array(i["value"]))
        if i["type"] == "float32":
            t = t.double().requires_grad_(i["trained"])
        tensors.append(t)
    y = c["fn"](*tensors)
    seed = torch.from_numpy(RNG.standard_normal(tuple(y.shape)).astype(np.float32)).double()
    (y * seed).sum().backward()
    record = {
        "name": c["name"],
        "op": c["op"],
        "attributes": c["attributes"],
        "inputs": [{"name": ""} if not i["name"] else {"name": i["name"], "type": i["type"], "dims": list(np.shape(i["value"])),
                                                        "values": np.asarray(i["value"]).astype(np.float64 if i["type"] == "float32" else np.int64).flatten().tolist() if i["type"] != "bool"
                                                        else np.asarray(i["value"]).flatten().astype(bool).tolist(), "trained": i["trained"]} for i in c["inputs"]],
        "outputs": c["outputs"],
        "output": c["output"],
        "outputDims": list(y.shape),
        "kink": c["kink"],
        "seed": seed.flatten().tolist(),
        "expectedOutput": y.detach().flatten().tolist(),
        "gradients": {i["name"]: t.grad.flatten().tolist() for i, t in zip(present, tensors) if i["trained"]},
    }
    if not c["kink"]:
        h = 1e-6
        differences = {}
        for k, (i, t) in enumerate(zip(present, tensors)):
            if not i["trained"]:
                continue
            base = t.detach().clone()
            numeric = torch.zeros_like(base).flatten()
            for e in range(base.numel()):
                values = []
                for sign in (1, -1):
                    moved = base.clone().flatten()
                    moved[e] += sign * h
                    args = [moved.reshape(base.shape) if j == k else u.detach() for j, u in enumerate(tensors)]
                    with torch.no_grad():
                        values.append(float(loss_of(c["fn"], args, seed)))
                numeric[e] = (values[0] - values[1]) / (2 * h)
            differences[i["name"]] = numeric.tolist()
        record["finiteDifferences"] = differences
    return record


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "spec/fixtures/operator-gradients/cases.json"
    torch.set_num_threads(1)
    build()
    records = [run(c) for c in CASES]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"generator": "scripts/reference/torch_operator_gradients.py", "torch": torch.__version__, "opset": 17, "cases": records}, f)
        f.write("\n")
    print(f"{out}: {len(records)} cases, {len({r['op'] for r in records})} operators")


if __name__ == "__main__":
    main()
