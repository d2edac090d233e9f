#!/usr/bin/python3
"""Generate spec/fixtures/hub/: tiny stand-ins of Hub-format ONNX image embedders, their
preprocessor_config.json files, and reference embeddings computed with each ecosystem's preprocessing.

Dev-only, never a dmlkit dependency. Debian: python3-torch, python3-onnx, python3-numpy, python3-pil.

    /usr/bin/python3 scripts/reference/make_hub_fixtures.py

There is no transformers package here, so the models are written in plain torch with the interfaces
transformers/optimum exports have (input `pixel_values` [batch_size, num_channels, height, width];
outputs `last_hidden_state` [batch_size, T, D] and `pooler_output` [batch_size, D], or `image_embeds`
[batch_size, E] for CLIP's vision model with projection), and the Hugging Face image processors are
re-implemented from their published algorithm with Pillow:

  convert RGB -> resize (Pillow Image.resize, the config's resample, reducing_gap None) ->
  centre crop (offset (H - h) // 2, zero padding ceil((h - H) / 2) before) ->
  rescale (float64 * rescale_factor, stored float32) -> normalise ((x - mean) / std in float32) -> NCHW.

Shortest-edge sizes follow transformers' get_resize_output_image_size (long side int(size * long / short)).
Reference embeddings are the float64 forward pass of the float32 weights, L2-normalised.

Folders (each as the Hub lays it out: the config at the root, the ONNX files under onnx/):
  vit/      ViTImageProcessor  (size {height, width} 32, bilinear, mean = std = 0.5, no crop);
            onnx/model.onnx and onnx/model_fp16.onnx (float16 weights, inputs and outputs)
  dinov2/   BitImageProcessor  (shortest_edge 36, bicubic, crop 32, ImageNet statistics);
            onnx/model.onnx + onnx/model.onnx_data (external data)
  clip/     CLIPImageProcessor (shortest_edge 32, bicubic, crop 32, CLIP statistics); image_embeds output
  siglip/   SiglipImageProcessor (size {height, width} 32, bicubic, no crop, mean = std = 0.5)
  convnext/ ConvNextImageProcessor (shortest_edge 32, crop_pct 0.875: resize 36, crop 32, bicubic)
Also resample/: a 53x37 image and Pillow's resizes of it with each filter, for the resampler spec.
"""
import hashlib
import json
import math
import os

import numpy as np
import onnx
import PIL
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper, TensorProto
from PIL import Image

SEED = 20261126
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(REPO, "spec", "fixtures", "hub")
OPSET = 14
DIM = 16
PATCH = 8
SIZE = 32

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

CONFIGS = {
    "vit": {
        "image_processor_type": "ViTImageProcessor", "do_resize": True, "size": {"height": SIZE, "width": SIZE},
        "resample": 2, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
    },
    "dinov2": {
        "image_processor_type": "BitImageProcessor", "do_resize": True, "size": {"shortest_edge": 36}, "resample": 3,
        "do_center_crop": True, "crop_size": {"height": SIZE, "width": SIZE}, "do_rescale": True,
        "rescale_factor": 0.00392156862745098, "do_normalize": True, "image_mean": IMAGENET_MEAN,
        "image_std": IMAGENET_STD, "do_convert_rgb": True,
    },
    "clip": {
        "image_processor_type": "CLIPImageProcessor", "do_resize": True, "size": {"shortest_edge": SIZE}, "resample": 3,
        "do_center_crop": True, "crop_size": {"height": SIZE, "width": SIZE}, "do_rescale": True,
        "rescale_factor": 0.00392156862745098, "do_normalize": True, "image_mean": CLIP_MEAN, "image_std": CLIP_STD,
        "do_convert_rgb": True,
    },
    "siglip": {
        "image_processor_type": "SiglipImageProcessor", "do_resize": True, "size": {"height": SIZE, "width": SIZE},
        "resample": 3, "do_rescale": True, "rescale_factor": 0.00392156862745098, "do_normalize": True,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
    },
    "convnext": {
        "image_processor_type": "ConvNextImageProcessor", "do_resize": True, "size": {"shortest_edge": SIZE},
        "crop_pct": 0.875, "resample": 3, "do_rescale": True, "rescale_factor": 0.00392156862745098,
        "do_normalize": True, "image_mean": IMAGENET_MEAN, "image_std": IMAGENET_STD,
    },
}

