"""The kernel-family table of docs/architecture.md ("Kernel families") and the source tree agree,
both ways.

A family row names one family F and its files in the four layers: the C file(s) in src/engine_c
(``F.c``, and ``F_*.c`` when the family is split by algorithm or ISA), the Cython module
``_engine/_F.pyx`` (with its stub ``_F.pyi``), the checks ``_checks/F.py`` and the twin
``_reference/_F.py``; ``—`` marks a layer the family lacks. The ``shared`` row lists what no
family owns (``_checks/arrays.py``, the .pxd files, the headers).

- every file the table names exists;
- every ``src/engine_c/*.c``, ``_engine/_*.pyx`` / ``_*.pyi``, ``_checks/*.py`` (``__init__``
  aside) and ``_reference/_*.py`` (``__init__`` aside) is named by exactly one row;
- a family row's files carry its name;
- the build lists (``engine_sources``, ``engine_modules``) and the star imports of ``engine.py``
  and ``_reference/__init__.py`` hold the table's families (the build lists in its order, the star imports in isort's).
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
C_DIR = ROOT / "src" / "engine_c"
PKG = ROOT / "src" / "mantissa_embed"
#: the table's columns after the family name, and the directory each one's names are in
LAYERS = ("c", "cython", "checks", "twin")
DIRS = {"c": C_DIR, "cython": PKG / "_engine", "checks": PKG / "_checks", "twin": PKG / "_reference"}
NONE = "—"

pytestmark = pytest.mark.skipif(
    not (DOC.is_file() and PKG.is_dir()), reason="needs the source tree and docs/architecture.md"
)


def parse_table(text):
    """{family: {layer: [file names]}} and the shared row's {layer: [file names]} of the first
    table under the "## Kernel families" heading; ValueError when the section or a row is malformed."""
    m = re.search(r"^## Kernel families\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if m is None:
        raise ValueError('docs/architecture.md has no "## Kernel families" section')
    rows = [line for line in m.group(1).splitlines() if line.startswith("|")]
    if len(rows) < 3 or not re.fullmatch(r"\|(\s*-+\s*\|)+", rows[1].replace(" ", "")):
        raise ValueError("the Kernel families section has no table (header, separator, rows)")
    families, shared = {}, None
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) != 1 + len(LAYERS):
            raise ValueError(f"a row of {1 + len(LAYERS)} cells expected, got {row!r}")
        files = {}
        for layer, cell in zip(LAYERS, cells[1:]):
            names = re.findall(r"`([^`]+)`", cell)
            if not names and cell != NONE:
                raise ValueError(f"a cell holds `file` names or {NONE}, got {cell!r} in {row!r}")
            files[layer] = names
        if cells[0] == "shared":
            if shared is not None:
                raise ValueError("two shared rows")
            shared = files
            continue
        name = re.fullmatch(r"`([a-z][a-z0-9_]*)`", cells[0])
        if name is None:
            raise ValueError(f"a family row starts with its `name` in backquotes, got {row!r}")
        if name.group(1) in families:
            raise ValueError(f"family {name.group(1)!r} has two rows")
        families[name.group(1)] = files
    return families, shared or {layer: [] for layer in LAYERS}


FAMILIES, SHARED = parse_table(DOC.read_text())


def _rows():
    yield from FAMILIES.items()
    yield "shared", SHARED


def test_the_table_has_the_families():
    assert FAMILIES, "no family row"
    assert "arrays.py" in SHARED["checks"]


def test_every_named_file_exists():
    missing = []
    for family, files in _rows():
        for layer in LAYERS:
            for name in files[layer]:
                if not (DIRS[layer] / name).is_file():
                    missing.append(f"{family}: {DIRS[layer].relative_to(ROOT)}/{name}")
                stub = (DIRS[layer] / name).with_suffix(".pyi")
                if layer == "cython" and name.endswith(".pyx") and not stub.is_file():
                    missing.append(f"{family}: the stub of {name}")
    assert not missing, missing


def _tree():
    """{layer: file names} the table must cover (the .pyi stubs stand with their .pyx)."""
    return {
        "c": sorted(p.name for p in C_DIR.glob("*.c")),
        "cython": sorted(p.name for p in DIRS["cython"].glob("_*.pyx"))
        + sorted(p.with_suffix(".pyx").name for p in DIRS["cython"].glob("_*.pyi")),
        "checks": sorted(p.name for p in DIRS["checks"].glob("*.py") if p.name != "__init__.py"),
        "twin": sorted(p.name for p in DIRS["twin"].glob("_*.py") if p.name != "__init__.py"),
    }


def test_every_file_of_the_tree_is_in_exactly_one_row():
    wrong = []
    for layer, names in _tree().items():
        for name in sorted(set(names)):
            rows = [family for family, files in _rows() if name in files[layer]]
            if len(rows) != 1:
                wrong.append(f"{DIRS[layer].relative_to(ROOT)}/{name}: rows {rows}")
    assert not wrong, wrong


def _owns(family, layer, name):
    if layer == "c":
        return name == f"{family}.c" or (name.startswith(f"{family}_") and name.endswith(".c"))
    return name == {"cython": f"_{family}.pyx", "checks": f"{family}.py", "twin": f"_{family}.py"}[layer]


def test_a_row_carries_its_family_name():
    wrong = [
        f"{family}: {name}"
        for family, files in FAMILIES.items()
        for layer in LAYERS
        for name in files[layer]
        if not _owns(family, layer, name)
    ]
    assert not wrong, wrong
    for family, files in FAMILIES.items():
        assert len(files["cython"]) <= 1 and len(files["checks"]) <= 1 and len(files["twin"]) <= 1, family
        assert not files["c"] or f"{family}.c" in files["c"], f"{family}: its C files need {family}.c"


def _quoted(path, list_name):
    block = re.search(rf"^{list_name} = (?:files\()?\[?\n(.*?)^[\])]", path.read_text(), re.M | re.S)
    assert block, f"{path.relative_to(ROOT)} has no {list_name}"
    return re.findall(r"'([^']+)'", block.group(1))


def _star_imports(path, prefix):
    return re.findall(rf"^from {re.escape(prefix)}(\w+) import \*", path.read_text(), re.M)


def test_build_lists_and_namespaces_follow_the_table():
    order = list(FAMILIES)
    c_files = [name for files in FAMILIES.values() for name in files["c"]]
    sources = [Path(s).name for s in _quoted(ROOT / "meson.build", "engine_sources")]
    assert sources == c_files, "meson.build engine_sources must list the table's C files in its order"
    modules = [f[: -len(".pyx")] for fam in order for f in FAMILIES[fam]["cython"]]
    assert _quoted(DIRS["cython"] / "meson.build", "engine_modules") == modules
    # the namespaces' star imports are in isort's order (ruff's I rules), the build lists in the table's
    assert sorted(_star_imports(PKG / "engine.py", "mantissa_embed._engine.")) == sorted(modules)
    twins = [f[: -len(".py")] for fam in order for f in FAMILIES[fam]["twin"]]
    assert sorted(_star_imports(DIRS["twin"] / "__init__.py", ".")) == sorted(twins)
