"""Parameter groups (torch semantics): per-group options, defaults filling the gaps, lr changed
between steps, and the errors of malformed groups; for SGD, Adam and AdamW."""

import numpy as np
import pytest

from mantissa_embed.optim import SGD, Adam, AdamW
from mantissa_embed.parameter import Parameter

OPTIMIZERS = [SGD, Adam, AdamW]


def _params(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return [Parameter(rng.standard_normal((2, 3)), name=f"p{i}") for i in range(n)]


@pytest.mark.parametrize("cls", OPTIMIZERS)
def test_group_options_fill_from_the_constructor(cls):
    a, b, c = _params()
    opt = cls([{"params": [a, b]}, {"params": c, "lr": 0.5, "weight_decay": 0.25}], lr=0.01)
    g0, g1 = opt.param_groups
    assert g0["params"] == [a, b] and g1["params"] == [c]
    assert g0["lr"] == 0.01 and g1["lr"] == 0.5 and g1["weight_decay"] == 0.25
    assert g0["weight_decay"] == opt.defaults["weight_decay"]
    assert set(g0) == set(opt.defaults) | {"params"}
    assert opt.params == [a, b, c] and len(opt.state) == 3


@pytest.mark.parametrize("cls", OPTIMIZERS)
def test_each_group_steps_with_its_own_lr(cls):
    """Two groups, lr 0.1 and 0: the second does not move; a group equal to a lone optimizer
    moves identically to it."""
    a, b = _params(2)
    a2 = Parameter(a.data)
    b0 = b.data.copy()
    opt = cls([{"params": [a]}, {"params": [b], "lr": 0.0}], lr=0.1)
    lone = cls([a2], lr=0.1)
    for step in range(3):
        for p in (a, b, a2):
            p.grad[:] = step + 1.0
        opt.step()
        lone.step()
    np.testing.assert_array_equal(b.data, b0)
    np.testing.assert_array_equal(a.data, a2.data)


def test_lr_of_a_group_can_change_between_steps():
    a, b = Parameter(np.zeros(2)), Parameter(np.zeros(2))
    opt = SGD([{"params": [a]}, {"params": [b], "lr": 2.0}], lr=1.0)
    a.grad[:] = b.grad[:] = 1.0
    opt.step()
    opt.param_groups[1]["lr"] = 0.5
    opt.step()
    np.testing.assert_array_equal(a.data, -2.0)
    np.testing.assert_array_equal(b.data, -2.5)
    opt.lr = 0.25  # sets every group
    assert [g["lr"] for g in opt.param_groups] == [0.25, 0.25] and opt.lr == 0.25
    opt.param_groups[1]["momentum"] = 0.5
    assert opt.momentum == 0.0 and opt.param_groups[1]["momentum"] == 0.5  # the first group's
    with pytest.raises(AttributeError, match="betas"):
        opt.betas


def test_add_param_group():
    a, b = _params(2)
    opt = Adam([a], lr=0.1)
    opt.add_param_group({"params": [b], "betas": (0.5, 0.6)})
    assert opt.params == [a, b] and opt.param_groups[1]["betas"] == (0.5, 0.6)
    b.grad[:] = 1.0
    opt.step()
    assert opt.state[1]["step"] == 1


@pytest.mark.parametrize(
    "groups,err,msg",
    [
        (lambda a, b: [{"params": [a]}, {"params": [a, b]}], ValueError, "more than one parameter group"),
        (lambda a, b: [{"params": [a], "lrr": 0.1}], ValueError, r"param_groups\[0\]: unknown option"),
        (lambda a, b: [{"lr": 0.1}], ValueError, "'params'"),
        (
            lambda a, b: [{"params": [a]}, {"params": [b], "lr": -1.0}],
            ValueError,
            r"param_groups\[1\]: Invalid learning rate",
        ),
        (lambda a, b: [{"params": [a]}, b], TypeError, "not a mix"),
        (lambda a, b: [{"params": {a, b}}], TypeError, "ordered collection"),
        (lambda a, b: [{"params": [a, np.zeros(3)]}], TypeError, r"params\[1\] must be a Parameter"),
        (lambda a, b: {"params": [a]}, TypeError, "wrap the parameter group"),
        (lambda a, b: [{"params": []}], ValueError, "empty parameter list"),
    ],
)
def test_bad_groups(groups, err, msg):
    a, b = _params(2)
    with pytest.raises(err, match=msg):
        SGD(groups(a, b), lr=0.1)


def test_invalid_group_lr_set_later_is_caught_at_step():
    a, b = _params(2)
    opt = AdamW([{"params": [a]}, {"params": [b]}])
    opt.param_groups[1]["lr"] = float("nan")
    with pytest.raises(ValueError, match=r"param_groups\[1\]: lr must be finite"):
        opt.step()
    opt.param_groups[1]["lr"] = 1e-3
    opt.param_groups[0]["params"].append(Parameter(np.zeros(2)))
    with pytest.raises(ValueError, match="add_param_group"):
        opt.step()


def test_group_nesterov_checked():
    a, b = _params(2)
    with pytest.raises(ValueError, match=r"param_groups\[1\]: Nesterov"):
        SGD([{"params": [a]}, {"params": [b], "momentum": 0.0}], lr=0.1, momentum=0.9, nesterov=True)
