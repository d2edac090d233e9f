#!/usr/bin/python3
"""Golden values of the losses people reach for first, as pytorch-metric-learning (PML) computes them, for
spec/train/losses/pml-losses.spec.ts.

    /usr/bin/python3 scripts/reference/torch_pml_losses.py [out.json]

Writes spec/fixtures/losses/pml-losses.json (or out.json): for every case a loss name and its options, a batch
of L2-normalised embeddings (rounded to float32) with its labels and, for the losses with a class table, the
table's rows [rows, D] (float32); then, in float64 with torch's autograd, the loss, its gradient with respect
to the embeddings before PML's L2 normalisation (which PML's distances apply, as dmlkit's model does: so a
radial component, which the normalisation removes, does not count) and with respect to the table, and the
count of tuples the loss reports.

PML itself is not installable here: each loss is written out below from PML's source as its documentation
describes it (version 2.x: ProxyAnchorLoss, ProxyNCALoss over NCALoss, NormalizedSoftmaxLoss, ArcFaceLoss,
CosFaceLoss and SubCenterArcFaceLoss over LargeMarginSoftmaxLoss, SoftTripleLoss, CircleLoss, SupConLoss,
FastAPLoss), with its default distances and reducers; `logsumexp` is PML's `lmu.logsumexp`. So are three
miners (BatchHardMiner, PairMarginMiner, MultiSimilarityMiner on their default distances): `miners` holds
what each mines from each batch, and the cases with a `miner` option run a loss on the mined tuples
(ContrastiveLoss, CircleLoss and SupConLoss on the mined pairs, a triplet miner's (a, p, n) as the pairs
(a, p) and (a, n); TripletMarginLoss on BatchHardMiner's triplets). `xbm` holds sequences of batches through
PML's CrossBatchMemory (each step enqueues its batch, then computes the loss of its embeddings against the
memory's detached items, each row's own copy excluded) around ContrastiveLoss, MultiSimilarityLoss (with
MultiSimilarityMiner as XBM's miner) and TripletMarginLoss, after dmlkit's `startStep` plain batch steps:
every step's loss and gradient. The tables are
kept as rows, class-major, as dmlkit keeps them (PML's `W` and `fc` are their transposes). The one
deliberate difference: ArcFace's cos(arccos(c) + m) is computed with arccos here, while dmlkit writes it as
c cos m - sqrt(1 - c^2) sin m, so the two are independent. Seeded; reruns are byte-identical.

Debian: python3-torch, numpy. A reference only, never a dependency of dmlkit.
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20260201
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_OUT = os.path.join(REPO, "spec", "fixtures", "losses", "pml-losses.json")
TINY = torch.finfo(torch.float64).tiny
# A mining decision closer than this to its threshold (or a tie this close) could go the other way in float32.
DECISION_GAP = 1e-4


def clear_of(values, threshold, what):
    gap = float(torch.min(torch.abs(values - threshold))) if values.numel() > 0 else math.inf
    assert gap > DECISION_GAP, "%s: a value within %g of its threshold; change the seed" % (what, gap)


def logsumexp(x, keep_mask, add_one, dim):
    """PML's lmu.logsumexp: excluded entries at -inf, an optional zero logit, rows without a kept entry 0."""
    x = x.masked_fill(~keep_mask, -torch.finfo(x.dtype).max)
    if add_one:
        shape = list(x.shape)
        shape[dim] = 1
        x = torch.cat([x, torch.zeros(shape, dtype=x.dtype)], dim=dim)
    out = torch.logsumexp(x, dim=dim, keepdim=True)
    return out.masked_fill(~torch.any(keep_mask, dim=dim, keepdim=True), 0)


def cross_entropy(logits, labels):
    """torch's CrossEntropyLoss(reduction='none') with PML's MeanReducer."""
    return F.cross_entropy(logits, labels, reduction="none").mean()


def cosines(e, table):
    return e @ F.normalize(table, p=2, dim=1).T


