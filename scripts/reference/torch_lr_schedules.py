#!/usr/bin/python3
"""Golden learning rates of dmlkit's schedules (lib/train/lr-schedule.ts), from PyTorch's own schedulers.

    /usr/bin/python3 scripts/reference/torch_lr_schedules.py > spec/fixtures/train/lr-schedules.json

For each case, a one-parameter SGD optimiser and the scheduler dmlkit's `optimizer` config stands for;
the learning rate of step t (0-based) is the optimiser's rate when step t runs, read before
`optimizer.step()` and `scheduler.step()` are called, as a training loop uses it. Each case carries
the dmlkit optimizer config, the run's total steps and the milestone unit (steps). Debian:
python3-torch. A reference only, never a dmlkit dependency.
"""
import json
import warnings

import torch
from torch.optim.lr_scheduler import ChainedScheduler, CosineAnnealingLR, LinearLR, MultiStepLR, OneCycleLR, SequentialLR

warnings.filterwarnings("ignore")


def rates(base_lr, steps, make):
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=base_lr)
    sched = make(opt)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def case(name, optimizer, steps, make):
    return {"name": name, "optimizer": optimizer, "totalSteps": steps, "milestoneUnit": "steps", "learningRates": rates(optimizer["learningRate"], steps, make)}


def main():
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
        case("onecycle, Recipe R: 2,400 steps, pct_start 0.05 (OneCycleLR)", {"kind": "adam", "learningRate": 1e-3, "schedule": {"kind": "onecycle", "pctStart": 0.05}}, 2400,
             lambda o: OneCycleLR(o, max_lr=1e-3, total_steps=2400, pct_start=0.05, cycle_momentum=False)),
        case("onecycle defaults over 100 steps", {"kind": "sgd", "learningRate": 0.5, "schedule": {"kind": "onecycle"}}, 100,
             lambda o: OneCycleLR(o, max_lr=0.5, total_steps=100, cycle_momentum=False)),
        case("onecycle linear, pct_start 0.25, div 10, final div 100, 37 steps",
             {"kind": "sgd", "learningRate": 0.2, "schedule": {"kind": "onecycle", "pctStart": 0.25, "divFactor": 10, "finalDivFactor": 100, "anneal": "linear"}}, 37,
             lambda o: OneCycleLR(o, max_lr=0.2, total_steps=37, pct_start=0.25, div_factor=10, final_div_factor=100, anneal_strategy="linear", cycle_momentum=False)),
    ]
    print(json.dumps({"generator": "scripts/reference/torch_lr_schedules.py", "torch": torch.__version__, "cases": cases}, indent=1))


if __name__ == "__main__":
    main()
