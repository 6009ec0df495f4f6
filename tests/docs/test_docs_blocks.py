"""Every ```python block of README.md and docs/**/*.md runs on its own, in a fresh interpreter.

Each block is written to a file in an empty temporary directory and run there with
``sys.executable`` (a block carries its own imports and data; nothing is shared between
blocks). A block whose imports name an optional dependency that is not installed is skipped
with that reason. A block preceded by ``<!-- not-run: reason -->`` (on the line right above
its fence) is deliberately not runnable and is skipped with that reason. ``MANTISSA_EMBED_DATA``
points at ``<repo>/../shared/data`` when it exists, for a block that loads a data set.
"""

import ast
import importlib.util
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import mantissa_embed  # noqa: F401 - an editable install rebuilds here, once, not in two blocks at a time

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
TIMEOUT = 120  # seconds per block; a block should take a few
WORKERS = max(1, min(2, os.cpu_count() or 1))

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[ \t]*$")
_CLOSE = re.compile(r"^[ \t]*```[ \t]*$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(?P<reason>.+?)\s*-->\s*$")

# an import (module prefix) -> the distribution that provides it
OPTIONAL = {
    "faiss": "faiss-cpu",
    "dask": "dask",
    "distributed": "distributed",
    "matplotlib": "matplotlib",
    "torch": "torch",
    "pytorch_metric_learning": "pytorch-metric-learning",
    "hypothesis": "hypothesis",
}
# package modules and names that import an optional dependency when used
NEEDS = {
    "mantissa_embed.distributed": ("dask", "distributed"),
    "mantissa_embed.viz": ("matplotlib",),
    "FaissKNN": ("faiss",),
    "FaissKMeans": ("faiss",),
}


def doc_files():
    """README.md and every Markdown file under docs/, in a fixed order."""
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def extract_blocks(text):
    """``[(line, code, not_run_reason or None)]`` of the ```python fences of a Markdown text
    (``line``: 1-based line of the fence; an indented fence is dedented by its indent)."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, ind = i, len(m.group("indent"))
        i += 1
        body = []
        while i < len(lines) and not _CLOSE.match(lines[i]):
            body.append(lines[i][ind:] if lines[i][:ind].strip() == "" else lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"unclosed ```python fence at line {start + 1}")
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        marker = _NOT_RUN.match(lines[prev]) if prev >= 0 else None
        out.append((start + 1, "\n".join(body) + "\n", marker.group("reason") if marker else None))
        i += 1
    return out


def missing_optional(code):
    """The optional distributions a block imports (or uses through the package) that are not
    installed, sorted."""
    tree = ast.parse(code)
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            used.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            used.add(node.module)
            used.update(f"{node.module}.{a.name}" for a in node.names)
            used.update(a.name for a in node.names)
        elif isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
    mods = {name.split(".")[0] for name in used if name.split(".")[0] in OPTIONAL}
    for name, deps in NEEDS.items():
        if name in used:
            mods.update(deps)
    return sorted(OPTIONAL[m] for m in mods if importlib.util.find_spec(m) is None)


def _first_line(code):
    """The block's first line that is not blank, a comment or an import (for the test id)."""
    lines = [s.strip() for s in code.splitlines() if s.strip() and not s.strip().startswith("#")]
    for s in lines:
        if not s.startswith(("import ", "from ")):
            return re.sub(r"\s+", " ", s)[:40]
    return lines[0][:40] if lines else "(empty)"


def _heading_before(lines, line):
    """The text of the last Markdown heading above 1-based ``line`` (outside fences), or ""."""
    heading, fenced = "", False
    for s in lines[: line - 1]:
        if s.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", s):
            heading = s.lstrip("#").strip().replace("`", "")
    return heading


def _cases():
    cases = []
    for path in doc_files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        lines = text.splitlines()
        for i, (line, code, reason) in enumerate(extract_blocks(text)):
            name = f"{rel}:{i}:{_heading_before(lines, line)[:32]}:{_first_line(code)}"
            cases.append(pytest.param(rel, line, code, reason, id=name))
    return cases


CASES = _cases()


def test_the_pages_have_blocks():
    files = {c.values[0] for c in CASES}
    assert "README.md" in files and "docs/losses.md" in files and "docs/evaluation.md" in files, files
    assert len(CASES) >= 80, len(CASES)


def test_extract_blocks_reads_fences_and_markers():
    text = (
        "x\n```python\na = 1\n```\n\n<!-- not-run: needs the MNIST download -->\n"
        "```python\nb = 2\n```\n```sh\nls\n```\n  ```python\n  c = 3\n  ```\n"
    )
    assert extract_blocks(text) == [
        (2, "a = 1\n", None),
        (7, "b = 2\n", "needs the MNIST download"),
        (13, "c = 3\n", None),
    ]
    assert missing_optional("import os\n") == []
    assert missing_optional("import not_a_module_anywhere\n") == []  # not an optional dependency


def test_a_block_needing_a_missing_optional_dependency_is_named(monkeypatch):
    monkeypatch.setitem(OPTIONAL, "not_installed_here", "not-installed-dist")
    monkeypatch.setitem(NEEDS, "mantissa_embed.not_installed_here", ("not_installed_here",))
    assert missing_optional("import not_installed_here.sub as x\n") == ["not-installed-dist"]
    assert missing_optional("from mantissa_embed import not_installed_here\n") == ["not-installed-dist"]
    assert missing_optional("import numpy\n") == []


def _run(code, cwd):
    """Run ``code`` as a script in ``cwd`` with a fresh interpreter: ``(returncode, stderr)``,
    returncode None after TIMEOUT seconds (the process is killed)."""
    script = Path(cwd) / "block.py"
    script.write_text(code)
    env = dict(os.environ)
    env.setdefault("MPLBACKEND", "Agg")
    if DATA.is_dir():
        env.setdefault("MANTISSA_EMBED_DATA", str(DATA))
    try:
        out = subprocess.run(
            [sys.executable, str(script)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return None, ""
    return out.returncode, out.stderr


def _skip_reason(rel, line, code, reason):
    if reason is not None:
        return f"{rel}:{line} is marked not-run: {reason}"
    missing = missing_optional(code)
    if missing:
        return f"{rel}:{line} needs {', '.join(missing)} (not installed)"
    return None


@pytest.fixture(scope="module")
def block_runs(request, tmp_path_factory):
    """{test id: future (returncode, stderr)}: the selected blocks, started in test order on
    WORKERS processes at a time (each block is mostly interpreter start-up and imports, one
    core's work), so that the page set costs about its CPU time divided by the cores."""
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    futures = {}
    for item in request.session.items:
        if item.path != Path(__file__) or getattr(item, "originalname", None) != "test_block_runs_alone":
            continue
        params = item.callspec.params
        args = (params["rel"], params["line"], params["code"], params["reason"])
        if _skip_reason(*args) is None:
            futures[item.callspec.id] = pool.submit(_run, params["code"], tmp_path_factory.mktemp("block"))
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("rel, line, code, reason", CASES)
def test_block_runs_alone(rel, line, code, reason, block_runs, request):
    skip = _skip_reason(rel, line, code, reason)
    if skip:
        pytest.skip(skip)
    returncode, stderr = block_runs[request.node.callspec.id].result()
    assert returncode is not None, f"{rel}:{line}: the block ran over {TIMEOUT} s"
    assert returncode == 0, f"{rel}:{line}: the block failed on its own:\n{stderr[-3000:]}"
