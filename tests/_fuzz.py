"""The C-boundary fuzz kit of ``tests/engine/fuzz/``: hypothesis strategies for the arguments of
the engine wrappers, one-argument mutations of a valid call, and the property every call must
keep.

A family's fuzz module maps each wrapper name to a *spec*: a builder drawing the keyword
arguments of a valid call (small seeded arrays, extreme but legal shapes and values), plus the
names of its output buffers and of the arrays it updates in place. :func:`fuzz_wrapper` then
draws a valid call, guards every contiguous array argument with sentinel regions on both sides,
optionally corrupts one argument (dtype, ndim, layout, shape, values, a negative or huge int,
an output aliasing an input or another output, a read-only output) and calls the wrapper. The
call must return, or raise ``ValueError`` / ``TypeError`` (naming the argument when its type,
dtype or rank was changed); no other exception, no write outside the buffers, no change to a
read-only input. A crash kills the process: run a family alone with
``python -X faulthandler -m pytest tests/engine/fuzz/test_fuzz_<family>.py``; a call running
longer than :data:`HANG_SECONDS` dumps the stacks and exits.

Each family module defines ``test_fuzz = family_test(SPECS)`` (random valid or mutated calls) and,
when a wrapper takes output buffers, ``test_fuzz_alias = alias_test(SPECS)`` (every call with an
output over an input's memory, an index array half of the time: the aliasing that crashed).
``tests/engine/fuzz/test_fuzz_coverage.py`` fails when an engine wrapper has no spec.
"""

from __future__ import annotations

import faulthandler
import re
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings, strategies as st

from mantissa_embed import engine

#: the settings of every fuzz test: few examples (the suite budget is about a minute),
#: reproducible draws, no deadline (the machine is shared)
FUZZ = settings(
    max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)

#: a single call running longer than this is a hang: dump the stacks and exit
HANG_SECONDS = 120

#: float32 values at the edges: zeros of both signs, denormals, the smallest normal, values
#: near the float32 maximum
EXTREME = np.array(
    [0.0, -0.0, 1e-45, -1e-40, 1.1754944e-38, 1.0, -1.0, 3e38, -3e38, 3.4028235e38], dtype=np.float32
)
NONFINITE = np.array([np.nan, np.inf, -np.inf], dtype=np.float32)

_GUARD = 16
_SENTINEL = np.uint8(0xA5)

#: the mutations of an array argument
ARRAY_MUTATIONS = (
    "float64",
    "int32",
    "bool",
    "object",
    "complex",
    "none",
    "str",
    "list",
    "scalar",
    "ndim+",
    "ndim-",
    "strided",
    "reversed",
    "fortran",
    "readonly",
    "grow",
    "shrink",
    "extreme",
    "nonfinite",
    "empty",
)
#: the mutations of an int argument
INT_VALUES = (
    -1,
    0,
    -(2**63),
    2**31,
    2**62,
    2**63 - 1,
    2**63,
    2**64 + 1,
    True,
    1.5,
    None,
    "3",
    np.int64(2),
    np.uint64(2**63),
)
#: the mutations of a float argument
FLOAT_VALUES = (
    np.nan,
    np.inf,
    -np.inf,
    1e39,
    -1e39,
    3.4e38,
    1e300,
    -0.0,
    0.0,
    1e-45,
    1e-320,
    -1.0,
    True,
    None,
    "1.0",
    np.float32(0.5),
    np.float64(2.0),
    1 + 1j,
    2,
)
#: the mutations of a bool flag
FLAG_VALUES = (None, "yes", 2, -1, np.bool_(True), 1.0, [True])
#: the mutations of a string option
STR_VALUES = (None, "", "nonsense", 1, b"relu", ["relu"])
#: the mutations of a shape tuple
SHAPE_MUTATIONS = ("negative", "huge", "short", "long", "float", "none", "str", "product")

#: mutations after which an error must name the argument (a change of rank or size may be
#: reported against the argument whose shape it no longer matches)
_NAMING = {"object", "complex", "none", "str", "bool", "type", "flag_type"}


@dataclass
class Spec:
    """How to fuzz one wrapper: ``build(draw) -> kwargs`` of a valid call, the output buffers
    (``outs``), the arrays updated in place (``inplace``), and arguments left alone (``fixed``)."""

    build: object
    outs: tuple = ()
    inplace: tuple = ()
    fixed: tuple = ()
    ints: tuple = ()
    floats: tuple = ()
    flags: tuple = ()
    strs: tuple = ()
    shapes: tuple = ()


# ------------------------------------------------------------------ strategies of valid arguments

_DIMS = (0, 1, 1, 2, 3, 3, 4, 5, 7, 8, 9, 16, 17)


