"""The package's structure rules (docs/architecture.md), checked on the source tree.

- the engine is declared once: no ``.pxi``, one ``cdef extern from "engine.h"`` block set, in one
  ``.pxd``;
- the numpy twin (``_reference``) is imported only by ``backend.py`` and by itself;
- ``losses/`` has no hand-written scatter (``np.add.at``) and no reducer type checks;
- no Python module over 500 lines;
- no import cycle among the package's modules, and function-local imports only for optional
  dependencies.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PKG = SRC / "mantissa_embed"
OPTIONAL = {
    "faiss",
    "matplotlib",
    "tqdm",
    "torch",
    "pytorch_metric_learning",
    "dask",
    "distributed",
    "hypothesis",
}

pytestmark = pytest.mark.skipif(not PKG.is_dir(), reason="needs the source tree (src/mantissa_embed)")


def _modules():
    """{dotted name: path} of every Python module of the package."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name):
    return MODULES[name].name == "__init__.py"


def _resolve(name, node):
    """The absolute module names a (module-level or local) import statement refers to."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        pkg = name if _is_package(name) else name.rpartition(".")[0]
        for _ in range(node.level - 1):
            pkg = pkg.rpartition(".")[0]
        base = f"{pkg}.{base}" if base else pkg
    targets = []
    for a in node.names:
        sub = f"{base}.{a.name}"
        targets.append(sub if sub in MODULES else base)
    return targets


def _imports(name, module_level):
    tree = ast.parse(MODULES[name].read_text(), str(MODULES[name]))
    found = []

    def visit(node, in_function, in_type_checking):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if in_function != module_level and not in_type_checking:
                    found.extend((t, child.lineno) for t in _resolve(name, child))
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(child, in_function, True)
            else:
                visit(
                    child,
                    in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
                    in_type_checking,
                )

    visit(tree, False, False)
    return found


def test_no_pxi_and_one_engine_declaration():
    assert not list(SRC.rglob("*.pxi")), "the engine is declared in one .pxd, no .pxi"
    holders = [
        p
        for p in SRC.rglob("*.p*")
        if p.suffix in (".pyx", ".pxd", ".pxi") and 'cdef extern from "engine.h"' in p.read_text()
    ]
    assert len(holders) == 1 and holders[0].suffix == ".pxd", holders


def test_only_backend_imports_the_twin():
    bad = []
    for name in MODULES:
        if name.startswith("mantissa_embed._reference") or name == "mantissa_embed.backend":
            continue
        for target, line in _imports(name, True) + _imports(name, False):
            if target.startswith("mantissa_embed._reference"):
                bad.append(f"{MODULES[name].relative_to(ROOT)}:{line}")
    assert not bad, bad


def test_losses_have_no_scatter_or_reducer_type_checks():
    bad = []
    for path in sorted((PKG / "losses").glob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if "np.add.at" in line or re.search(r"type\([^)]*\)\s+is\s+\w*Reducer", line):
                bad.append(f"{path.name}:{i}: {line.strip()}")
    assert not bad, bad


def test_no_module_over_500_lines():
    long = {
        str(p.relative_to(ROOT)): n for p in MODULES.values() if (n := len(p.read_text().splitlines())) > 500
    }
    assert not long, long


def test_no_import_cycle():
    # module-level and function-local imports alike: a local import does not break a circle
    graph = {
        name: sorted(
            {t for t, _ in _imports(name, True) + _imports(name, False) if t in MODULES and t != name}
        )
        for name in MODULES
    }
    # Tarjan's strongly connected components
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def strongconnect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            strongconnect(v)
    assert not cycles, cycles


def test_function_local_imports_only_for_optional_dependencies():
    bad = []
    for name in MODULES:
        for target, line in _imports(name, False):
            if target.split(".")[0] not in OPTIONAL:
                bad.append(f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}")
    assert not bad, bad


def test_engine_reexports_every_family_function():
    """Each family module lists its public ``def``s in ``__all__``; ``engine`` re-exports them all."""
    import importlib

    import mantissa_embed.engine as engine

    exported = set()
    for pyx in sorted((PKG / "_engine").glob("*.pyx")):
        defs = set(re.findall(r"^(?:cp)?def ([a-z][a-z_0-9]*)\(", pyx.read_text(), re.M))
        family = importlib.import_module(f"mantissa_embed._engine.{pyx.stem}")
        assert set(family.__all__) == defs, pyx.name
        exported |= defs
    missing = sorted(n for n in exported if not hasattr(engine, n))
    assert not missing, missing
    extra = sorted(n for n in vars(engine) if not n.startswith("_") and n not in exported)
    assert not extra, extra
