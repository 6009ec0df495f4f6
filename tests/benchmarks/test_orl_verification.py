"""The ORL face-verification benchmark (benchmarks/orl_verification.py), short version.

Skipped when the ORL data folder ``<repo>/../shared/data/orl_faces`` is absent (the data is
not shipped with the repository). What is asserted: the outputs exist, every metric is in
range, and -- a claim measured for seeds 0-3 and both the AVX-512 and AVX2 kernels
(docs/evaluation.md) -- the trained network beats both its untrained self and raw pixels on
the unseen subjects 31-40 in ROC AUC and EER.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
ORL_DIR = REPO.parent / "shared" / "data" / "orl_faces"

pytestmark = pytest.mark.skipif(
    not (ORL_DIR / "s1").is_dir(),
    reason=f"ORL faces not found: checked {ORL_DIR} (expected s1/ ... s40/ there, i.e. the repository "
    "cloned next to shared/); the verification metrics themselves are tested in "
    "tests/evaluation/test_verification.py",
)


def _load_benchmark():
    spec = importlib.util.spec_from_file_location(
        "orl_verification", REPO / "benchmarks" / "orl_verification.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_orl_quick(tmp_path):
    pytest.importorskip("matplotlib")
    bench = _load_benchmark()
    res = bench.run(ORL_DIR, tmp_path, quick=True, threads=1, verbose=False)
    for name in ("roc.png", "gallery.png", "metrics.json"):
        assert (tmp_path / name).stat().st_size > 1000, name
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["n_pairs"] == 4950 and saved["n_same_pairs"] == 450
    assert saved["recipe"]["epochs"] == bench.QUICK_EPOCHS
    for name in ("raw", "untrained", "trained"):
        m = res[name]
        assert saved["metrics"][name] == pytest.approx(m)
        for k in bench.SHOWN:
            assert 0.0 <= m[k] <= 1.0, (name, k, m[k])
        assert m["roc_auc"] > 0.85 and m["eer"] < 0.25, (name, m)  # far from chance (0.5 / 0.5)
    tr, un, raw = res["trained"], res["untrained"], res["raw"]
    assert tr["roc_auc"] > un["roc_auc"] and tr["eer"] < un["eer"], (tr, un)
    assert tr["roc_auc"] > raw["roc_auc"] and tr["eer"] < raw["eer"], (tr, raw)
    assert tr["mean_average_precision_at_r"] > raw["mean_average_precision_at_r"], (tr, raw)


def test_orl_raw_pixel_baseline_independent():
    """The raw-pixel row recomputed independently (sklearn AUC on a dense float64 distance matrix)."""
    from sklearn.metrics import roc_auc_score

    from mantissa_embed import datasets

    bench = _load_benchmark()
    X, y = datasets.load("orl_faces", data_dir=ORL_DIR, size=(56, 46))
    Xu = X[y >= 30].reshape(100, -1).astype(np.float64)
    yu = y[y >= 30]
    D = np.linalg.norm(Xu[:, None] - Xu[None], axis=2)
    i, j = np.triu_indices(100, 1)
    m = bench.evaluate(Xu, yu)
    assert len(i) == 4950 and (yu[i] == yu[j]).sum() == 450
    assert m["roc_auc"] == pytest.approx(roc_auc_score(yu[i] == yu[j], -D[i, j]), abs=1e-9)
