#!/usr/bin/python3
"""Reference timings for scripts/bench/bench-eval.ts --images: PyTorch's DataLoader + the same cheap model.

    /usr/bin/python3 scripts/reference/torch_pipeline.py FOLDER WEIGHTS.json WORKERS BATCH [PASSES]

FOLDER holds one subfolder per class of images. The transform is torchvision's eval transform that
dmlkit reproduces (Resize(256) bilinear with antialias, CenterCrop(224), ToTensor, ImageNet Normalize),
decoded by PIL in WORKERS DataLoader processes. The model is the benchmark's cheap embedder rebuilt
from WEIGHTS.json (Conv 16x16 stride 16 -> ReLU -> global average pool -> Linear -> L2). Prints one
JSON line: decode-only images/s (the DataLoader alone) and end-to-end images/s (DataLoader + model),
each the best of PASSES (default 2) passes over the folder, every pass's rate (`...Runs`) and its CPU
milliseconds per image (`...CpuMs`: this process and its DataLoader workers, which exit at the end of
each pass). Debian: python3-torch, python3-torchvision, python3-pil. A reference only: dmlkit never
runs Python.
"""
import json
import os
import sys
import time

import torch
from torchvision import datasets, transforms


def main():
    folder, weights_path, workers, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    passes = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    torch.set_num_threads(max(1, torch.get_num_threads()))
    w = json.load(open(weights_path))
    conv = torch.nn.Conv2d(3, w["channels"], w["patch"], stride=w["patch"])
    conv.weight.data = torch.tensor(w["convWeight"]).reshape(conv.weight.shape)
    conv.bias.data = torch.tensor(w["convBias"])
    linear = torch.nn.Linear(w["channels"], w["dim"])
    linear.weight.data = torch.tensor(w["linearWeight"]).reshape(w["dim"], w["channels"])
    linear.bias.data = torch.tensor(w["linearBias"])
    model = torch.nn.Sequential(conv, torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), linear).eval()
    tf = transforms.Compose([
        transforms.Resize(256, antialias=True),
        transforms.CenterCrop(224),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    data = datasets.ImageFolder(folder, transform=tf)
    result = {"images": len(data), "workers": workers, "batch": batch}
    def cpu_seconds():
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    for name, run_model in (("decodeImagesPerSecond", False), ("endToEndImagesPerSecond", True)):
        rates, cpu = [], []
        for _ in range(passes):
            loader = torch.utils.data.DataLoader(data, batch_size=batch, num_workers=workers)
            start, cpu_start = time.perf_counter(), cpu_seconds()
            with torch.no_grad():
                for images, _ in loader:
                    if run_model:
                        torch.nn.functional.normalize(model(images), dim=1)
            rates.append(len(data) / (time.perf_counter() - start))
            del loader  # its workers exit and are reaped: their CPU time counts in children_*
            cpu.append((cpu_seconds() - cpu_start) * 1000 / len(data))
        result[name] = max(rates)
        result[name.replace("ImagesPerSecond", "Runs")] = rates
        result[name.replace("ImagesPerSecond", "CpuMs")] = cpu
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
