"""docs/recipes/memory_warmup.py: two warmup steps leave the queue alone, four memory steps
fill a 32-row ring buffer with 12-row batches, ending full with cursor 16."""

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
recipe = pytest.importorskip("docs.recipes.memory_warmup")


@pytest.fixture(scope="module")
def run():
    return recipe.train(seed=0)


def test_stated_sizes():
    assert (recipe.BATCH_SIZE, recipe.EMBEDDING_SIZE, recipe.MEMORY_SIZE) == (12, 4, 32)
    assert (recipe.WARMUP_STEPS, recipe.MEMORY_STEPS) == (2, 4)


def test_queue_full_with_cursor_16(run):
    history, xbm, _ = run
    assert xbm.has_been_filled and xbm.queue_idx == 16 == (4 * 12) % 32
    assert [h["queue_idx"] for h in history] == [0, 0, 12, 24, 4, 16]
    assert [h["has_been_filled"] for h in history] == [False, False, False, False, True, True]


def test_memory_used_only_after_warmup(run):
    history, _, _ = run
    assert [h["phase"] for h in history] == ["warmup"] * 2 + ["memory"] * 4
    assert [h["memory_rows"] for h in history] == [0, 0, 12, 24, 32, 32]
    assert all(np.isfinite(h["loss"]) for h in history)


def test_memory_holds_detached_copies_of_the_memory_steps_only(run):
    history, xbm, model = run
    rows = np.concatenate([h["batch_embeddings"] for h in history[2:]])  # 48 rows, warmup excluded
    want = np.zeros((32, 4), np.float32)
    for r, e in enumerate(rows):
        want[r % 32] = e
    np.testing.assert_array_equal(xbm.embedding_memory, want)
    # stored as they were when enqueued: the model has moved on since
    X, y = recipe.make_data(0)
    assert not np.allclose(model(X[:12]), rows[-12:])


def test_warmup_alone_never_touches_the_queue():
    history, xbm, _ = recipe.train(seed=1, warmup_steps=2, memory_steps=0)
    assert xbm.queue_idx == 0 and not xbm.has_been_filled and not xbm.embedding_memory.any()


def test_main_reports_the_final_state(capsys):
    out = recipe.main(seed=0)
    assert out["queue_idx"] == 16 and out["has_been_filled"]
    assert "queue full = True, cursor = 16" in capsys.readouterr().out
