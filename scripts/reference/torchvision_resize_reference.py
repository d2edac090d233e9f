#!/usr/bin/python3
"""Reference of scripts/experiments/torchvision-resize.ts: a torchvision network's embeddings of images
preprocessed by torchvision's own eval transform.

    /usr/bin/python3 scripts/reference/torchvision_resize_reference.py OUT_DIR IMAGE...

Exports a random-weight ResNet-18 embedder (scripts/reference/export_torchvision.py's, seed 0, 224 px)
to OUT_DIR/model.onnx with no preprocessing metadata (what a user's torchvision export looks like), and
writes OUT_DIR/reference.json: per image, the L2-normalised embedding (float64) of
Resize(256) (bilinear: on a PIL image torchvision uses Pillow's antialiased filter), CenterCrop(224),
ToTensor, Normalize(ImageNet). A reference only.
"""
import json
import os
import sys

import torch
from PIL import Image
from torchvision import transforms

sys.path.insert(0, os.path.dirname(__file__))
from export_torchvision import Embedder  # noqa: E402


def main():
    out, images = sys.argv[1], sys.argv[2:]
    torch.manual_seed(0)
    model = Embedder("resnet18", 128, 224).eval()
    torch.onnx.export(model, torch.randn(1, 3, 224, 224), os.path.join(out, "model.onnx"), input_names=["input"], output_names=["embedding"],
                      opset_version=17, dynamic_axes={"input": {0: "batch"}, "embedding": {0: "batch"}})
    transform = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(),
                                    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    model = model.double()
    with torch.no_grad():
        embeddings = {image: model(transform(Image.open(image).convert("RGB")).double()[None])[0].tolist() for image in images}
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump({"torch": torch.__version__, "embeddings": embeddings}, f)


if __name__ == "__main__":
    main()
