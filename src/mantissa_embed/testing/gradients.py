"""``check_loss_gradients``: a loss's analytic gradients against central finite differences."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .._typing import ArrayLike, IndicesTuple
from .._validation import check_float

__all__ = ["GradientCheck", "check_loss_gradients"]

#: (eps, rtol, atol) when the inputs or the returned gradient are float32, and when both are float64
_TOLERANCES = {"float32": (1e-3, 1e-2, 1e-2), "float64": (1e-6, 1e-5, 1e-6)}


@dataclass
class GradientCheck:
    """What ``check_loss_gradients`` compared: ``checked`` entries agreed, ``skipped`` entries
    sat at a kink (the two step sizes disagreed), ``max_error`` is the largest
    ``|analytic - numeric|`` among the checked ones; ``precision`` is "float32" or "float64"."""

    checked: int
    skipped: int
    max_error: float
    precision: str


def callable_name(f: Any) -> str:
    """How messages name a loss or miner: its ``__name__`` (``<lambda>``), ``partial(name)``
    for a ``functools.partial``, else its class name."""
    if isinstance(f, functools.partial):
        return f"partial({callable_name(f.func)})"
    return str(getattr(f, "__name__", type(f).__name__))


def _value(out: Any) -> float:
    return float(out.loss if hasattr(out, "loss") else out)


def _checked_output(out: Any, name: str) -> float:
    """The finite ``.loss`` of the first call's output; TypeError unless it has ``.loss`` and
    ``.grad``, AssertionError for a NaN/Inf value."""
    if not hasattr(out, "loss") or not hasattr(out, "grad"):
        raise TypeError(
            f"{name} must return an object with .loss and .grad (a LossOutput), got {type(out).__name__}"
        )
    try:
        value = float(out.loss)
    except (TypeError, ValueError):
        raise TypeError(f"{name} returned a .loss that is not a number: {out.loss!r}") from None
    if not np.isfinite(value):
        raise AssertionError(f"{name} returned a non-finite loss ({value}) on finite inputs")
    return value


def _grad_array(g: Any, name: str, what: str, shape: tuple[int, ...]) -> np.ndarray:
    """``g`` as float64 after checking it: a real (N, D)-shaped array of finite values."""
    if g is None:
        raise TypeError(f"{name} returned {what} None, expected an array of shape {shape}")
    arr = np.asarray(g)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} returned {what} of dtype {arr.dtype}, expected real floats")
    if arr.shape != shape:
        raise ValueError(f"the loss returned {what} of shape {arr.shape}, expected {shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = next(zip(*np.nonzero(bad)))
        raise AssertionError(
            f"{name} returned a non-finite {what}: {what}[{', '.join(map(str, i))}] = {arr[i]}"
        )
    return arr.astype(np.float64)


def _call(loss_func: Any, kwargs: dict[str, Any], copy_state: bool) -> tuple[Any, Any]:
    f = copy.deepcopy(loss_func) if copy_state else loss_func
    rest = {k: v for k, v in kwargs.items() if k not in ("embeddings", "labels")}
    return f, f(kwargs["embeddings"], kwargs["labels"], **rest)


def _params(loss_func: Any) -> list[Any]:
    get = getattr(loss_func, "parameters", None)
    return list(get()) if callable(get) else []


def _as_float_array(x: ArrayLike | None, name: str) -> np.ndarray | None:
    if x is None:
        return None
    arr = np.array(x, copy=True)
    if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or Inf")
    return arr


def _numeric(
    evaluate: Callable[[], float], arr: np.ndarray, h: float, where: str = ""
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Forward, backward and central differences of ``evaluate()`` (float) w.r.t. every entry of
    ``arr`` (perturbed in place, restored); the step taken is what ``arr``'s dtype represents.
    AssertionError when a perturbed value is NaN/Inf (``where`` names the array)."""
    f0 = evaluate()
    fscale = abs(f0)
    central, fwd, bwd = np.zeros(arr.shape), np.zeros(arr.shape), np.zeros(arr.shape)
    for idx in np.ndindex(arr.shape):
        old = arr[idx]
        arr[idx] = old + h
        up = float(arr[idx]) - float(old)
        fp = evaluate()
        arr[idx] = old - h
        down = float(old) - float(arr[idx])
        fm = evaluate()
        arr[idx] = old
        if not (np.isfinite(fp) and np.isfinite(fm)):
            raise AssertionError(
                f"the loss is non-finite ({fp}, {fm}) with {where}[{', '.join(map(str, idx))}] "
                f"stepped by +-{h:.3g}"
            )
        fscale = max(fscale, abs(fp), abs(fm))
        fwd[idx], bwd[idx], central[idx] = (fp - f0) / up, (f0 - fm) / down, (fp - fm) / (up + down)
    return central, fwd, bwd, max(fscale, 1.0) / h


