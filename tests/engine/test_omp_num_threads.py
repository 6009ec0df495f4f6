"""Every OpenMP parallel region of the engine takes its thread count from
``mantissa_embed.set_num_threads`` (``num_threads(...)`` on the pragma).

A region without the clause runs on OpenMP's default team (every core) whatever the user set;
the triplet miner had four such regions: with ``set_num_threads(1)`` on a busy machine each
call waited ~12 ms for a descheduled second thread instead of taking 0.08 ms. A source check,
because the thread count a region used is not observable from Python.
"""

import pathlib
import re

import pytest

ENGINE = pathlib.Path(__file__).resolve().parents[2] / "src" / "engine_c"


def _pragmas(text):
    """The full text of each '#pragma omp parallel' (continuation lines joined) with its line."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if re.match(r"\s*#\s*pragma\s+omp\s+parallel\b", lines[i]):
            start, full = i + 1, lines[i]
            while full.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                full = full.rstrip()[:-1] + " " + lines[i]
            yield start, full
        i += 1


SOURCES = sorted(ENGINE.glob("*.c"))


def test_engine_sources_found():
    assert len(SOURCES) >= 10, f"engine sources not found under {ENGINE}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_parallel_regions_set_num_threads(path):
    bad = [
        f"{path.name}:{line}: {full.strip()}"
        for line, full in _pragmas(path.read_text())
        if "num_threads(" not in full
    ]
    assert not bad, "parallel regions without num_threads(...):\n" + "\n".join(bad)


def test_the_check_can_fail():
    src = "#pragma omp parallel for schedule(static)\nfor (;;) {}\n#pragma omp parallel for \\\n  num_threads(n)\n"
    found = list(_pragmas(src))
    assert [("num_threads(" in f) for _, f in found] == [False, True]
