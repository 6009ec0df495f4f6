"""The public namespaces show their API only, and their API is documented.

For each module of ``MODULES``: every public name of ``dir(module)`` (its submodules aside) is in
``__all__``; every name of ``__all__`` resolves; and every name of ``__all__`` is documented: a
page of docs/ names it outside its code blocks, in a heading, an inline code span or a
mkdocstrings ``:::`` directive (with its options, e.g. a ``members:`` list), bare or qualified by
its module (``load``, ``datasets.load``, ``mantissa_embed.datasets.load``) but not as another
object's attribute (``np.load`` does not document ``datasets.load``). A module-wide directive
(``::: mantissa_embed.losses``) documents none of its names by itself.
"""

import functools
import importlib
import inspect
import re

import pytest

from _helpers import DOCS

MODULES = ["models", "datasets", "layers", "losses", "miners", "evaluation"]

_FENCE = re.compile(r"^\s*(```|~~~)")
_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


def _module(name):
    return importlib.import_module(f"mantissa_embed.{name}")


def _is_submodule(module, name):
    value = getattr(module, name)
    return inspect.ismodule(value) and value.__name__.startswith(module.__name__ + ".")


def _documenting_text(text):
    """The headings, inline code spans and ``:::`` directive blocks of a page, code blocks left out."""
    lines, in_fence = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            lines.append(line)
    found, directive = [], False
    for line in lines:
        if line.startswith(":::"):
            directive = True
        elif line.strip() and not line[0].isspace():
            directive = False
        if directive or line.startswith("#"):
            found.append(line)
    found += [m.group(2) for m in _SPAN.finditer("\n".join(lines))]
    return found


@functools.cache
def _documented():
    pages = sorted(DOCS.rglob("*.md"))
    assert pages, DOCS
    return tuple(
        (page.relative_to(DOCS).as_posix(), snippet)
        for page in pages
        for snippet in _documenting_text(page.read_text())
    )


@pytest.mark.parametrize("name", MODULES)
def test_dir_shows_only_the_api(name):
    module = _module(name)
    extra = [
        n
        for n in dir(module)
        if not n.startswith("_") and n not in module.__all__ and not _is_submodule(module, n)
    ]
    assert not extra, f"mantissa_embed.{name}: public in dir() but not in __all__: {extra}"


@pytest.mark.parametrize("name", MODULES)
def test_every_name_of_all_resolves(name):
    module = _module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"mantissa_embed.{name}.__all__ names what the module lacks: {missing}"


@pytest.mark.parametrize("name", MODULES)
def test_every_name_of_all_is_documented(name):
    module = _module(name)
    documented = _documented()
    missing = []
    for n in module.__all__:
        mention = re.compile(rf"(?<![\w.])(?:(?:mantissa_embed\.)?{name}\.)?{re.escape(n)}(?!\w)")
        if not any(mention.search(snippet) for _, snippet in documented):
            missing.append(n)
    assert not missing, (
        f"mantissa_embed.{name}: not named in a heading, code span or ::: directive "
        f"of docs/**/*.md: {missing}"
    )
