"""Learning-rate schedules: factors against values worked out by hand, apply() and
initial_lr, the config round trip, make_schedule and bad input."""

import json
import math

import numpy as np
import pytest

from mantissa_embed.optim import (
    SGD,
    ConstantSchedule,
    CosineSchedule,
    Schedule,
    StepSchedule,
    make_schedule,
    schedule_from_config,
)
from mantissa_embed.parameter import Parameter


def test_cosine_values():
    s = CosineSchedule()
    assert [s.factor(k, 5) for k in range(5)] == pytest.approx(
        [1.0, (1 + math.sqrt(0.5)) / 2, 0.5, (1 - math.sqrt(0.5)) / 2, 0.0]
    )
    assert s.factor(9, 5) == 0.0  # past the end: stays at min_factor
    w = CosineSchedule(warmup=4, min_factor=0.2)
    # warmup 0, 1/4, 2/4, 3/4, then cosine over steps 4..8 (T = 9 - 1 - 4 = 4) from 1 to 0.2
    assert [w.factor(k, 9) for k in range(9)] == pytest.approx(
        [
            0.0,
            0.25,
            0.5,
            0.75,
            1.0,
            0.2 + 0.8 * (1 + math.sqrt(0.5)) / 2,
            0.6,
            0.2 + 0.8 * (1 - math.sqrt(0.5)) / 2,
            0.2,
        ]
    )
    assert CosineSchedule().factor(0, 1) == 1.0  # a one-step run: the full lr
    assert CosineSchedule(warmup=3).factor(3, 4) == 1.0


def test_step_and_constant_values():
    s = StepSchedule(3, gamma=0.5)
    assert [s.factor(k, 100) for k in range(8)] == [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25]
    d = StepSchedule()  # step_size None: ceil(total / 3)
    assert [d.factor(k, 10) for k in range(10)] == pytest.approx([1] * 4 + [0.1] * 4 + [0.01] * 2)
    assert {ConstantSchedule().factor(k, 7) for k in range(10)} == {1.0}


def test_apply_keeps_initial_lr_per_group():
    a, b = Parameter(np.zeros(2)), Parameter(np.zeros(2))
    opt = SGD([{"params": [a]}, {"params": [b], "lr": 10.0}], lr=0.1)
    s = StepSchedule(2, gamma=0.5)
    assert s.apply(opt, 0, 10) == [0.1, 10.0]
    assert s.apply(opt, 3, 10) == [0.05, 5.0]
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 10.0]
    assert s.apply(opt, 1, 10) == [0.1, 10.0]  # pure: going back to step 1 gives step 1's lr
    assert opt.state_dict()["param_groups"][1]["initial_lr"] == 10.0
    with pytest.raises(TypeError, match="param_groups"):
        s.apply(object(), 0, 10)


@pytest.mark.parametrize(
    "sched",
    [
        ConstantSchedule(),
        CosineSchedule(),
        CosineSchedule(warmup=5, min_factor=0.1),
        StepSchedule(),
        StepSchedule(7, gamma=0.3),
    ],
)
def test_config_round_trip(sched):
    cfg = json.loads(json.dumps(sched.get_config()))
    back = schedule_from_config(cfg)
    assert back == sched and type(back) is type(sched)
    assert [back.factor(k, 20) for k in range(25)] == [sched.factor(k, 20) for k in range(25)]
    assert make_schedule(cfg) == sched


def test_make_schedule():
    assert make_schedule("cosine") == CosineSchedule()
    assert make_schedule("step") == StepSchedule()
    assert make_schedule("constant") == ConstantSchedule() == make_schedule(None)
    s = CosineSchedule(warmup=3)
    assert make_schedule(s) is s
    with pytest.raises(ValueError, match=r"schedule must be one of 'constant', 'cosine', 'step'.*'linear'"):
        make_schedule("linear")
    with pytest.raises(TypeError, match="schedule"):
        make_schedule(3)
    with pytest.raises(ValueError, match="schedule"):
        schedule_from_config({"name": "exp"})
    with pytest.raises(ValueError, match=r"schedule 'cosine' does not take \['gamma'\]"):
        schedule_from_config({"name": "cosine", "gamma": 0.1})


def test_a_subclass_registers_itself():
    class Halving(Schedule):
        name = "test_halving"

        def factor(self, step, total_steps):
            return 0.5**step

    assert isinstance(make_schedule("test_halving"), Halving)
    assert make_schedule("test_halving").get_config() == {"name": "test_halving"}


@pytest.mark.parametrize(
    "make,err,msg",
    [
        (lambda: CosineSchedule(warmup=-1), ValueError, "warmup"),
        (lambda: CosineSchedule(warmup=1.5), TypeError, "warmup"),
        (lambda: CosineSchedule(min_factor=1.5), ValueError, "min_factor"),
        (lambda: CosineSchedule(min_factor=-0.1), ValueError, "min_factor"),
        (lambda: StepSchedule(0), ValueError, "step_size"),
        (lambda: StepSchedule(2, gamma=0.0), ValueError, "gamma"),
        (lambda: StepSchedule(2, gamma=float("nan")), ValueError, "gamma"),
        (lambda: CosineSchedule().factor(-1, 10), ValueError, "step"),
        (lambda: StepSchedule(2).factor(1, 0), ValueError, "total_steps"),
        (lambda: ConstantSchedule().factor(0.5, 10), TypeError, "step"),
    ],
)
def test_bad_input(make, err, msg):
    with pytest.raises(err, match=msg):
        make()
