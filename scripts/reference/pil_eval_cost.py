"""What PIL and torchvision's eval transform cost per JPEG, stage by stage, one image at a time in one
process: the reference rows of scripts/experiments/eval-image-cost.ts (dmlkit never runs Python).

    python3 scripts/reference/pil_eval_cost.py FILE_LIST ROUNDS

FILE_LIST: a text file with one image path per line. Prints one JSON line per round: CPU milliseconds
per image (time.process_time) of decoding to RGB (`Image.open` + `convert('RGB')`, which decodes),
of decoding and resizing the shorter side to 256 (`Resize(256)`, bilinear with antialias, as
torchvision's eval transform does), and of the whole eval transform (`Resize(256)`, `CenterCrop(224)`,
`ToTensor()`, `Normalize` with ImageNet's mean and std).
"""
import json
import sys
import time

from PIL import Image
import torchvision.transforms as T


def main():
    files = [line.strip() for line in open(sys.argv[1]) if line.strip()]
    rounds = int(sys.argv[2])
    resize = T.Resize(256)
    whole = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    def rgb(path):
        with open(path, "rb") as f:
            return Image.open(f).convert("RGB")

    stages = {"decode": lambda p: rgb(p), "decode + resize": lambda p: resize(rgb(p)), "whole transform": lambda p: whole(rgb(p))}
    for name in stages:  # warm-up
        for path in files[:20]:
            stages[name](path)
    for _ in range(rounds):
        row = {}
        for name, run in stages.items():
            start = time.process_time()
            for path in files:
                run(path)
            row[name] = 1000 * (time.process_time() - start) / len(files)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
