"""Every public engine wrapper has a fuzz spec: a new wrapper without one fails here."""

import importlib.util
from pathlib import Path

from mantissa_embed import engine

HERE = Path(__file__).parent


def _specs():
    names = {}
    for path in sorted(HERE.glob("test_fuzz_*.py")):
        if path.name == Path(__file__).name:
            continue
        spec = importlib.util.spec_from_file_location(f"_fuzz_cov_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in getattr(mod, "SPECS", ()):  # the kit's own tests and the regressions have none
            names[name] = path.name
    return names


def test_every_engine_wrapper_is_fuzzed():
    public = {n for n in vars(engine) if not n.startswith("_") and callable(getattr(engine, n))}
    covered = _specs()
    missing = sorted(public - set(covered))
    assert not missing, f"engine wrappers without a fuzz spec in tests/engine/fuzz/: {missing}"
    unknown = sorted(set(covered) - public)
    assert not unknown, f"fuzz specs of no engine wrapper: {unknown}"
