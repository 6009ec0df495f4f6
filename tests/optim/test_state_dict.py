"""Optimizer state for checkpoints: state_dict / load_state_dict, the .npz flattening helpers,
and resuming: saved and reloaded mid-run, a fresh optimizer continues bit for bit."""

import io
import json

import numpy as np
import pytest

from mantissa_embed.optim import SGD, Adam, AdamW, CosineSchedule, flatten_state_dict, unflatten_state_dict
from mantissa_embed.parameter import Parameter

SHAPES = [(3, 4), (5,), ()]
MAKERS = {
    "SGD": lambda ps: SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "Adam": lambda ps: Adam(ps, lr=1e-2, weight_decay=1e-3),
    "AdamW": lambda ps: AdamW([{"params": ps[:1], "lr": 0.05}, {"params": ps[1:]}], lr=1e-2),
}


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return [Parameter(rng.standard_normal(s)) for s in SHAPES]


def _grads(seed, steps):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(steps)]


def _run(opt, params, grads_seq, start, schedule=None, total=10):
    for k, grads in enumerate(grads_seq[start:], start):
        if schedule is not None:
            schedule.apply(opt, k, total)
        opt.zero_grad()
        for p, g in zip(params, grads):
            p.grad += g
        opt.step()


def _npz_roundtrip(opt):
    arrays, meta = flatten_state_dict(opt.state_dict())
    buf = io.BytesIO()
    np.savez(buf, meta=np.array(meta), **arrays)
    buf.seek(0)
    f = np.load(buf, allow_pickle=False)
    return unflatten_state_dict(f, str(f["meta"]))


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_resume_through_npz_is_bitwise_identical(name):
    grads = _grads(1, 10)
    sched = CosineSchedule(warmup=2)
    ref = _params()
    _run(MAKERS[name](ref), ref, grads, 0, sched)
    part = _params()
    opt = MAKERS[name](part)
    _run(opt, part, grads[:6], 0, sched)
    saved = _npz_roundtrip(opt)
    weights = [p.data.copy() for p in part]
    fresh = [Parameter(w) for w in weights]
    opt2 = MAKERS[name](fresh)
    opt2.load_state_dict(saved)
    _run(opt2, fresh, grads, 6, sched)
    for p, q in zip(ref, fresh):
        np.testing.assert_array_equal(p.data, q.data)


def test_state_dict_layout():
    ps = _params()
    opt = MAKERS["AdamW"](ps)
    assert opt.state_dict()["state"] == {}
    for p in ps:
        p.grad[...] = 1.0
    opt.step()
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1, 2]
    assert sd["state"][1]["step"] == 2 and sd["state"][1]["exp_avg"].shape == (5,)
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1, 2]]
    assert sd["param_groups"][0]["lr"] == 0.05 and sd["param_groups"][1]["betas"] == [0.9, 0.999]
    sd["state"][0]["exp_avg"][...] = 7.0  # a copy, not the live buffer
    assert not (opt.state[0]["exp_avg"] == 7.0).any()
    arrays, meta = flatten_state_dict(sd)
    assert sorted(arrays) == [f"optim/{i}/{k}" for i in range(3) for k in ("exp_avg", "exp_avg_sq")]
    doc = json.loads(meta)
    assert doc["state"]["2"] == {"step": 2}
    back = unflatten_state_dict(arrays, meta)
    assert back["state"][2]["step"] == 2 and back["param_groups"][1]["params"] == [1, 2]


def test_sgd_without_momentum_has_no_state_and_string_keys_load():
    ps = _params()
    opt = SGD(ps, lr=0.1)
    opt.step()
    assert opt.state_dict()["state"] == {}
    mom = SGD(ps, lr=0.1, momentum=0.9)
    mom.step()
    sd = mom.state_dict()
    sd["state"] = {str(k): v for k, v in sd["state"].items()}
    other = SGD(_params(), lr=0.3, momentum=0.9)
    other.load_state_dict(sd)
    assert other.param_groups[0]["lr"] == 0.1 and other.state[2]["momentum_buffer"].shape == ()


def _stepped(seed=0):
    ps = _params(seed)
    opt = Adam(ps)
    opt.step()
    return opt, opt.state_dict()


@pytest.mark.parametrize(
    "edit,err,msg",
    [
        (
            lambda sd: sd["state"][1].update(exp_avg=np.zeros(4)),
            ValueError,
            r"\['exp_avg'\] has shape \(4,\)",
        ),
        (lambda sd: sd["state"][0].pop("exp_avg_sq"), ValueError, "must hold 'step'"),
        (lambda sd: sd["state"][0].update(momentum_buffer=np.zeros((3, 4))), ValueError, "unknown entries"),
        (lambda sd: sd["state"][0].update(step=-1), ValueError, "non-negative integer"),
        (lambda sd: sd["state"][0].update(step=1.5), ValueError, "non-negative integer"),
        (lambda sd: sd["state"][0]["exp_avg"].fill(np.nan), ValueError, "NaN"),
        (lambda sd: sd["state"].update({7: {}}), ValueError, "no parameter group lists"),
        (lambda sd: sd["param_groups"][0]["params"].pop(), ValueError, "has 2 parameters"),
        (lambda sd: sd["param_groups"].append({"params": []}), ValueError, "2 parameter groups"),
        (lambda sd: sd["param_groups"][0].update(lr=-1.0), ValueError, "Invalid learning rate"),
        (lambda sd: sd.pop("state"), ValueError, "'state'"),
    ],
)
def test_load_validates_and_changes_nothing_on_error(edit, err, msg):
    opt, _ = _stepped()
    _, sd = _stepped(1)
    before = opt.state_dict()
    edit(sd)
    with pytest.raises(err, match=msg):
        opt.load_state_dict(sd)
    after = opt.state_dict()
    assert after["param_groups"] == before["param_groups"]
    for i in before["state"]:
        np.testing.assert_array_equal(after["state"][i]["exp_avg"], before["state"][i]["exp_avg"])


def test_flatten_errors():
    opt, sd = _stepped()
    with pytest.raises(ValueError, match="prefix"):
        flatten_state_dict(sd, prefix="a/b")
    with pytest.raises(TypeError, match="state_dict"):
        flatten_state_dict([1, 2])
    sd["param_groups"][0]["lr"] = object()
    with pytest.raises(TypeError, match="JSON-able"):
        flatten_state_dict(sd)
    arrays, meta = flatten_state_dict(opt.state_dict())
    arrays.pop("optim/1/exp_avg")
    with pytest.raises(ValueError, match="optim/1/exp_avg"):
        unflatten_state_dict(arrays, meta)
    with pytest.raises(ValueError, match="JSON"):
        unflatten_state_dict(arrays, "{not json")
