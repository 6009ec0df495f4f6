"""The schedules' lr sequences against torch.optim.lr_scheduler, stepped once per batch after
optimizer.step(), with two parameter groups of different base lr (oracle test)."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mantissa_embed.optim import SGD, ConstantSchedule, CosineSchedule, StepSchedule  # noqa: E402
from mantissa_embed.parameter import Parameter  # noqa: E402

LRS = (0.1, 3.0)
L = torch.optim.lr_scheduler


def _torch_lrs(make, total):
    ps = [torch.nn.Parameter(torch.zeros(2)) for _ in LRS]
    opt = torch.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(ps, LRS)])
    sched = make(opt)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "scheduler.step() before optimizer.step()" and the like
        for _ in range(total):
            out.append([g["lr"] for g in opt.param_groups])
            opt.step()
            sched.step()
    return np.array(out)


def _our_lrs(schedule, total):
    ps = [Parameter(np.zeros(2)) for _ in LRS]
    opt = SGD([{"params": [p], "lr": lr} for p, lr in zip(ps, LRS)])
    return np.array([schedule.apply(opt, k, total) for k in range(total)])


@pytest.mark.parametrize("total", [1, 2, 17, 50])
def test_cosine_is_cosine_annealing(total):
    ours = _our_lrs(CosineSchedule(), total)
    theirs = _torch_lrs(lambda o: L.CosineAnnealingLR(o, T_max=max(total - 1, 1)), total)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("warmup,total", [(1, 10), (5, 40), (7, 8)])
def test_cosine_with_warmup_is_lambda_then_cosine_annealing(warmup, total):
    # eta_min is one absolute value in torch: the factor 0.1 of the first group's lr; a
    # LambdaLR does the same per group (the second group's min is 0.1 * its own lr).
    ours = _our_lrs(CosineSchedule(warmup=warmup, min_factor=0.1), total)[:, :1]
    theirs = _torch_lrs(
        lambda o: L.SequentialLR(
            o,
            [
                L.LambdaLR(o, lambda k: k / warmup),
                L.CosineAnnealingLR(o, T_max=max(total - 1 - warmup, 1), eta_min=0.1 * LRS[0]),
            ],
            milestones=[warmup],
        ),
        total,
    )[:, :1]
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("step_size,gamma", [(1, 0.5), (4, 0.1), (30, 0.9)])
def test_step_is_step_lr(step_size, gamma):
    ours = _our_lrs(StepSchedule(step_size, gamma), 40)
    theirs = _torch_lrs(lambda o: L.StepLR(o, step_size, gamma), 40)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_constant_is_constant_lr():
    ours = _our_lrs(ConstantSchedule(), 10)
    theirs = _torch_lrs(lambda o: L.ConstantLR(o, factor=1.0, total_iters=0), 10)
    np.testing.assert_array_equal(ours, theirs)
