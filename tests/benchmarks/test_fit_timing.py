"""The steady-state protocol of the side-by-side fit benchmarks (benchmarks/_fit_timing.py):
setup and a warm-up step before the clock, >= 2 timed epochs, and a check that fails the run when
the first timed epoch stands out. No timing is asserted here, only the protocol and the checks."""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, BENCH)

import _fit_timing as FT  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    from mantissa_embed import engine

    before = engine.get_num_threads()
    engine.set_num_threads(1)
    yield
    engine.set_num_threads(before)


def test_warm_slice_takes_every_class_round_robin():
    y = np.repeat(np.arange(5), [30, 3, 20, 20, 20])
    X = np.arange(len(y))
    Xw, yw = FT.warm_slice(X, y, 12)
    assert len(Xw) == 12 and set(yw) == set(range(5))
    counts = np.bincount(yw, minlength=5)
    assert counts[1] == 3 and counts.max() - counts[[0, 2, 3, 4]].min() <= 1
    np.testing.assert_array_equal(y[Xw], yw)  # rows and labels stay paired


def test_check_steady_flags_a_slow_first_epoch():
    msg, ok = FT.check_steady("side", [[1.0, 1.0, 1.02], [1.1, 1.0, 0.98]])
    assert ok and "first/later" in msg
    msg, ok = FT.check_steady("side", [[4.5, 1.0, 1.0], [4.4, 1.1, 1.0]])
    assert not ok and "FAILED" in msg
    assert FT.check_steady("side", [[1.3, 1.0]], tol=0.25)[1] is False
    assert FT.check_steady("side", [[1.2, 1.0]], tol=0.25)[1] is True
    assert FT.check_steady("side", [[0.5, 1.0]])[1] is True  # a faster first epoch is no one-time cost
    assert FT.check_steady("side", [[1.0]])[1] is False  # one epoch cannot be checked


def test_check_agree_and_finish(capsys):
    assert FT.check_agree("x", 1.10, 1.0)[1] and FT.check_agree("x", 0.90, 1.0)[1]
    assert not FT.check_agree("x", 1.2, 1.0)[1] and not FT.check_agree("x", 0.8, 1.0)[1]
    assert FT.finish([("a ok", True)]) == 0
    assert FT.finish([("a ok", True), ("b FAILED", False)]) == 1
    assert "CHECK FAILED (1 of 2)" in capsys.readouterr().err


def test_mantissa_epochs_warms_up_then_times_each_epoch():
    from mantissa_embed import Embedder, models

    rng = np.random.default_rng(0)
    X = rng.random((128, 1, 28, 28)).astype(np.float32)
    y = np.arange(128) % 4
    emb = Embedder(models.small_cnn_embedder(embed_dim=8), loss="triplet", seed=0, optimizer="sgd")
    times = FT.mantissa_epochs(emb, X, y, 2, batch_size=32, lr=0.05, augment=None, schedule=None)
    assert len(times) == 2 and all(t > 0 for t in times)
    assert len(emb.history_["loss"]) == 2  # the timed fit's epochs, not the warm-up's


def test_compare_torch_report_fails_on_a_slow_first_epoch_or_a_plain_loop_mismatch(capsys):
    import compare_torch

    args = argparse.Namespace(fit_epochs=3, repeats=2, steady_tol=0.25, plain_tol=0.15, busy_neighbour=True)

    def run(epochs):
        return {"epochs": epochs, "setup_s": 3.0, "warmup_s": 0.05, "maxrss_mb": 100.0, "loss": 0.05}

    steady = [run([1.0, 1.0, 1.0]), run([1.02, 1.0, 0.99])]
    fit = {(job, side): list(steady) for job in compare_torch.FIT_JOBS for side in compare_torch.FIT_SIDES}
    for side in ("torch", "mantissa"):
        for job in compare_torch.FIT_JOBS:
            fit[job, side] = [
                run([0.3 * x for x in d["epochs"]]) if side == "mantissa" else d for d in steady
            ]
    assert compare_torch.report(args, {}, True, fit) == 0
    fit["semihard", "torch"] = [run([5.3, 1.5, 1.5]), run([5.1, 1.4, 1.5])]  # imports in the first epoch
    assert compare_torch.report(args, {}, True, fit) == 1
    fit["semihard", "torch"] = [run([1.5, 1.5, 1.5]), run([1.5, 1.4, 1.5])]  # steady but not the plain loop
    assert compare_torch.report(args, {}, True, fit) == 1
    out = capsys.readouterr().out
    assert "torch side vs plain torch loop" in out and "FAILED" in out


def test_torch_trainer_sets_up_and_warms_up_before_the_epochs():
    """In a subprocess (torch stays out of the test process): the optimizer and PML exist after
    construction, the warm-up runs one step per batch size, and train() is unchanged by the split."""
    pytest.importorskip("torch")
    pytest.importorskip("pytorch_metric_learning")
    code = r"""
import json, sys
import numpy as np
sys.path.insert(0, BENCH_DIR)
import torch
import _torch_reference as R
torch.set_num_threads(1)
rng = np.random.default_rng(0)
X = rng.random((100, 1, 28, 28)).astype(np.float32)
y = np.arange(100) % 5
rec = R.Recipe(loss="triplet", margin=0.1, miner="semihard", sampler="random", epochs=2, batch_size=64, lr=0.05)
torch.manual_seed(0)
tr = R.Trainer(R.small_cnn_embedder(16), X, y, rec, seed=0)
out = {"after_setup": sorted(m for m in ("torch._dynamo", "pytorch_metric_learning") if m in sys.modules),
       "sizes": tr.warm_up(), "epoch": tr.epoch()}
torch.manual_seed(0)
a = R.train(R.small_cnn_embedder(16), X, y, rec, seed=0)
torch.manual_seed(0)
t2 = R.Trainer(R.small_cnn_embedder(16), X, y, rec, seed=0)
out["same"] = a == [t2.epoch(), t2.epoch()]
print(json.dumps(out))
""".replace("BENCH_DIR", repr(BENCH))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["after_setup"] == ["pytorch_metric_learning", "torch._dynamo"]
    assert out["sizes"] == [64, 36]
    assert np.isfinite(out["epoch"]) and out["same"]