def proxy_anchor(e, y, table, o):
    cos = cosines(e, table)
    pos = F.one_hot(y, o["numClasses"]).bool()
    with_pos = torch.unique(y).numel()
    pos_term = logsumexp(-o["alpha"] * (cos - o["margin"]), pos, True, 0)
    neg_term = logsumexp(o["alpha"] * (cos + o["margin"]), ~pos, True, 0)
    return pos_term.sum() / with_pos + neg_term.sum() / o["numClasses"], len(y)


def proxy_nca(e, y, table, o):
    # NCALoss over the proxies: LpDistance(power=2) of normalised embeddings and proxies, softmax of -s d^2.
    d2 = ((e[:, None, :] - F.normalize(table, p=2, dim=1)[None, :, :]) ** 2).sum(-1)
    probability = torch.softmax(-o["softmaxScale"] * d2, dim=1)
    same = F.one_hot(y, o["numClasses"]).double()
    return (-torch.log((probability * same).sum(1))).mean(), len(y)


def normalized_softmax(e, y, table, o):
    return cross_entropy(cosines(e, table) / o["temperature"], y), len(y)


def large_margin(e, y, table, o, kind):
    cos = cosines(e, table)
    k = o.get("subCenters", 1)
    if k > 1:
        cos = cos.view(len(y), o["numClasses"], k).max(dim=2)[0]
    mask = F.one_hot(y, o["numClasses"]).double()
    target = cos[mask == 1]
    if kind == "cosface":
        modified = target - o["margin"]
    else:
        angles = torch.acos(torch.clamp(target, -1 + 1e-7, 1 - 1e-7))
        modified = torch.cos(angles + math.radians(o["margin"]))
    logits = (cos + mask * (modified - target).unsqueeze(1)) * o["scale"]
    return cross_entropy(logits, y), len(y)


def soft_triple(e, y, table, o):
    centres = cosines(e, table).view(len(y), o["numClasses"], o["centersPerClass"])
    probability = torch.softmax(centres / o["gamma"], dim=2)
    to_classes = (probability * centres).sum(2)
    margin = torch.zeros_like(to_classes)
    margin[torch.arange(len(y)), y] = o["margin"]
    return cross_entropy(o["la"] * (to_classes - margin), y), len(y)


def pair_masks(y):
    same = y[:, None] == y[None, :]
    eye = torch.eye(len(y), dtype=torch.bool)
    return same & ~eye, ~same


def avg_non_zero(losses):
    """PML's AvgNonZeroReducer: the mean of the losses > 0 (0 when none), and their count."""
    count = int((losses > 0).sum())
    return (losses.sum() / count if count > 0 else losses.sum() * 0), count


def circle(e, y, o):
    s = e @ e.T
    pos, neg = mined_masks(e, y, o.get("miner"))
    m, gamma = o["m"], o["gamma"]
    logits = torch.zeros_like(s)
    logits[pos] = -gamma * torch.relu(1 + m - s[pos].detach()) * (s[pos] - (1 - m))
    logits[neg] = gamma * torch.relu(s[neg].detach() + m) * (s[neg] - m)
    losses = F.softplus(logsumexp(logits, pos, False, 1) + logsumexp(logits, neg, False, 1)).squeeze(1)
    keep = (pos.sum(1) > 0) & (neg.sum(1) > 0)
    return avg_non_zero(losses * keep.double())


def supcon(e, y, o):
    pos, neg = mined_masks(e, y, o.get("miner"))
    if not pos.any() or not neg.any():
        return (e.sum() * 0), 0
    mat = (e @ e.T) / o["temperature"]
    mat = mat - mat.max(dim=1, keepdim=True)[0].detach()
    log_prob = mat - logsumexp(mat, pos | neg, False, 1)
    mean_log_prob_pos = (pos.double() * log_prob).sum(1) / (pos.double().sum(1) + TINY)
    return avg_non_zero(-mean_log_prob_pos)