def dim(draw, lo=0, hi=17, large=None):
    """A size in [lo, hi]: 0, 1, odd, SIMD-width neighbours; ``large`` (rarely) when given."""
    if large is not None and draw(st.integers(0, 9)) == 0:
        return large
    choices = [d for d in _DIMS if lo <= d <= hi] or [lo]
    return draw(st.sampled_from(choices))


def any_shape(draw):
    """0-D to 4-D, at most one large (1031: the vector loops' tails) dimension."""
    nd = draw(st.integers(0, 4))
    big = draw(st.integers(-1, 3))
    return tuple(dim(draw, large=1031) if i == big else dim(draw, hi=9) for i in range(nd))


def rng(draw):
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


def f32(draw, shape, scale=1.0, extreme=True, positive=False):
    """A float32 array of ``shape``: seeded normal values times ``scale``; with ``extreme``, now
    and then all values from :data:`EXTREME` (denormals, -0.0, 3e38) instead."""
    g = rng(draw)
    kind = draw(st.sampled_from(("normal",) * 4 + ("extreme", "zero"))) if extreme else "normal"
    if kind == "extreme":
        a = g.choice(EXTREME, size=shape).astype(np.float32)
    elif kind == "zero":
        a = np.zeros(shape, dtype=np.float32)
    else:
        a = (g.standard_normal(shape) * scale).astype(np.float32)
    a = np.asarray(a, dtype=np.float32)  # a 0-D draw is an array, not a numpy scalar
    return np.asarray(np.abs(a), dtype=np.float32) if positive else a


def labels(draw, n, classes=None):
    """int64 labels (n,) in [0, classes)."""
    k = classes if classes is not None else draw(st.integers(1, 4))
    return rng(draw).integers(0, max(k, 1), n).astype(np.int64)


def index(draw, k, upper):
    """int64 indices (k,) in [0, upper) (empty when upper is 0)."""
    if upper == 0:
        return np.zeros(0, dtype=np.int64)
    return rng(draw).integers(0, upper, k).astype(np.int64)


def maybe_out(draw, shape, dtype=np.float32):
    """None (the wrapper allocates) or a caller buffer of ``shape`` (garbage values)."""
    if draw(st.integers(0, 2)) == 0:
        return None
    return np.full(shape, 7, dtype=dtype) if dtype != np.float32 else np.full(shape, np.nan, np.float32)


# ------------------------------------------------------------------ guards


class Guards:
    """Copies of the contiguous array arguments, each with sentinel bytes on both sides, and a
    snapshot of their contents to compare after the call."""

    def __init__(self):
        self.items = []  # (name, buf, start, nbytes, view, snapshot)

    def wrap(self, name, a):
        if not (type(a) is np.ndarray and a.flags.c_contiguous and a.dtype != object):
            return a
        nbytes = a.nbytes
        buf = np.full(nbytes + 2 * _GUARD * 8, _SENTINEL, dtype=np.uint8)
        start = _GUARD * 8  # 128-byte offset: the view stays aligned for any dtype
        view = buf[start : start + nbytes].view(a.dtype).reshape(a.shape)
        view[...] = a
        if not a.flags.writeable:
            view.flags.writeable = False
        self.items.append([name, buf, start, nbytes, view, None])
        return view

    def snapshot(self):
        for it in self.items:
            it[5] = it[1].copy()

    def check(self, writable):
        """Guard bytes untouched; contents unchanged unless the view shares memory with an
        array in ``writable`` (outputs, in-place arguments)."""
        for name, buf, start, nbytes, view, snap in self.items:
            lo, hi = buf[:start], buf[start + nbytes :]
            assert (lo == _SENTINEL).all() and (hi == _SENTINEL).all(), (
                f"write outside the buffer of {name!r}"
            )
            if any(w is not None and np.may_share_memory(view, w) for w in writable):
                continue
            assert np.array_equal(buf, snap), f"input {name!r} was modified"


# ------------------------------------------------------------------ mutations


