"""The package is typed: ``py.typed`` ships, the compiled engine modules' ``.pyi`` stubs match
them, and mypy (configured in pyproject.toml ``[tool.mypy]``) is clean on ``src/mantissa_embed``."""

import ast
import importlib
import importlib.util
import inspect
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import mantissa_embed

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "src" / "mantissa_embed" / "_engine"
STUBS = sorted(ENGINE.glob("_*.pyi"))


def test_py_typed_and_stubs_ship_with_the_package():
    pkg = Path(mantissa_embed.__file__).parent
    assert (pkg / "py.typed").is_file()
    pyx = {p.stem for p in ENGINE.glob("_*.pyx")}
    assert pyx == {p.stem for p in STUBS}, "every compiled module needs a .pyi stub"


def _stub_functions(path):
    tree = ast.parse(path.read_text(), str(path))
    names = next(
        ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and n.targets[0].id == "__all__"
    )
    return names, {n.name: n.args for n in tree.body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("stub", STUBS, ids=lambda p: p.stem)
def test_engine_stub_matches_the_compiled_module(stub):
    """Names, ``__all__``, parameter names, kinds and which have defaults, as compiled: a new or
    changed wrapper in the .pyx needs the same change in its .pyi."""
    mod = importlib.import_module(f"mantissa_embed._engine.{stub.stem}")
    names, funcs = _stub_functions(stub)
    assert names == list(mod.__all__)
    for name in set(mod.__all__) | set(funcs):
        assert name in funcs, f"{stub.name} lacks {name}"
        assert hasattr(mod, name), f"{stub.name} declares {name}, which the module lacks"
        args = funcs[name]
        stub_params = [(a.arg, "POSITIONAL_OR_KEYWORD") for a in args.args]
        stub_params += [(a.arg, "KEYWORD_ONLY") for a in args.kwonlyargs]
        n_defaults = len(args.defaults) + sum(d is not None for d in args.kw_defaults)
        params = inspect.signature(getattr(mod, name)).parameters.values()
        assert stub_params == [(p.name, p.kind.name) for p in params], name
        assert n_defaults == sum(p.default is not p.empty for p in params), name


#: a user's script: what an editor / type checker sees through py.typed. Its last line is wrong on
#: purpose, so the check shows the annotations are seen (not Any), with no other complaint.
USER_CODE = """\
import numpy as np
import numpy.typing as npt

from mantissa_embed import Embedder, models
from mantissa_embed.evaluation import retrieval_metrics
from mantissa_embed.losses import TripletMarginLoss

emb = Embedder(models.small_cnn_embedder(embed_dim=8), loss="triplet")
X = np.zeros((4, 1, 8, 8), np.float32)
Z: npt.NDArray[np.float32] = emb.embed(X)
ids, dist = emb.retrieve(X, X, k=2)
grad: np.ndarray = TripletMarginLoss(margin=0.1)(Z, [0, 0, 1, 1]).grad
scores: dict[str, float] = retrieval_metrics(Z, [0, 0, 1, 1])
reveal_type(ids)
emb.embed(X, batch_size="big")
"""


@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed (pip install mypy): the type check is skipped",
)
def test_mypy_is_clean_on_the_package_and_sees_its_types(tmp_path):
    """One mypy run (config: pyproject.toml [tool.mypy]) over the package and a user's script."""
    user = tmp_path / "user_code.py"
    user.write_text(USER_CODE)
    cache = Path(tempfile.gettempdir()) / "mantissa-embed-mypy-cache"
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "src/mantissa_embed", str(user)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "user_code.py:15: error:" in errors[0] and '"batch_size"' in errors[0], out
    assert 'user_code.py:14: note: Revealed type is "numpy.ndarray[' in out and "64Bit" in out, out