# Image sizes: landscape, portrait, square, smaller than the resize target (upscaled), a long strip.
IMAGE_SIZES = {"a/wide.png": (90, 60), "a/tall.png": (47, 83), "b/square.png": (64, 64), "b/small.png": (29, 23),
               "c/strip.png": (121, 40), "c/odd.png": (51, 45)}


# ---------------------------------------------------------------------------------------------------
# Images


def make_image(rng, width, height):
    """A smooth photo-like RGB image: colour gradients, a disc, stripes and a little noise."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    a = np.zeros((height, width, 3))
    a[..., 0] = 255 * x / max(1, width - 1)
    a[..., 1] = 255 * (0.5 + 0.5 * np.sin(y / max(2, height) * 6 + rng.uniform(0, 6)))
    a[..., 2] = 128 + 100 * np.cos((x + y) / 9 + rng.uniform(0, 6))
    cx, cy, r = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(5, 20)
    a[(x - cx) ** 2 + (y - cy) ** 2 < r * r] = rng.uniform(0, 255, 3)
    a += rng.normal(0, 6, a.shape)
    return np.clip(np.rint(a), 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------------------
# Hugging Face image processor, from its published algorithm


PIL_FILTERS = {0: Image.NEAREST, 1: Image.LANCZOS, 2: Image.BILINEAR, 3: Image.BICUBIC}


def hf_preprocess(path, cfg):
    """Returns the float32 NCHW tensor [1, 3, h, w] transformers' image processor makes of the image."""
    im = Image.open(path).convert("RGB")
    resample = PIL_FILTERS[cfg.get("resample", 2)]
    size = cfg["size"]
    crop = cfg.get("crop_size") if cfg.get("do_center_crop", False) else None
    if "crop_pct" in cfg:
        edge = size["shortest_edge"]
        size = {"shortest_edge": int(edge / cfg["crop_pct"])}
        crop = {"height": edge, "width": edge}
    if "height" in size:
        im = im.resize((size["width"], size["height"]), resample=resample, reducing_gap=None)
    else:
        w, h = im.size
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = size["shortest_edge"], int(size["shortest_edge"] * long / short)
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
        im = im.resize((new_w, new_h), resample=resample, reducing_gap=None)
    a = np.asarray(im)  # H, W, C uint8
    if crop is not None:
        ch, cw = crop["height"], crop["width"]
        H, W = a.shape[:2]
        top, left = (H - ch) // 2, (W - cw) // 2
        nh, nw = max(ch, H), max(cw, W)
        padded = np.zeros((nh, nw, 3), dtype=a.dtype)
        tp, lp = math.ceil((nh - H) / 2), math.ceil((nw - W) / 2)
        padded[tp:tp + H, lp:lp + W] = a
        top, left = top + tp, left + lp
        a = padded[max(0, top):min(nh, top + ch), max(0, left):min(nw, left + cw)]
    x = (a.astype(np.float64) * cfg["rescale_factor"]).astype(np.float32)
    mean = np.array(cfg["image_mean"], dtype=np.float32)
    std = np.array(cfg["image_std"], dtype=np.float32)
    x = (x - mean) / std
    return x.transpose(2, 0, 1)[None].astype(np.float32)


# ---------------------------------------------------------------------------------------------------
# Models


class TinyViT(nn.Module):
    """A ViT-shaped stand-in: patch embedding + class token + one MLP block with token mixing."""

    def __init__(self, projection=None):
        super().__init__()
        tokens = (SIZE // PATCH) ** 2 + 1
        self.patch = nn.Conv2d(3, DIM, PATCH, stride=PATCH)
        self.cls = nn.Parameter(torch.randn(1, 1, DIM) * 0.5)
        self.pos = nn.Parameter(torch.randn(1, tokens, DIM) * 0.5)
        self.norm1 = nn.LayerNorm(DIM)
        self.fc1 = nn.Linear(DIM, 2 * DIM)
        self.fc2 = nn.Linear(2 * DIM, DIM)
        self.mix = nn.Linear(DIM, DIM)
        self.norm = nn.LayerNorm(DIM)
        self.pool = nn.Linear(DIM, DIM)
        self.projection = nn.Linear(DIM, projection, bias=False) if projection else None
        with torch.no_grad():
            for p in [self.norm1.weight, self.norm.weight]:
                p.add_(torch.randn_like(p) * 0.3)
            for p in [self.norm1.bias, self.norm.bias]:
                p.add_(torch.randn_like(p) * 0.3)

    def forward(self, pixel_values):
        p = self.patch(pixel_values).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls.expand(pixel_values.shape[0], -1, -1), p], 1) + self.pos
        h = h + self.fc2(F.gelu(self.fc1(self.norm1(h))))
        h = h + self.mix(h.mean(1, keepdim=True))
        h = self.norm(h)
        pooled = torch.tanh(self.pool(h[:, 0]))
        if self.projection is not None:
            return self.projection(pooled), h
        return h, pooled