def fast_ap(e, y, o):
    pos, neg = pair_masks(y)
    n_pos = pos.sum(1).double()
    safe_n = n_pos > 0
    d2 = ((e[:, None, :] - e[None, :, :]) ** 2).sum(-1)
    bins = o["numBins"]
    delta = 4.0 / bins
    mid = torch.linspace(0.0, 4.0, steps=bins + 1, dtype=torch.float64).view(-1, 1, 1)
    pulse = torch.relu(1 - torch.abs(d2 - mid) / delta)
    pos_hist = (pulse * pos.double()).sum(2).T
    neg_hist = (pulse * neg.double()).sum(2).T
    h_pos_product = pos_hist * torch.cumsum(pos_hist, dim=1)
    total = torch.cumsum(pos_hist + neg_hist, dim=1)
    safe_h = (h_pos_product > 0) & (total > 0)
    fast_ap = torch.zeros_like(pos_hist)
    fast_ap[safe_h] = h_pos_product[safe_h] / total[safe_h]
    fast_ap = fast_ap.sum(1)[safe_n] / n_pos[safe_n]
    return (1 - fast_ap).mean(), int(safe_n.sum())


def euclidean(e):
    # PML's LpDistance on normalised embeddings; sqrt(2 - 2S) with dmlkit's floor, the same values.
    return torch.sqrt(torch.clamp(2 - 2 * (e @ e.T), min=1e-12))


def batch_hard(e, y, _o):
    d = euclidean(e).detach()
    pos, neg = pair_masks(y)
    anchors, positives, negatives = [], [], []
    for a in range(len(y)):
        if not pos[a].any() or not neg[a].any():
            continue
        anchors.append(a)
        positives.append(int(torch.where(pos[a], d[a], torch.tensor(-1.0, dtype=d.dtype)).argmax()))
        negatives.append(int(torch.where(neg[a], d[a], torch.tensor(9.0, dtype=d.dtype)).argmin()))
        clear_of(d[a][pos[a] & (torch.arange(len(y)) != positives[-1])], d[a, positives[-1]], "batch-hard positive")
        clear_of(d[a][neg[a] & (torch.arange(len(y)) != negatives[-1])], d[a, negatives[-1]], "batch-hard negative")
    return {"anchors": anchors, "positives": positives, "negatives": negatives}


def pair_margin(e, y, o):
    d = euclidean(e).detach()
    pos, neg = pair_masks(y)
    clear_of(d[pos], o["posMargin"], "pair-margin positive")
    clear_of(d[neg], o["negMargin"], "pair-margin negative")
    return {"positive": (pos & (d > o["posMargin"])).nonzero().tolist(), "negative": (neg & (d < o["negMargin"])).nonzero().tolist()}


def multi_similarity(e, y, o):
    s = (e @ e.T).detach()
    pos, neg = pair_masks(y)
    if not pos.any() or not neg.any():
        return {"positive": [], "negative": []}
    hardest_neg = torch.where(neg, s, torch.tensor(-math.inf, dtype=s.dtype)).max(dim=1, keepdim=True)[0]
    hardest_pos = torch.where(pos, s, torch.tensor(math.inf, dtype=s.dtype)).min(dim=1, keepdim=True)[0]
    clear_of((s - o["epsilon"] - hardest_neg)[pos], 0, "multi-similarity positive")
    clear_of((s + o["epsilon"] - hardest_pos)[neg & torch.isfinite(hardest_pos)], 0, "multi-similarity negative")
    return {"positive": (pos & (s - o["epsilon"] < hardest_neg)).nonzero().tolist(), "negative": (neg & (s + o["epsilon"] > hardest_pos)).nonzero().tolist()}


MINERS = {"batch-hard": batch_hard, "pair-margin": pair_margin, "multi-similarity": multi_similarity}


def mined_masks(e, y, miner):
    """The positive and negative pair masks a miner leaves (every pair without one)."""
    pos, neg = pair_masks(y)
    if miner is None:
        return pos, neg
    mined = MINERS[miner["name"]](e, y, miner)
    pos, neg = torch.zeros_like(pos), torch.zeros_like(neg)
    if miner["name"] == "batch-hard":
        for a, p, n in zip(mined["anchors"], mined["positives"], mined["negatives"]):
            pos[a, p] = True
            neg[a, n] = True
    else:
        for a, j in mined["positive"]:
            pos[a, j] = True
        for a, j in mined["negative"]:
            neg[a, j] = True
    return pos, neg