def _mutate_array(draw, a, how):
    if how == "float64":
        return a.astype(np.float64)
    if how == "int32":
        with np.errstate(invalid="ignore"):  # NaN / Inf / 3e38 cast to int: garbage, on purpose
            return a.astype(np.int32) if a.dtype.kind == "f" else a.astype(np.float32)
    if how == "bool":
        return a.astype(bool)
    if how == "object":
        return a.astype(object)
    if how == "complex":
        return a.astype(np.complex64)
    if how == "none":
        return None
    if how == "str":
        return "abc"
    if how == "list":
        return a.tolist()
    if how == "scalar":
        return a.dtype.type(1)
    if how == "ndim+":
        return a[None]
    if how == "ndim-":
        if a.ndim == 0:
            return a.reshape(1)[:0]
        if a.ndim == 1:
            return np.zeros((), a.dtype) if a.size == 0 else a[0].copy()
        return a.reshape(a.shape[:-2] + (a.shape[-2] * a.shape[-1],))
    if how == "strided":
        if a.ndim == 0:
            return a
        b = np.repeat(a, 2, axis=-1)[..., ::2]
        return b
    if how == "reversed":
        return a[::-1] if a.ndim else a
    if how == "fortran":
        return np.asfortranarray(a)
    if how == "readonly":
        b = a.copy()
        b.flags.writeable = False
        return b
    if how in ("grow", "shrink"):
        if a.ndim == 0:
            return a.reshape(1)
        ax = draw(st.integers(0, a.ndim - 1))
        if how == "grow":
            pad = [(0, 0)] * a.ndim
            pad[ax] = (0, 1)
            return np.pad(a, pad)
        if a.shape[ax] == 0:
            return np.pad(a, [(0, 1) if i == ax else (0, 0) for i in range(a.ndim)])
        return np.take(a, range(a.shape[ax] - 1), axis=ax)
    if how == "extreme":
        return (
            rng(draw).choice(EXTREME, size=a.shape).astype(a.dtype)
            if a.dtype.kind == "f"
            else np.full(a.shape, np.iinfo(a.dtype).max if a.dtype.kind in "iu" else 1, dtype=a.dtype)
        )
    if how == "nonfinite":
        if a.dtype.kind != "f" or a.size == 0:
            return a
        b = a.copy()
        b.reshape(-1)[rng(draw).integers(0, a.size)] = draw(st.sampled_from(list(NONFINITE)))
        return b
    if how == "empty":
        return a[:0] if a.ndim else a
    raise AssertionError(how)


def _mutate_shape(draw, s, how):
    s = tuple(s)
    if how == "negative":
        return s[:-1] + (-1,) if s else (-1,)
    if how == "huge":
        i = draw(st.integers(0, max(len(s) - 1, 0)))
        return tuple(
            2 ** draw(st.sampled_from((31, 40, 62, 63, 64))) if j == i else v for j, v in enumerate(s)
        )
    if how == "product":  # every entry large: the product overflows int64
        return tuple(2**20 for _ in s)
    if how == "short":
        return s[:-1]
    if how == "long":
        return s + (1,)
    if how == "float":
        return tuple(float(v) for v in s)
    if how == "none":
        return None
    if how == "str":
        return "3,3"
    raise AssertionError(how)


def mutate(draw, kwargs, spec, guards=None, only=None):
    """Corrupt one argument of the valid call ``kwargs`` (in place); returns (name, how) or None."""
    arrays = [k for k, v in kwargs.items() if isinstance(v, np.ndarray) and k not in spec.fixed]
    choices = []
    for k in arrays:
        choices += [(k, h) for h in ARRAY_MUTATIONS]
    for k in spec.outs:
        if k in kwargs and k not in spec.fixed:
            # aliasing weighs as much as the other mutations together: the overlap checks guard
            # against the crashes (an index array overwritten mid-call addresses out of bounds)
            choices += [(k, "alias"), (k, "alias_shift")] * 6 + [(k, "readonly_out"), (k, "wrong_dtype_out")]
    choices += [(k, "int") for k in spec.ints if k in kwargs]
    choices += [(k, "float") for k in spec.floats if k in kwargs]
    choices += [(k, "flag") for k in spec.flags if k in kwargs]
    choices += [(k, "strval") for k in spec.strs if k in kwargs]
    choices += [(k, "shape") for k in spec.shapes if k in kwargs]
    if only is not None:
        choices = [c for c in choices if c[1] in only]
    if not choices:
        return None
    # the argument first, then its mutation: a scalar is hit as often as an array
    name = draw(st.sampled_from(sorted({k for k, _ in choices})))
    name, how = draw(st.sampled_from([c for c in choices if c[0] == name]))
    v = kwargs[name]
    if how == "int":
        kwargs[name] = draw(st.sampled_from(INT_VALUES))
        how = "type" if not isinstance(kwargs[name], (int, np.integer)) else "int"
    elif how == "float":
        kwargs[name] = draw(st.sampled_from(FLOAT_VALUES))
        how = "type" if isinstance(kwargs[name], (str, complex)) else "float"
    elif how == "flag":
        kwargs[name] = draw(st.sampled_from(FLAG_VALUES))
        if not isinstance(kwargs[name], (bool, np.bool_, int)):
            how = "flag_type"  # None, "yes", 1.0, [True]: a TypeError, not a truth value
    elif how == "strval":
        kwargs[name] = draw(st.sampled_from(STR_VALUES))
    elif how == "shape":
        how = draw(st.sampled_from(SHAPE_MUTATIONS))
        kwargs[name] = _mutate_shape(draw, v, how)
    elif how in ("alias", "alias_shift"):
        others = [k for k, a in kwargs.items() if k != name and isinstance(a, np.ndarray) and a.size]
        if v is None or not others or guards is None:
            return None
        ints = [k for k in others if kwargs[k].dtype.kind in "iu"]  # indices: the dangerous aliases
        src_name = draw(st.sampled_from(ints if ints and draw(st.booleans()) else others))
        src = kwargs[src_name]
        if not src.flags.c_contiguous:
            return None
        # one guarded buffer holding both: the input (its values) at 0, the output at 0 or one
        # element on; either may be the larger, so the output can cover entries not yet read
        off = v.itemsize if how == "alias_shift" else 0
        buf = guards.wrap(f"{src_name}+{name}", np.zeros(max(src.nbytes, off + v.nbytes), np.uint8))
        new_src = buf[: src.nbytes].view(src.dtype).reshape(src.shape)
        new_src[...] = src
        kwargs[src_name] = new_src
        kwargs[name] = buf[off : off + v.nbytes].view(v.dtype).reshape(v.shape)
    elif how == "readonly_out":
        if v is None:
            return None
        b = v.copy()
        b.flags.writeable = False
        kwargs[name] = b
    elif how == "wrong_dtype_out":
        if v is None:
            return None
        kwargs[name] = v.astype(np.float64 if v.dtype != np.float64 else np.float32)
        how = "type"
    else:
        if v is None:
            return None
        kwargs[name] = _mutate_array(draw, v, how)
    return name, how


