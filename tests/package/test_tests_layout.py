"""The tests mirror the package (docs/architecture.md, "Tests"): a test file sits in
``tests/<X>/`` where ``X`` is the subpackage or top-level module of ``src/mantissa_embed`` it
tests (a leading underscore dropped: ``_engine`` and ``engine.py`` share ``tests/engine/``), or
in one of the few folders named for a concern that spans the package."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "mantissa_embed"
TESTS = ROOT / "tests"

# folders that are not one module's: what each one checks
CONCERNS = {
    "benchmarks": "the benchmark scripts and the asv suite run",
    "demo": "python -m mantissa_embed (__main__.py and the demo folder it trains on)",
    "docs": "the code blocks of README.md and docs/ run as written",
    "package": "the package as a whole: structure rules, public namespaces, typing stubs",
    "recipes": "the recipes page (docs/recipes/) runs as written",
}


def _package_names():
    names = set()
    for path in PKG.iterdir():
        if path.name.startswith("__"):
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            names.add(path.name.lstrip("_"))
        elif path.suffix == ".py":
            names.add(path.stem.lstrip("_"))
    return names


def test_no_test_file_at_the_root():
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []


def test_every_folder_is_a_module_or_a_named_concern():
    modules = _package_names()
    for folder in sorted(p for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        if not any(folder.rglob("test_*.py")):
            continue
        assert folder.name in modules or folder.name in CONCERNS, (
            f"tests/{folder.name}/ mirrors no module of src/mantissa_embed and is no named concern"
        )
