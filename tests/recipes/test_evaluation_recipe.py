"""The evaluation recipe (docs/recipes/evaluation.py) runs and shows what evaluation.md states."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
recipe = pytest.importorskip("docs.recipes.evaluation")


@pytest.fixture(scope="module")
def results():
    return recipe.main(seed=0, verbose=False)


def test_training_beats_raw_pixels_on_unseen_classes(results):
    t = results["trained"]["query_vs_reference"]
    r = results["raw_pixels"]["query_vs_reference"]
    assert t["mean_average_precision_at_r"] > 2 * r["mean_average_precision_at_r"]
    assert t["precision_at_1"] > r["precision_at_1"]
    assert t["NMI"] > r["NMI"]


def test_all_knn_metrics_in_unit_interval(results):
    for which in ("trained", "raw_pixels"):
        for case, scores in results[which].items():
            for name, v in scores.items():
                if name in ("NMI", "AMI"):
                    continue  # AMI may be slightly negative (chance-corrected)
                assert 0.0 <= v <= 1.0, (which, case, name)


def test_forgetting_ref_includes_query_gives_a_fake_perfect_score(results):
    for which in ("trained", "raw_pixels"):
        assert results[which]["forgot_ref_includes_query"]["precision_at_1"] == 1.0
        assert results[which]["ref_includes_query"]["precision_at_1"] < 1.0


def test_max_bin_count_makes_map_equal_map_at_r_on_balanced_classes(results):
    # every query has the same R, so k = R and MAP over the k neighbours is MAP@R
    for case in ("query_vs_reference", "reference_vs_itself", "ref_includes_query"):
        s = results["trained"][case]
        assert s["mean_average_precision"] == pytest.approx(s["mean_average_precision_at_r"])


def test_custom_metric_matches_a_direct_count():
    X, y = recipe.make_data(0)
    unseen = y >= recipe.TRAIN_CLASSES
    E = X[unseen].reshape(int(unseen.sum()), -1)
    q, qy, r, ry = recipe.split_query_reference(E, y[unseen])
    d = ((q[:, None, :].astype(np.float64) - r[None].astype(np.float64)) ** 2).sum(-1)
    nn5 = np.argsort(d, axis=1, kind="stable")[:, :5]
    want = float(np.mean(ry[nn5] == qy[:, None]))
    got = recipe.evaluate(E, y[unseen])["custom_metric"]["precision_at_5"]
    assert got == pytest.approx(want, abs=1e-12)


def test_runs_as_a_module_from_the_repo_root():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    out = subprocess.run(
        [sys.executable, "-m", "docs.recipes.evaluation"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "ref_includes_query" in out.stdout and "precision_at_5" in out.stdout
