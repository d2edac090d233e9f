#!/usr/bin/python3
"""The timm fixture of spec/image/timm-config.spec.ts: timm's eval transform on the hub fixture images.

    /usr/bin/python3 scripts/reference/timm_eval_transform.py spec/fixtures/hub

For two timm `config.json` files (written to <out>/timm/<name>/config.json: a `center` crop_mode config
with bicubic interpolation and crop_pct 0.9 at 32 x 32, and a `squash` one, bilinear, crop_pct 0.8 at
24 x 32, 1 channel... no: 3 channels, its own mean/std) it writes <out>/timm/reference.json: per config
and image, the preprocessed CHW float32 tensor as timm.data.transforms_factory.transforms_imagenet_eval
builds it (timm is not installed here; its eval transform is written out with torchvision, as timm
0.9 does: scale_size = floor(size / crop_pct); center: Resize(scale_size[0]) (shorter side) then
CenterCrop(size); squash: Resize(scale_size) then CenterCrop(size); ToTensor; Normalize(mean, std)).
torchvision resizes PIL images with Pillow's filter (antialiased). A reference only.
"""
import json
import math
import os
import sys

import numpy as np
import PIL
import torch
import torchvision
from PIL import Image
from torchvision import transforms

CONFIGS = {
    "center": {"architecture": "resnet_stand_in", "pretrained_cfg": {"input_size": [3, 32, 32], "interpolation": "bicubic", "crop_pct": 0.9, "crop_mode": "center", "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}},
    "squash": {"architecture": "vit_stand_in", "pretrained_cfg": {"input_size": [3, 24, 32], "interpolation": "bilinear", "crop_pct": 0.8, "crop_mode": "squash", "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}},
}
MODES = {"bicubic": transforms.InterpolationMode.BICUBIC, "bilinear": transforms.InterpolationMode.BILINEAR}


def eval_transform(cfg):
    _, h, w = cfg["input_size"]
    scale = (math.floor(h / cfg["crop_pct"]), math.floor(w / cfg["crop_pct"]))
    mode = MODES[cfg["interpolation"]]
    if cfg["crop_mode"] == "squash":
        resize = transforms.Resize(scale, interpolation=mode)
    else:
        assert scale[0] == scale[1]
        resize = transforms.Resize(scale[0], interpolation=mode)
    return transforms.Compose([resize, transforms.CenterCrop((h, w)), transforms.ToTensor(), transforms.Normalize(cfg["mean"], cfg["std"])])


def main():
    out = sys.argv[1]
    images = sorted(os.path.join(d, f) for d in ("a", "b", "c") for f in os.listdir(os.path.join(out, "images", d)))
    reference = {"source": "scripts/reference/timm_eval_transform.py (torch %s, torchvision %s, Pillow %s)" % (torch.__version__, torchvision.__version__, PIL.__version__), "cases": []}
    for name, config in CONFIGS.items():
        folder = os.path.join(out, "timm", name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f, indent=1)
        transform = eval_transform(config["pretrained_cfg"])
        for image in images:
            x = transform(Image.open(os.path.join(out, "images", image)).convert("RGB")).numpy().astype(np.float32)
            reference["cases"].append({"config": name, "image": image, "shape": list(x.shape), "values": [round(float(v), 7) for v in x.ravel()]})
    with open(os.path.join(out, "timm", "reference.json"), "w") as f:
        json.dump(reference, f)


if __name__ == "__main__":
    main()
