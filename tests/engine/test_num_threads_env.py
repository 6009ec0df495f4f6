"""``MANTISSA_EMBED_NUM_THREADS`` holding something other than an integer from 1 to 4096 gives a
RuntimeWarning naming the variable and the value, at import, and both backends use their default
Each case runs in a fresh interpreter: the variable is read once per process."""

import json
import os
import subprocess
import sys

import pytest

_SCRIPT = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from mantissa_embed import engine
    from mantissa_embed._reference import _cpu
    threads = {"engine": engine.get_num_threads(), "numpy": _cpu.get_num_threads()}
print(json.dumps({"warnings": [[w.category.__name__, str(w.message)] for w in caught], **threads}))
"""


def _run(value):
    env = dict(os.environ)
    env.pop("MANTISSA_EMBED_NUM_THREADS", None)
    if value is not None:
        env["MANTISSA_EMBED_NUM_THREADS"] = value
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def default():
    res = _run(None)
    assert res["warnings"] == []
    return res


@pytest.mark.parametrize("value", ["abc", "0", "-3", "1.5", "4097", "2x"])
def test_invalid_value_warns_and_falls_back(default, value):
    res = _run(value)
    mine = [msg for cat, msg in res["warnings"] if "MANTISSA_EMBED_NUM_THREADS" in msg]
    assert len(mine) == 1, res["warnings"]
    assert [cat for cat, msg in res["warnings"] if msg == mine[0]] == ["RuntimeWarning"]
    assert f"MANTISSA_EMBED_NUM_THREADS={value!r}" in mine[0]
    assert (res["engine"], res["numpy"]) == (default["engine"], default["numpy"])


@pytest.mark.parametrize("value, n", [("3", 3), (" 2 ", 2), ("+1", 1)])
def test_valid_value_is_used_silently(value, n):
    res = _run(value)
    assert res["warnings"] == []
    assert (res["engine"], res["numpy"]) == (n, n)


def test_blank_value_is_unset(default):
    assert _run("  ") == default


def test_a_5000_digit_value_warns_instead_of_breaking_the_import(default):
    """Regression: int() of over 4300 digits raises ValueError; it escaped at import time."""
    res = _run("1" * 5000)
    mine = [msg for cat, msg in res["warnings"] if "MANTISSA_EMBED_NUM_THREADS" in msg]
    assert len(mine) == 1 and "(5000 characters)" in mine[0] and len(mine[0]) < 300
    assert (res["engine"], res["numpy"]) == (default["engine"], default["numpy"])
    assert _run("0" * 5000 + "3")["numpy"] == 3  # leading zeros, as strtol reads them