def contrastive_on(d, pos, neg, o):
    """PML's ContrastiveLoss on distances d and pair masks: AvgNonZeroReducer per part, the parts summed."""
    total, count = 0, 0
    for part, mask in ((torch.relu(d - o["posMargin"]), pos), (torch.relu(o["negMargin"] - d), neg)):
        losses = part[mask]
        kept = int((losses > 0).sum())
        if kept > 0:
            total = total + losses.sum() / kept
            count += kept
    return (total if count > 0 else d.sum() * 0), count


def contrastive(e, y, o):
    pos, neg = mined_masks(e, y, o.get("miner"))
    return contrastive_on(euclidean(e), pos, neg, o)


def triplet_margin_batch_hard(e, y, o):
    t = batch_hard(e, y, o)
    d = euclidean(e)
    a, p, n = (torch.tensor(t[k], dtype=torch.long) for k in ("anchors", "positives", "negatives"))
    return avg_non_zero(torch.relu(d[a, p] - d[a, n] + o["margin"]))


TABLE_LOSSES = {
    "proxy-anchor": proxy_anchor,
    "proxy-nca": proxy_nca,
    "normalized-softmax": normalized_softmax,
    "arcface": lambda e, y, t, o: large_margin(e, y, t, o, "arcface"),
    "cosface": lambda e, y, t, o: large_margin(e, y, t, o, "cosface"),
    "subcenter-arcface": lambda e, y, t, o: large_margin(e, y, t, o, "arcface"),
    "soft-triple": soft_triple,
}
PAIR_LOSSES = {"circle": circle, "supcon": supcon, "fast-ap": fast_ap, "contrastive": contrastive, "triplet-margin": triplet_margin_batch_hard}

# (loss, options as dmlkit's config takes them: PML's names; rows per class of its table)
CASES = [
    ("proxy-anchor", {"numClasses": 5, "margin": 0.1, "alpha": 32}, 1),
    ("proxy-anchor", {"numClasses": 6, "margin": 0.2, "alpha": 16}, 1),
    ("proxy-nca", {"numClasses": 5, "softmaxScale": 1}, 1),
    ("proxy-nca", {"numClasses": 5, "softmaxScale": 9}, 1),
    ("normalized-softmax", {"numClasses": 5, "temperature": 0.05}, 1),
    ("normalized-softmax", {"numClasses": 6, "temperature": 0.5}, 1),
    ("arcface", {"numClasses": 5, "margin": 28.6, "scale": 64}, 1),
    ("arcface", {"numClasses": 5, "margin": 10, "scale": 16}, 1),
    ("cosface", {"numClasses": 5, "margin": 0.35, "scale": 64}, 1),
    ("subcenter-arcface", {"numClasses": 5, "margin": 28.6, "scale": 64, "subCenters": 3}, 3),
    ("soft-triple", {"numClasses": 5, "centersPerClass": 10, "la": 20, "gamma": 0.1, "margin": 0.01}, 10),
    ("soft-triple", {"numClasses": 5, "centersPerClass": 2, "la": 8, "gamma": 0.5, "margin": 0.1}, 2),
    ("circle", {"m": 0.4, "gamma": 80}, 0),
    ("circle", {"m": 0.25, "gamma": 16}, 0),
    ("supcon", {"temperature": 0.1}, 0),
    ("supcon", {"temperature": 0.5}, 0),
    ("fast-ap", {"numBins": 10}, 0),
    ("fast-ap", {"numBins": 4}, 0),
    # The pair losses on PML's miners.
    ("contrastive", {"posMargin": 0, "negMargin": 1, "miner": {"name": "pair-margin", "posMargin": 0.2, "negMargin": 0.8}}, 0),
    ("contrastive", {"posMargin": 0, "negMargin": 1, "miner": {"name": "multi-similarity", "epsilon": 0.1}}, 0),
    ("contrastive", {"posMargin": 0.1, "negMargin": 0.9, "miner": {"name": "batch-hard"}}, 0),
    ("circle", {"m": 0.4, "gamma": 80, "miner": {"name": "multi-similarity", "epsilon": 0.1}}, 0),
    ("supcon", {"temperature": 0.1, "miner": {"name": "batch-hard"}}, 0),
    ("triplet-margin", {"margin": 0.2, "miner": "batch-hard"}, 0),
]
MINER_CASES = [
    {"name": "batch-hard"},
    {"name": "pair-margin", "posMargin": 0.2, "negMargin": 0.8},
    {"name": "pair-margin", "posMargin": 0.6, "negMargin": 1.2},
    {"name": "multi-similarity", "epsilon": 0.1},
    {"name": "multi-similarity", "epsilon": 0.3},
]


