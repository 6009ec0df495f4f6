"""Smoke test of the asv suite in benchmarks/suite: it imports, discovers every loss and miner the
package exports, and the cheap benchmarks run once (no timing is checked)."""

import inspect
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

common = pytest.importorskip("suite.common")
from suite import bench_embedder, bench_gemm, bench_layers, bench_losses  # noqa: E402


def test_asv_conf_points_to_the_suite():
    import json
    import re

    with open(os.path.join(ROOT, "asv.conf.json")) as f:
        text = re.sub(r"^\s*//.*$", "", f.read(), flags=re.M)  # asv allows // comments
    conf = json.loads(text)
    assert conf["benchmark_dir"] == "benchmarks/suite"
    assert os.path.isfile(os.path.join(ROOT, conf["benchmark_dir"], "__init__.py"))


def test_every_exported_loss_and_miner_is_benchmarked():
    from mantissa_embed import losses, miners

    for mod, base, found in (
        (losses, losses.BaseMetricLossFunction, bench_losses.LOSSES),
        (miners, miners.BaseMiner, bench_losses.MINERS),
    ):
        expected = {
            n
            for n in mod.__all__
            if inspect.isclass(getattr(mod, n))
            and issubclass(getattr(mod, n), base)
            and not n.startswith(("Base", "Generic"))
        }
        assert expected == set(found)
    assert "TripletMarginLoss" in bench_losses.LOSSES and "TripletMarginMiner" in bench_losses.MINERS


def test_construct_fills_required_arguments():
    from mantissa_embed import losses, miners

    assert isinstance(common.construct(losses.TripletMarginLoss), losses.TripletMarginLoss)
    m = common.construct(miners.MaximumLossMiner)  # needs a loss
    assert isinstance(m, miners.MaximumLossMiner)

    class NeedsSomethingOdd:
        def __init__(self, odd):
            pass

    with pytest.raises(NotImplementedError):
        common.construct(NeedsSomethingOdd)


def test_synthetic_mnist_is_seeded():
    X, y = common.synthetic_mnist(50)
    X2, y2 = common.synthetic_mnist(50)
    assert X.shape == (50, 1, 28, 28) and X.dtype == np.float32 and y.dtype == np.int64
    assert 0.0 <= X.min() and X.max() <= 1.0
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


@pytest.fixture(autouse=True)
def one_thread():
    # one engine thread: on a loaded 2-core machine OpenMP's spinning makes 2 threads crawl
    from mantissa_embed import engine

    before = engine.get_num_threads()
    engine.set_num_threads(1)
    yield
    engine.set_num_threads(before)


def _run_all(bench, *params):
    """asv's protocol, once: setup, every time_/peakmem_ method, teardown."""
    obj = bench()
    try:
        obj.setup(*params)
    except NotImplementedError:
        return False
    for name in dir(obj):
        if name.startswith(("time_", "peakmem_")):
            getattr(obj, name)(*params)
    if hasattr(obj, "teardown"):
        obj.teardown(*params)
    return True


def test_cheap_benchmarks_run_once():
    assert _run_all(bench_gemm.SgemmSquare, 256, 1)
    for shape in bench_gemm.LAYER_SHAPES:
        assert _run_all(bench_gemm.SgemmLayerShapes, shape)
    for layer in bench_layers.CONV:
        assert _run_all(bench_layers.Conv2d, layer)
    for layer in bench_layers.POOL:
        assert _run_all(bench_layers.MaxPool, layer)
    assert _run_all(bench_losses.Losses, "TripletMarginLoss", 256)
    assert _run_all(bench_losses.Miners, "TripletMarginMiner", 256)
    assert bench_embedder.N_FIT == 6000 and bench_embedder.GALLERY == 100_000