def export(model, path, output_names):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    axes = {"pixel_values": {0: "batch_size", 1: "num_channels", 2: "height", 3: "width"}}
    for name in output_names:
        axes[name] = {0: "batch_size"}
    torch.onnx.export(model, torch.zeros(2, 3, SIZE, SIZE), path, input_names=["pixel_values"], output_names=output_names,
                      dynamic_axes=axes, opset_version=OPSET, do_constant_folding=True)
    m = onnx.load(path)
    m.producer_name = "stand-in"
    onnx.save(m, path)


def to_float16(src, dst):
    """Converts a float32 model to float16 weights, inputs and outputs (as transformers.js' model_fp16.onnx)."""
    m = onnx.load(src)
    g = m.graph
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for n in g.node:
        for a in n.attribute:
            if a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16)))
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]
    onnx.checker.check_model(m)
    onnx.save(m, dst)


def embed(model, x, output):
    with torch.no_grad():
        out = model.double()(torch.from_numpy(x).double())
        model.float()
    a, b = out
    vec = {"pooler_output": b, "image_embeds": a, "last_hidden_state": a}[output]
    return vec


def l2(v):
    v = np.asarray(v, dtype=np.float64)
    return (v / np.linalg.norm(v)).tolist()


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def main():
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    images_dir = os.path.join(OUT, "images")
    os.makedirs(images_dir, exist_ok=True)
    for rel, (w, h) in IMAGE_SIZES.items():
        os.makedirs(os.path.join(images_dir, os.path.dirname(rel)), exist_ok=True)
        Image.fromarray(make_image(rng, w, h)).save(os.path.join(images_dir, rel), optimize=False)

    reference = {"generator": "scripts/reference/make_hub_fixtures.py", "seed": SEED,
                 "versions": {"torch": torch.__version__, "onnx": onnx.__version__, "numpy": np.__version__,
                              "pillow": PIL.__version__},
                 "models": {}}
    for name, cfg in CONFIGS.items():
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
        clip = name == "clip"
        model = TinyViT(projection=8 if clip else None).eval()
        outputs = ["image_embeds", "last_hidden_state"] if clip else ["last_hidden_state", "pooler_output"]
        onnx_path = os.path.join(folder, "onnx", "model.onnx")
        export(model, onnx_path, outputs)
        if name == "dinov2":
            m = onnx.load(onnx_path)
            onnx.save(m, onnx_path, save_as_external_data=True, all_tensors_to_one_file=True,
                      location="model.onnx_data", size_threshold=0)
        if name == "vit":
            to_float16(onnx_path, os.path.join(folder, "onnx", "model_fp16.onnx"))
        entry = {"outputs": outputs, "embeddings": {}, "cls": {}, "mean": {}}
        for rel in IMAGE_SIZES:
            x = hf_preprocess(os.path.join(images_dir, rel), cfg)
            with torch.no_grad():
                a, b = model.double()(torch.from_numpy(x).double())
            model.float()
            tokens, pooled = (b, a) if clip else (a, b)
            entry["embeddings"][rel] = l2(pooled[0].numpy())
            entry["cls"][rel] = l2(tokens[0, 0].numpy())
            entry["mean"][rel] = l2(tokens[0, 1:].mean(0).numpy())
        entry["files"] = {os.path.relpath(os.path.join(dp, f), folder): sha(os.path.join(dp, f))
                          for dp, _, fs in os.walk(folder) for f in sorted(fs)}
        reference["models"][name] = entry

    # Pillow's resizes of one image, for the resampler spec.
    rs = os.path.join(OUT, "resample")
    os.makedirs(rs, exist_ok=True)
    src = make_image(rng, 53, 37)
    Image.fromarray(src).save(os.path.join(rs, "source.png"), optimize=False)
    names = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic"}
    for code, filt in names.items():
        for (w, h) in [(20, 15), (100, 81), (31, 52)]:
            Image.fromarray(src).resize((w, h), PIL_FILTERS[code], reducing_gap=None).save(
                os.path.join(rs, f"{filt}_{w}x{h}.png"), optimize=False)

    with open(os.path.join(OUT, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