def check_loss_gradients(
    loss_func: Callable[..., Any],
    embeddings: ArrayLike,
    labels: ArrayLike | None = None,
    *,
    indices_tuple: IndicesTuple | None = None,
    ref_emb: ArrayLike | None = None,
    ref_labels: ArrayLike | None = None,
    parameters: bool = True,
    eps: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    copy_state: bool = True,
) -> GradientCheck:
    """Assert that a loss's gradients match float64 central differences of its value.

    ``loss_func(embeddings, labels, indices_tuple=, ref_emb=, ref_labels=)`` (the first two
    positional) must return an object
    with ``.loss`` (float) and ``.grad`` (N, D), and ``.ref_grad`` (M, D) when ``ref_emb`` is given
    (``None`` counts as zeros), as ``LossOutput`` does; ``indices_tuple``,
    ``ref_emb`` and ``ref_labels`` are passed only when given. With ``parameters=True`` the
    ``.grad`` of every ``Parameter`` in ``loss_func.parameters()``
    (accumulated by one call from zero) is checked too.

    Each entry is stepped by ``h = eps * rms(array)`` both ways: where the forward and the
    backward difference disagree beyond the tolerance the entry is at a kink (a hinge, a max, a
    distance of zero) and is skipped; elsewhere the central difference must satisfy
    ``|analytic - numeric| <= atol * S + rtol * |numeric|``, with ``S`` the largest magnitude of
    either gradient of that array, plus the rounding of the loss values
    (``4 * machine eps * max(|loss|, 1) / h``). Defaults: ``eps, rtol, atol = 1e-6, 1e-5,
    1e-6`` when the embeddings and the returned gradient are float64, ``1e-3, 1e-2, 1e-2`` otherwise
    (float32 arithmetic). Every evaluation runs on a deep copy of ``loss_func`` when ``copy_state``
    (losses with memory, such as ``CrossBatchMemory``, then see the same state each time).

    Returns a ``GradientCheck``. Raises ``AssertionError`` naming the worst entry (array,
    index, analytic and numeric values) when an entry fails, or when every entry is skipped
    (inside a hypothesis test such an example is discarded instead, as by ``assume``);
    ``ValueError`` for NaN/Inf inputs or a gradient of the wrong shape; ``TypeError`` for
    non-numeric inputs. Finite differences: Nocedal & Wright, *Numerical Optimization*, 8.1.
    """
    x = _as_float_array(embeddings, "embeddings")
    if x is None or x.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D array, got {None if x is None else x.shape}")
    if x.size == 0:
        raise ValueError(f"embeddings is empty (shape {x.shape}): there is no gradient to check")
    r = _as_float_array(ref_emb, "ref_emb")
    name = callable_name(loss_func)
    kwargs: dict[str, Any] = {"embeddings": x, "labels": labels}
    for key, val in (("indices_tuple", indices_tuple), ("ref_emb", r), ("ref_labels", ref_labels)):
        if val is not None:
            kwargs[key] = val
    pristine = [(key, kwargs[key].copy()) for key in ("embeddings", "ref_emb") if key in kwargs]
    f0 = copy.deepcopy(loss_func) if copy_state else loss_func
    params0 = _params(f0) if parameters else []
    if copy_state:  # the analytic parameter gradients of one call, from zero
        for p in params0:
            p.zero_grad()
    _, out = _call(f0, kwargs, False)
    _checked_output(out, name)
    for key, before in pristine:
        if not np.array_equal(kwargs[key], before):
            raise AssertionError(f"{name} modified its {key} argument in place")
    grad = _grad_array(out.grad, name, "grad", x.shape)
    ref_out = getattr(out, "ref_grad", None)
    precise = x.dtype == np.float64 and np.asarray(out.grad).dtype == np.float64
    precision = "float64" if precise else "float32"
    d_eps, d_rtol, d_atol = _TOLERANCES[precision]
    eps = d_eps if eps is None else check_float(eps, "eps", 0, strict=True)
    rtol = d_rtol if rtol is None else check_float(rtol, "rtol", 0)
    atol = d_atol if atol is None else check_float(atol, "atol", 0)

    unit = float(np.finfo(np.float64 if precise else np.float32).eps)
    arrays = [("embeddings", x, grad)]
    if r is not None:
        rg = np.zeros(r.shape) if ref_out is None else _grad_array(ref_out, name, "ref_grad", r.shape)
        arrays.append(("ref_emb", r, rg))
    checked = skipped = 0
    max_error = 0.0
    failures: list[tuple[float, str, float, float, float]] = []

    def check(label: str, arr: np.ndarray, analytic: np.ndarray, evaluate: Callable[[], float]) -> None:
        nonlocal checked, skipped, max_error
        h = eps * max(float(np.sqrt(np.mean(np.square(arr, dtype=np.float64)))) if arr.size else 0.0, 1e-30)
        c, s, e, bad = _compare(name, label, analytic, *_numeric(evaluate, arr, h, label), rtol, atol, unit)
        checked, skipped, max_error = checked + c, skipped + s, max(max_error, e)
        failures.extend(bad)

    for label, arr, analytic in arrays:
        check(label, arr, analytic, lambda: _value(_call(loss_func, kwargs, copy_state)[1]))
    for i, p0 in enumerate(params0):
        label = f"parameters()[{i}]" + (f" ({p0.name})" if getattr(p0, "name", "") else "")
        analytic = _grad_array(p0.grad, name, f"{label}.grad", np.shape(p0.data))
        base = copy.deepcopy(loss_func)  # perturbed in place; never the caller's object
        check(label, _params(base)[i].data, analytic, lambda: _value(_call(base, kwargs, True)[1]))
    if failures:
        worst = max(failures, key=lambda t: t[0])
        _, where, a, n, allowed = worst
        raise AssertionError(
            f"{name}: {len(failures)} of {checked + len(failures)} gradient entries differ from "
            f"central differences; worst {where}: analytic {a:.6g}, numeric {n:.6g} "
            f"(|diff| {abs(a - n):.3g} > allowed {allowed:.3g}; eps={eps:g}, rtol={rtol:g}, "
            f"atol={atol:g}, {precision}; {skipped} entries skipped at kinks)"
        )
    if skipped and not checked:
        _discard_if_in_hypothesis()
        raise AssertionError(
            f"{name}: all {skipped} gradient entries sit at kinks (forward and backward "
            f"differences disagree); try another batch or a smaller eps"
        )
    return GradientCheck(checked=checked, skipped=skipped, max_error=max_error, precision=precision)