# ------------------------------------------------------------------ the property


def _summary(kwargs):
    def one(v):
        if isinstance(v, np.ndarray):
            return f"ndarray{v.shape}:{v.dtype}{'' if v.flags.c_contiguous else ':strided'}"
        return repr(v) if not isinstance(v, (list, str)) or len(repr(v)) < 40 else type(v).__name__

    return ", ".join(f"{k}={one(v)}" for k, v in kwargs.items())


def fuzz_wrapper(data, name, spec, mutate_p=0.8, only=None):
    """One hypothesis example for the wrapper ``name``: a valid call (its contiguous arrays
    guarded), one argument corrupted with probability ``mutate_p``, under the property: the
    call returns or raises ValueError / TypeError (naming the argument after a change of type,
    dtype or rank); no write outside a buffer; inputs unchanged."""
    fn = name if callable(name) else getattr(engine, name)
    guards = Guards()
    kwargs = {k: guards.wrap(k, v) for k, v in spec.build(data.draw).items()}
    m = (
        mutate(data.draw, kwargs, spec, guards, only)
        if data.draw(st.integers(0, 9)) < 10 * mutate_p
        else None
    )
    note(f"{name}({_summary(kwargs)}) mutation {m}")
    guards.snapshot()
    writable = [kwargs.get(k) for k in spec.outs + spec.inplace]
    writable = [w for w in writable if isinstance(w, np.ndarray)]
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    try:
        fn(**kwargs)
        assert m is None or m[1] != "flag_type", (
            f"the flag {m[0]}={kwargs[m[0]]!r} was taken as a truth value"
        )
    except (ValueError, TypeError) as e:
        msg = str(e)
        assert msg, f"{type(e).__name__} without a message"
        if m is not None and m[1] in _NAMING:
            names = {m[0], m[0].replace("_shape", ".shape")}  # x_shape: "x.shape" too
            assert any(re.search(rf"\b{re.escape(n)}\b", msg) for n in names), (
                f"{type(e).__name__} after {m[1]!r} on {m[0]!r} does not name it: {msg}"
            )
    finally:
        faulthandler.cancel_dump_traceback_later()
    guards.check(writable)


def family_test(specs, restore=None):
    """The fuzz test of a family module: one parametrized hypothesis test over its ``SPECS``;
    ``restore()`` (optional) runs after each example (process-wide state)."""

    @pytest.mark.parametrize("name", sorted(specs))
    @FUZZ
    @given(data=st.data())
    def test_fuzz(name, data):
        try:
            fuzz_wrapper(data, name, specs[name])
        finally:
            if restore is not None:
                restore()

    return test_fuzz


#: the settings of the aliasing sweep (every example an output over an input)
ALIAS = settings(FUZZ, max_examples=10)


def alias_test(specs):
    """The aliasing test of a family module: every example puts one output buffer over the
    memory of an input (an index array half of the time), from its start or one element on."""
    names = sorted(n for n, s in specs.items() if s.outs)

    @pytest.mark.parametrize("name", names)
    @ALIAS
    @given(data=st.data())
    def test_fuzz_alias(name, data):
        fuzz_wrapper(data, name, specs[name], mutate_p=1.0, only=("alias", "alias_shift"))

    return test_fuzz_alias