def batches(rng):
    """Two batches: 4 classes of 3 in 8 dimensions (class 4 of a 5-class table absent), and an uneven one with a
    singleton class (its anchor has no positive) in 6 dimensions; embeddings L2-normalised, rounded to float32."""
    out = []
    centres = rng.standard_normal((5, 8))
    labels = rng.permutation(np.repeat(np.arange(4), 3))
    out.append(("4x3", centres[labels] + 0.9 * rng.standard_normal((12, 8)), labels))
    centres = rng.standard_normal((5, 6))
    labels = rng.permutation(np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 3]))
    out.append(("uneven-with-singleton", centres[labels] + 0.9 * rng.standard_normal((10, 6)), labels))
    normalised = []
    for name, x, y in out:
        x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
        normalised.append((name, x, y))
    return normalised


def reference_masks(y, ref_y, self_columns):
    same = y[:, None] == ref_y[None, :]
    own = torch.zeros_like(same)
    own[torch.arange(len(y)), self_columns] = True
    return same & ~own, ~same


def xbm_contrastive(e, y, refs, o):
    ref, ref_y, selves = refs
    pos, neg = reference_masks(y, ref_y, selves)
    return contrastive_on(torch.sqrt(torch.clamp(2 - 2 * (e @ ref.T), min=1e-12)), pos, neg, o)


def xbm_multi_similarity(e, y, refs, o):
    ref, ref_y, selves = refs
    pos, neg = reference_masks(y, ref_y, selves)
    s = e @ ref.T
    sd = s.detach()
    hardest_neg = torch.where(neg, sd, torch.tensor(-math.inf, dtype=s.dtype)).max(dim=1, keepdim=True)[0]
    hardest_pos = torch.where(pos, sd, torch.tensor(math.inf, dtype=s.dtype)).min(dim=1, keepdim=True)[0]
    clear_of((sd - o["epsilon"] - hardest_neg)[pos], 0, "xbm multi-similarity positive")
    clear_of((sd + o["epsilon"] - hardest_pos)[neg & torch.isfinite(hardest_pos)], 0, "xbm multi-similarity negative")
    mined_pos = pos & (sd - o["epsilon"] < hardest_neg)
    mined_neg = neg & (sd + o["epsilon"] > hardest_pos)
    pos_term = logsumexp(-o["alpha"] * (s - o["base"]), mined_pos, True, 1) / o["alpha"]
    neg_term = logsumexp(o["beta"] * (s - o["base"]), mined_neg, True, 1) / o["beta"]
    rows = (mined_pos.any(1) | mined_neg.any(1))
    return (pos_term + neg_term).squeeze(1).mean(), int(rows.sum())


def xbm_triplet_margin(e, y, refs, o):
    ref, ref_y, selves = refs
    pos, neg = reference_masks(y, ref_y, selves)
    d = torch.sqrt(torch.clamp(2 - 2 * (e @ ref.T), min=1e-12))
    losses = torch.relu(d[:, :, None] - d[:, None, :] + o["margin"]) * (pos[:, :, None] & neg[:, None, :]).double()
    return avg_non_zero(losses)


