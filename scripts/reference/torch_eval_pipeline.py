#!/usr/bin/python3
"""PyTorch's side of `dml eval` on an image folder, end to end and timed, for the GPU machine's comparison
(scripts/gpu/graph-trainer-gpu.sh, part eval-resnet50) and for a CPU check of the same:

    /usr/bin/python3 scripts/reference/torch_eval_pipeline.py make-data DIR [--classes 100] [--per-class 100] [--size 256] [--seed 0]
    /usr/bin/python3 scripts/reference/torch_eval_pipeline.py run DIR [--arch resnet50] [--dim 128] [--device cuda|cpu]
                                                                  [--workers N] [--batch 64] [--cluster-counts 1x,2x,5x,10x,30x]

make-data writes CLASSES folders of PER_CLASS JPEGs (SIZE x SIZE, quality 90): each class a seeded smooth
colour pattern, each image that pattern shifted, scaled in brightness and noised, so that classes are
findable and k-means has structure. Deterministic for a seed.

run embeds every image of DIR (one subfolder per class) with the network export_torchvision.py exports for
ARCH (the same seed, so the same weights as its ONNX file; at 224 px), through torchvision's eval transform
(Resize(256) bilinear with antialias, CenterCrop(224), ToTensor, ImageNet Normalize: the pixels of `dml eval
--resample bilinear` on a model without preprocessing metadata; by default dml eval resizes with sharp's
linear kernel instead, and its metrics then differ a little), decoded by PIL in WORKERS DataLoader
processes (default: the CPU count), the model on DEVICE; then, as `dml eval` does with query set = gallery set: exact search
on DEVICE (inner products of the L2-normalised embeddings, the query itself left out) for Recall@1 and
MAP@R, and k-means at each cluster count (faiss when importable, else scikit-learn's KMeans with one
initialisation, else none: said in the output) with NMI against the labels. Prints one JSON line: the
seconds of each stage, the total from the start of the data loading, and the metrics (to see that the
two sides agree).
Debian: python3-torch, python3-torchvision, python3-pil, python3-numpy (+ python3-faiss or python3-sklearn).
A reference only: dmlkit never runs Python.
"""
import argparse
import json
import os
import sys
import time

import numpy as np


def make_data(args):
    from PIL import Image

    rng = np.random.default_rng(args.seed)
    size = args.size
    yy, xx = np.mgrid[0:size * 2, 0:size * 2].astype(np.float32) / (size * 2)
    for c in range(args.classes):
        folder = os.path.join(args.dir, f"class_{c:03d}")
        os.makedirs(folder, exist_ok=True)
        # A pattern twice the image size: colour waves of a class's own frequencies and phases.
        freq = rng.uniform(1, 6, (3, 2))
        phase = rng.uniform(0, 2 * np.pi, 3)
        base = rng.uniform(60, 200, 3)
        pattern = np.stack([base[k] + 50 * np.sin(2 * np.pi * (freq[k, 0] * xx + freq[k, 1] * yy) + phase[k]) for k in range(3)], -1)
        for i in range(args.per_class):
            dy, dx = rng.integers(0, size, 2)
            crop = pattern[dy:dy + size, dx:dx + size] * rng.uniform(0.8, 1.2) + rng.normal(0, 12, (size, size, 3))
            Image.fromarray(np.clip(crop, 0, 255).astype(np.uint8)).save(os.path.join(folder, f"{i:04d}.jpg"), quality=90)
    print(json.dumps({"dir": args.dir, "classes": args.classes, "perClass": args.per_class, "size": size}))