def _discard_if_in_hypothesis() -> None:
    """Inside a hypothesis test, an example with nothing to check is discarded (``assume``), not
    failed: random batches of duplicates sit entirely at kinks now and then."""
    try:
        import hypothesis
    except ImportError:
        return
    if hypothesis.currently_in_test_context():
        hypothesis.assume(False)


def _compare(
    name: str,
    label: str,
    analytic: np.ndarray,
    g1: np.ndarray,
    fwd: np.ndarray,
    bwd: np.ndarray,
    f_over_h: float,
    rtol: float,
    atol: float,
    unit: float,
) -> tuple[int, int, float, list[tuple[float, str, float, float, float]]]:
    """(checked, skipped, max error, failures [(excess, where, analytic, numeric, allowed)]).
    AssertionError when the tolerance is so loose that a zero gradient would pass although the
    central differences are not all zero (the loss's rounding swamps them: tiny inputs)."""
    if analytic.size == 0:
        return 0, 0, 0.0, []
    scale = max(float(np.abs(analytic).max()), float(np.abs(g1).max()), 1e-12)
    rounding = 4 * unit * f_over_h  # the rounding of the loss values
    allowed = atol * scale + rtol * np.abs(g1) + rounding
    kink = np.abs(fwd - bwd) > allowed
    num_scale = float(np.abs(g1[~kink]).max(initial=0.0))  # kinks are skipped anyway
    if num_scale > 0 and np.all(kink | (np.abs(g1) <= atol * num_scale + rtol * np.abs(g1) + rounding)):
        _discard_if_in_hypothesis()
        raise AssertionError(
            f"{name}: cannot check {label}: its central differences (largest {num_scale:.3g}) are within the "
            f"tolerance (rounding of the loss values {rounding:.3g}, atol={atol:g}, rtol={rtol:g}), so even a "
            f"zero gradient would pass; scale the inputs up, pass a larger eps or a smaller atol"
        )
    err = np.abs(analytic - g1)
    bad = (err > allowed) & ~kink
    ok = ~kink & ~bad
    failures = [
        (
            float(err[i] - allowed[i]),
            f"{label}[{', '.join(map(str, i))}]",
            float(analytic[i]),
            float(g1[i]),
            float(allowed[i]),
        )
        for i in zip(*np.nonzero(bad))
    ]
    return int(ok.sum()), int(kink.sum()), float(err[ok].max(initial=0.0)), failures