XBM_CASES = [
    ("contrastive", xbm_contrastive, {"posMargin": 0, "negMargin": 1}),
    ("multi-similarity", xbm_multi_similarity, {"alpha": 2, "beta": 50, "base": 0.5, "epsilon": 0.1}),
    ("triplet-margin", xbm_triplet_margin, {"margin": 0.05}),
]


def xbm_sequences(rng):
    """Five batches of 6 (4 classes, 6 dimensions) through a memory of 14 (it wraps in step 4), plain for 1 step."""
    size, start_step, dim = 14, 1, 6
    centres = rng.standard_normal((4, dim))
    batches = []
    for _ in range(5):
        y = rng.integers(0, 4, 6)
        x = centres[y] + 0.8 * rng.standard_normal((6, dim))
        batches.append(((x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32), y))
    sequences = []
    for name, fn, options in XBM_CASES:
        memory_e = torch.zeros((size, dim), dtype=torch.float64)
        memory_y = torch.zeros(size, dtype=torch.long)
        position, filled = 0, False
        steps = []
        for step, (x, y) in enumerate(batches, 1):
            raw = torch.tensor(x.astype(np.float64), requires_grad=True)
            e = F.normalize(raw, p=2, dim=1)
            labels = torch.tensor(y)
            if step <= start_step:
                refs = (e, labels, torch.arange(len(y)))
                # The plain batch loss: the batch against itself, live on both sides.
            else:
                slots = (position + torch.arange(len(y))) % size
                memory_e[slots] = e.detach()
                memory_y[slots] = labels
                filled = filled or position + len(y) >= size
                position = (position + len(y)) % size
                count = size if filled else position
                refs = (memory_e[:count].clone(), memory_y[:count].clone(), slots)
            value, valid = fn(e, labels, refs, options)
            value.backward()
            steps.append({"labels": y.tolist(), "embeddings": x.tolist(), "value": value.item(), "validCount": valid, "gradEmbeddings": raw.grad.tolist()})
        sequences.append({"loss": name, "options": {**options, "memory": {"size": size, "startStep": start_step}}, "steps": steps})
    return sequences


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT
    rng = np.random.default_rng(SEED)
    cases = []
    miners = []
    for batch_name, x, y in batches(rng):
        e = F.normalize(torch.tensor(x.astype(np.float64)), p=2, dim=1)
        for miner in MINER_CASES:
            miners.append({"batch": batch_name, "miner": miner, "labels": y.tolist(), "embeddings": x.tolist(), "mined": MINERS[miner["name"]](e, torch.tensor(y), miner)})
        for name, options, rows_per_class in CASES:
            raw = torch.tensor(x.astype(np.float64), requires_grad=True)
            e = F.normalize(raw, p=2, dim=1)
            labels = torch.tensor(y)
            record = {"loss": name, "batch": batch_name, "options": options, "labels": y.tolist(), "embeddings": x.tolist()}
            if rows_per_class > 0:
                rows = options["numClasses"] * rows_per_class
                table_values = rng.standard_normal((rows, x.shape[1])).astype(np.float32)
                table = torch.tensor(table_values.astype(np.float64), requires_grad=True)
                value, count = TABLE_LOSSES[name](e, labels, table, options)
                value.backward()
                record["table"] = table_values.tolist()
                record["gradTable"] = table.grad.tolist()
            else:
                value, count = PAIR_LOSSES[name](e, labels, options)
                value.backward()
            record["value"] = value.item()
            record["validCount"] = count
            record["gradEmbeddings"] = raw.grad.tolist()
            cases.append(record)
    payload = {
        "generator": "scripts/reference/torch_pml_losses.py (torch %s, float64)" % torch.__version__,
        "description": "PML's losses written out in float64: loss, d loss / d embeddings (before L2 normalisation), d loss / d table",
        "cases": cases,
        "miners": miners,
        "xbm": xbm_sequences(rng),
    }
    with open(out, "w") as handle:
        json.dump(payload, handle, separators=(",", ":"))
        handle.write("\n")
    print("%s: %d cases, %d bytes" % (os.path.relpath(out), len(cases), os.path.getsize(out)))


if __name__ == "__main__":
    main()