def recall_and_map_at_r(embeddings, labels, device):
    """Recall@1 and MAP@R with query set = gallery set, the query left out (dmlkit's definitions)."""
    import torch

    x = embeddings.to(device)
    y = torch.as_tensor(labels, device=device)
    counts = torch.bincount(y)
    r_of = counts[y] - 1
    r_max = int(r_of.max())
    hits1 = 0
    map_sum = 0.0
    for start in range(0, len(x), 1024):
        q = x[start:start + 1024]
        sims = q @ x.T
        idx = torch.arange(start, start + len(q), device=device)
        sims[torch.arange(len(q), device=device), idx] = -float("inf")
        top = sims.topk(r_max, dim=1).indices
        same = (y[top] == y[idx, None]).float()
        hits1 += int(same[:, 0].sum())
        r = r_of[idx]
        ranks = torch.arange(1, r_max + 1, device=device, dtype=torch.float32)
        within = ranks[None, :] <= r[:, None]
        precision = torch.cumsum(same, 1) / ranks
        map_sum += float(((precision * same * within).sum(1) / r.clamp(min=1)).sum())
    return hits1 / len(x), map_sum / len(x)


def kmeans_nmi(embeddings, labels, counts):
    """NMI of k-means at each cluster count, with the library that is there."""
    x = np.ascontiguousarray(embeddings, dtype=np.float32)
    try:
        import faiss

        def cluster(k):
            km = faiss.Kmeans(x.shape[1], k, niter=100, seed=0, spherical=False)
            km.train(x)
            return km.index.search(x, 1)[1][:, 0]
        library = "faiss"
    except ImportError:
        try:
            from sklearn.cluster import KMeans

            def cluster(k):
                return KMeans(k, n_init=1, random_state=0, max_iter=100).fit_predict(x)
            library = "scikit-learn"
        except ImportError:
            return None, {}
    from sklearn.metrics import normalized_mutual_info_score

    return library, {str(k): float(normalized_mutual_info_score(labels, cluster(k))) for k in counts}


def run(args):
    import torch
    from torchvision import datasets, transforms

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from export_torchvision import Embedder

    device = torch.device(args.device)
    torch.manual_seed(0)
    model = Embedder(args.arch, args.dim, 224).eval().to(device)
    transform = transforms.Compose([
        transforms.Resize(256, antialias=True),
        transforms.CenterCrop(224),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    times = {}
    start = time.perf_counter()
    data = datasets.ImageFolder(args.dir, transform=transform)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch, num_workers=args.workers, pin_memory=device.type == "cuda")
    parts, labels = [], []
    with torch.no_grad():
        for images, y in loader:
            parts.append(model(images.to(device, non_blocking=True)))
            labels.append(y)
    embeddings = torch.cat(parts)
    labels = torch.cat(labels).numpy()
    if device.type == "cuda":
        torch.cuda.synchronize()
    times["embed"] = time.perf_counter() - start
    mark = time.perf_counter()
    r1, map_r = recall_and_map_at_r(embeddings, labels, device)
    times["search"] = time.perf_counter() - mark
    mark = time.perf_counter()
    classes = len(data.classes)
    # As dml eval: a count above the number of images is that number.
    counts = sorted({min(len(data), int(float(c.rstrip("x")) * classes)) for c in args.cluster_counts.split(",")})
    library, nmi = kmeans_nmi(embeddings.cpu().numpy(), labels, counts)
    times["kmeans"] = time.perf_counter() - mark
    times["total"] = time.perf_counter() - start
    print(json.dumps({"images": len(data), "classes": classes, "device": str(device), "workers": args.workers, "batch": args.batch,
                      "seconds": {k: round(v, 3) for k, v in times.items()}, "imagesPerSecondEmbed": round(len(data) / times["embed"], 1),
                      "recallAt1": r1, "mapAtR": map_r, "kmeansLibrary": library, "nmi": nmi, "torch": torch.__version__}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("make-data")
    make.add_argument("dir")
    make.add_argument("--classes", type=int, default=100)
    make.add_argument("--per-class", type=int, default=100)
    make.add_argument("--size", type=int, default=256)
    make.add_argument("--seed", type=int, default=0)
    go = sub.add_parser("run")
    go.add_argument("dir")
    go.add_argument("--arch", default="resnet50")
    go.add_argument("--dim", type=int, default=128)
    go.add_argument("--device", default="cuda")
    go.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    go.add_argument("--batch", type=int, default=64)
    go.add_argument("--cluster-counts", default="1x,2x,5x,10x,30x")
    args = parser.parse_args()
    make_data(args) if args.command == "make-data" else run(args)


if __name__ == "__main__":
    main()
