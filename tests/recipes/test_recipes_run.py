"""Every training-composition recipe runs as ``python -m docs.recipes.<name>`` from the repository root."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "name, expect",
    [
        ("training", "two_stream"),
        ("cascaded_mining", "positive-pair counts [24, 12, 6]"),
        ("adversarial_metric_learning", "final objectives"),
        ("mining_weights", "batch 3: labels"),
        ("memory_warmup", "queue full = True, cursor = 16"),
    ],
)
def test_runs_as_a_module(name, expect):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", f"docs.recipes.{name}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert expect in proc.stdout
    assert "nan" not in proc.stdout.lower()
