#!/usr/bin/python3
"""Golden learning rates and momenta of dmlkit's schedules (lib/train/lr-schedule.ts), from PyTorch's own schedulers.

    /usr/bin/python3 scripts/reference/torch_lr_schedules.py > spec/fixtures/train/lr-schedules.json

For each case, a one-parameter optimiser of the kind dmlkit's `optimizer` config stands for (`adam`:
Adam; `momentum`: SGD with its momentum, default 0.9; `sgd`: SGD) and the scheduler it stands for. The
learning rate and the momentum of step t (0-based) are the optimiser's when step t runs (`lr`, and
Adam's `betas[0]` or SGD's `momentum`), read before `optimizer.step()` and `scheduler.step()` are
called, as a training loop uses them. OneCycleLR cycles the momentum as the config says
(`cycleMomentum`, by default for adam and momentum; dmlkit's plain `sgd` has none to cycle). Each case
carries the dmlkit optimizer config, the run's total steps and the milestone unit (steps). Debian:
python3-torch. A reference only, never a dmlkit dependency.
"""
import json
import warnings

import torch
from torch.optim.lr_scheduler import ChainedScheduler, CosineAnnealingLR, LinearLR, MultiStepLR, OneCycleLR, SequentialLR

warnings.filterwarnings("ignore")


def schedule(optimizer, steps, make):
    param = torch.nn.Parameter(torch.zeros(1))
    kind, lr = optimizer["kind"], optimizer["learningRate"]
    opt = (torch.optim.Adam([param], lr=lr) if kind == "adam"
           else torch.optim.SGD([param], lr=lr, momentum=optimizer.get("momentum", 0.9) if kind == "momentum" else 0))
    sched = make(opt)
    rates, momenta = [], []
    for _ in range(steps):
        group = opt.param_groups[0]
        rates.append(group["lr"])
        momenta.append(group["betas"][0] if kind == "adam" else group["momentum"])
        opt.step()
        sched.step()
    return rates, momenta


def cycles(optimizer):
    """OneCycleLR's cycle_momentum for a dmlkit onecycle config: its cycleMomentum, by default for adam and momentum."""
    return optimizer["schedule"].get("cycleMomentum", optimizer["kind"] != "sgd")


def case(name, optimizer, steps, make):
    rates, momenta = schedule(optimizer, steps, make)
    return {"name": name, "optimizer": optimizer, "totalSteps": steps, "milestoneUnit": "steps", "learningRates": rates, "momenta": momenta}


def one_cycle(optimizer, steps, **options):
    s = optimizer["schedule"]
    momentum = {"base_momentum": s["baseMomentum"]} if "baseMomentum" in s else {}
    momentum.update({"max_momentum": s["maxMomentum"]} if "maxMomentum" in s else {})
    return lambda o: OneCycleLR(o, max_lr=optimizer["learningRate"], total_steps=steps, cycle_momentum=cycles(optimizer), **momentum, **options)


def main():
    recipe_r = {"kind": "adam", "learningRate": 1e-3, "schedule": {"kind": "onecycle", "pctStart": 0.05}}
    recipe_r_flat = {"kind": "adam", "learningRate": 1e-3, "schedule": {"kind": "onecycle", "pctStart": 0.05, "cycleMomentum": False}}
    defaults = {"kind": "sgd", "learningRate": 0.5, "schedule": {"kind": "onecycle"}}
    linear = {"kind": "sgd", "learningRate": 0.2, "schedule": {"kind": "onecycle", "pctStart": 0.25, "divFactor": 10, "finalDivFactor": 100, "anneal": "linear"}}
    momentum = {"kind": "momentum", "learningRate": 0.1, "momentum": 0.9, "schedule": {"kind": "onecycle", "pctStart": 0.2, "baseMomentum": 0.8, "maxMomentum": 0.9, "anneal": "linear"}}
    cases = [
        case("milestones [3, 7], gamma 0.5 (MultiStepLR)", {"kind": "sgd", "learningRate": 0.1, "milestones": [3, 7], "gamma": 0.5}, 12,
             lambda o: MultiStepLR(o, milestones=[3, 7], gamma=0.5)),
        case("warm-up 4 steps from 0.25, then milestone 6 (ChainedScheduler of LinearLR and MultiStepLR)",
             {"kind": "sgd", "learningRate": 0.1, "milestones": [6], "gamma": 0.1, "warmup": {"steps": 4, "startFactor": 0.25}}, 12,
             lambda o: ChainedScheduler([LinearLR(o, start_factor=0.25, total_iters=4), MultiStepLR(o, milestones=[6], gamma=0.1)])),
        case("cosine over 20 steps to 1e-4 (CosineAnnealingLR)", {"kind": "adam", "learningRate": 0.01, "schedule": {"kind": "cosine", "minLearningRate": 1e-4}}, 20,
             lambda o: CosineAnnealingLR(o, T_max=20, eta_min=1e-4)),
        case("warm-up 5 steps from 0.1, then cosine over 25 (SequentialLR of LinearLR and CosineAnnealingLR)",
             {"kind": "adam", "learningRate": 0.01, "schedule": {"kind": "cosine"}, "warmup": {"steps": 5, "startFactor": 0.1}}, 30,
             lambda o: SequentialLR(o, [LinearLR(o, start_factor=0.1, total_iters=5), CosineAnnealingLR(o, T_max=25)], milestones=[5])),
        case("onecycle, Recipe R: Adam, 2,400 steps, pct_start 0.05, beta1 cycled 0.95 -> 0.85 -> 0.95 (OneCycleLR's defaults)", recipe_r, 2400,
             one_cycle(recipe_r, 2400, pct_start=0.05)),
        case("onecycle, Recipe R without cycleMomentum: beta1 stays 0.9 (cycle_momentum=False)", recipe_r_flat, 2400,
             one_cycle(recipe_r_flat, 2400, pct_start=0.05)),
        case("onecycle defaults over 100 steps, plain SGD", defaults, 100, one_cycle(defaults, 100)),
        case("onecycle linear, pct_start 0.25, div 10, final div 100, 37 steps, plain SGD", linear, 37,
             one_cycle(linear, 37, pct_start=0.25, div_factor=10, final_div_factor=100, anneal_strategy="linear")),
        case("onecycle, SGD with momentum cycled 0.9 -> 0.8 -> 0.9, linear, pct_start 0.2, 30 steps", momentum, 30,
             one_cycle(momentum, 30, pct_start=0.2, anneal_strategy="linear")),
    ]
    print(json.dumps({"generator": "scripts/reference/torch_lr_schedules.py", "torch": torch.__version__, "cases": cases}, indent=1))


if __name__ == "__main__":
    main()
