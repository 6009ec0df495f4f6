"""The ``Optimizer`` base class: parameter groups, ``zero_grad``, ``state_dict`` /
``load_state_dict``, as ``torch.optim.Optimizer``."""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from .._validation import check_float
from ..backend import get_backend
from ..parameter import Parameter

__all__ = ["Optimizer"]


def real(v, name):
    """A finite real option value as ``float`` (numpy scalars accepted, bools rejected)."""
    if isinstance(v, np.generic) and isinstance(v, numbers.Real) and not isinstance(v, np.bool_):
        v = float(v)
    return check_float(v, name)


def nonnegative(v, where, name, what):
    """``real(v)``, raising torch's ``Invalid <what>: v`` (after ``where``) below 0."""
    v = real(v, f"{where}{name}")
    if v < 0.0:
        raise ValueError(f"{where}Invalid {what}: {v}")
    return v


def _group_params(params, where):
    if isinstance(params, Parameter):
        return [params]
    if isinstance(params, (set, frozenset)):
        raise TypeError(
            f"{where}params must be an ordered collection of Parameter objects (a list), got a set"
        )
    if not isinstance(params, Iterable):
        raise TypeError(
            f"{where}params must be an iterable of Parameter objects, got {type(params).__name__}"
        )
    params = list(params)
    for i, p in enumerate(params):
        if not isinstance(p, Parameter):
            raise TypeError(f"{where}params[{i}] must be a Parameter, got {type(p).__name__}")
    return params


def _step_count(v, where):
    """A saved step count: an int, or an integral float / 0-d array (torch keeps a tensor)."""
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or v != int(v) or v < 0:
        raise ValueError(f"{where} must be a non-negative integer, got {v!r}")
    return int(v)


class Optimizer:
    """Base class of the optimizers: parameter groups and their state, as ``torch.optim``.

    Parameters
    ----------
    params : iterable of Parameter, or iterable of dict
        The parameters to optimize, or parameter groups: dicts ``{"params": [...], "lr": ...}``
        where an option missing from a group takes the constructor's value (``defaults``).
    defaults : dict
        The subclass's options (validated by its ``_check_options``).
    backend : {"mantissa", "numpy"}, default "mantissa"

    Attributes
    ----------
    param_groups : list of dict
        Each holds ``"params"`` (a list of Parameter) and every option; options (``"lr"``
        above all) may be changed between steps. A schedule adds ``"initial_lr"``.
    defaults : dict
        The constructor's options.
    params : list of Parameter
        Every parameter, group after group (the positions ``state_dict`` uses).
    state : list of dict
        Per-parameter state (``"step"``, moment buffers), parallel to ``params``.
    lr, momentum, betas, ... (each option)
        Read: the first group's value; assigned: set in every group.

    Raises TypeError when ``params`` is not an iterable of Parameter or of dicts, ValueError
    when it is empty, repeats a Parameter, or a group has an unknown or invalid option.
    """

    _state_arrays: tuple[str, ...] = ()  # names of the per-parameter state arrays a subclass keeps
    _state_scalars: tuple[str, ...] = ()  # names of its integer state entries ("step")

    def __init__(
        self,
        params: Iterable[Parameter | dict[str, Any]],
        defaults: dict[str, Any],
        backend: str = "mantissa",
    ) -> None:
        if isinstance(params, Parameter):
            raise TypeError(
                "params must be an iterable of Parameter objects, got a single Parameter (wrap it in a list)"
            )
        if isinstance(params, dict):
            raise TypeError(
                "params must be an iterable of Parameter objects or of dicts, got a dict "
                "(wrap the parameter group in a list)"
            )
        if not isinstance(params, Iterable):
            raise TypeError(f"params must be an iterable of Parameter objects, got {type(params).__name__}")
        groups: list[Any] = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        n_dicts = sum(isinstance(g, dict) for g in groups)
        if 0 < n_dicts < len(groups):
            raise TypeError("params must be all Parameter objects or all parameter-group dicts, not a mix")
        if not n_dicts:
            groups = [{"params": groups}]
        self._be = get_backend(backend)
        self.backend = backend
        self.defaults = self._check_options(dict(defaults), "")
        self.param_groups: list[dict[str, Any]] = []
        self.params: list[Parameter] = []
        self.state: list[dict[str, Any]] = []
        for group in groups:
            self.add_param_group(group)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")

    # -- options ---------------------------------------------------------------------------

    def _check_options(self, options, where):
        """Validate and normalize a dict holding every option; return the new dict."""
        raise NotImplementedError

    def _group_options(self, group, where):
        opts = self._check_options({k: group[k] for k in self.defaults}, where)
        if "initial_lr" in group:
            opts["initial_lr"] = real(group["initial_lr"], f"{where}initial_lr")
        return opts

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group ``{"params": [...], <options>}``; missing options take ``defaults``.

        Raises TypeError for a non-dict, ValueError for an unknown option, an invalid value or
        a Parameter that is already optimized.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        where = f"param_groups[{len(self.param_groups)}]: "
        if "params" not in param_group:
            raise ValueError(f"{where}a parameter group needs a 'params' entry")
        unknown = sorted(set(param_group) - set(self.defaults) - {"params", "initial_lr"})
        if unknown:
            raise ValueError(
                f"{where}unknown option(s) {unknown}; {type(self).__name__} takes {sorted(self.defaults)}"
            )
        params = _group_params(param_group["params"], where)
        seen = {id(p) for p in self.params}
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer got the same Parameter more than once")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        group = self._group_options({**self.defaults, **param_group}, where)
        group["params"] = params
        self.param_groups.append(group)
        self.params.extend(params)
        self.state.extend(dict() for _ in params)

    def __getattr__(self, name):
        """``optimizer.lr`` (any option): the first group's value (a convenience: torch has
        no such attributes)."""
        d = self.__dict__
        if name in d.get("defaults", ()) and d.get("param_groups"):
            return d["param_groups"][0][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name, value) -> None:
        """``optimizer.lr = v`` (any option) sets it in every group."""
        if name in self.__dict__.get("defaults", ()):
            for group in self.param_groups:
                group[name] = value
        else:
            super().__setattr__(name, value)

    # -- stepping --------------------------------------------------------------------------

    def zero_grad(self) -> None:
        """Set every parameter's ``grad`` to zero (in place)."""
        for p in self.params:
            p.zero_grad()

    def step(self) -> None:
        """Update every parameter in place from its current ``grad``, group by group, with the
        group's current options (validated: ValueError for an invalid one). A parameter with
        ``requires_grad=False`` (frozen) is skipped: no update, no weight decay, its state (step
        count, moments) untouched -- as torch skips a parameter whose ``grad`` is None."""
        k = 0
        for gi, group in enumerate(self.param_groups):
            opts = self._group_options(group, f"param_groups[{gi}]: ")
            for p in group["params"]:
                if k >= len(self.params) or self.params[k] is not p:
                    raise ValueError(
                        "param_groups[...]['params'] changed after construction; "
                        "use add_param_group to add parameters"
                    )
                k += 1
                if not p.requires_grad:  # frozen: torch skips a parameter whose grad is None
                    continue
                if p.grad.shape != p.data.shape:
                    raise ValueError(
                        f"params[{k - 1}].grad has shape {p.grad.shape}, expected {p.data.shape}"
                    )
                self._update(p, self.state[k - 1], opts)
        if k != len(self.params):
            raise ValueError(
                "param_groups[...]['params'] changed after construction; "
                "use add_param_group to add parameters"
            )

    def _update(self, p, state, opts):
        raise NotImplementedError

    # -- checkpoints -----------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state as torch lays it out, holding only numpy arrays (copies) and
        JSON-able scalars: ``{"state": {index: {"step": int, "exp_avg": array, ...}},
        "param_groups": [{<options>, "params": [indices]}]}``, indices being positions in
        ``params``. Parameters without state (not stepped yet) have no entry.
        See ``flatten_state_dict`` to store it in an ``.npz``."""
        groups, k = [], 0
        for group in self.param_groups:
            g = {key: (list(v) if isinstance(v, tuple) else v) for key, v in group.items() if key != "params"}
            g["params"] = list(range(k, k + len(group["params"])))
            k += len(group["params"])
            groups.append(g)
        state = {}
        for i, st in enumerate(self.state):
            if st:
                state[i] = {key: (v.copy() if isinstance(v, np.ndarray) else v) for key, v in st.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict`` (of this optimizer type, same groups and shapes).

        Saved parameter indices map to this optimizer's parameters in order (as torch does);
        state keys may be ints or digit strings; a step count may be a 0-d array (torch's
        tensors converted with ``.numpy()``). Group options the optimizer does not know
        are ignored; the ones it knows replace the current values. Arrays are copied into
        float32. Nothing changes unless everything validates.

        Raises TypeError for a non-dict, ValueError for a different number of groups or of
        parameters in a group, an unknown or missing state entry, a non-finite or wrongly
        shaped array, or an invalid option.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"state_dict must be a dict, got {type(state_dict).__name__}")
        for key in ("state", "param_groups"):
            if key not in state_dict:
                raise ValueError(f"state_dict lacks its {key!r} entry")
        saved_groups, saved_state = state_dict["param_groups"], state_dict["state"]
        if not isinstance(saved_groups, (list, tuple)) or not isinstance(saved_state, dict):
            raise TypeError("state_dict['param_groups'] must be a list and state_dict['state'] a dict")
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"state_dict has {len(saved_groups)} parameter groups, the optimizer "
                f"has {len(self.param_groups)}"
            )
        new_groups: list[dict[str, Any]] = []
        index: dict[int, int] = {}
        for gi, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            where = f"state_dict['param_groups'][{gi}]"
            if not isinstance(saved, dict) or "params" not in saved:
                raise ValueError(f"{where} must be a dict with a 'params' entry")
            ids = list(saved["params"])
            if len(ids) != len(group["params"]):
                raise ValueError(
                    f"{where} has {len(ids)} parameters, the optimizer's group has {len(group['params'])}"
                )
            for sid in ids:
                if isinstance(sid, bool) or not isinstance(sid, numbers.Integral) or int(sid) in index:
                    raise ValueError(f"{where}['params'] must hold distinct integers, got {sid!r}")
                index[int(sid)] = len(index)
            merged = {**group, **{k: v for k, v in saved.items() if k in self.defaults or k == "initial_lr"}}
            new_groups.append(self._group_options(merged, f"{where}: "))
        new_state: list[dict[str, Any]] = [dict() for _ in self.params]
        for key, st in saved_state.items():
            sid = int(key) if isinstance(key, str) and key.isdigit() else key
            if sid not in index:
                raise ValueError(
                    f"state_dict['state'] has an entry for parameter {key!r}, which no parameter group lists"
                )
            pos = index[sid]
            new_state[pos] = self._check_state(st, self.params[pos], f"state_dict['state'][{key!r}]")
        for group, opts in zip(self.param_groups, new_groups):
            group.update(opts)
        self.state = new_state

    def _check_state(self, st, p, where):
        """A saved per-parameter state, validated against ``p``: a new dict of float32 copies."""
        if not isinstance(st, dict):
            raise TypeError(f"{where} must be a dict, got {type(st).__name__}")
        st = {k: v for k, v in st.items() if v is not None}  # torch keeps momentum_buffer=None
        unknown = sorted(set(st) - set(self._state_arrays) - set(self._state_scalars))
        if unknown:
            raise ValueError(
                f"{where} has unknown entries {unknown}; {type(self).__name__} keeps "
                f"{sorted(self._state_arrays + self._state_scalars)}"
            )
        out = {}
        for k, v in st.items():
            if k in self._state_scalars:
                out[k] = _step_count(v, f"{where}[{k!r}]")
                continue
            arr = np.asarray(v)
            if arr.dtype.kind not in "fiu":
                raise TypeError(f"{where}[{k!r}] must be a numeric array, got dtype {arr.dtype}")
            if arr.shape != p.data.shape:
                raise ValueError(
                    f"{where}[{k!r}] has shape {arr.shape}, its parameter has shape {p.data.shape}"
                )
            arr = np.array(arr, dtype=np.float32, order="C", copy=True)
            if not np.isfinite(arr).all():
                raise ValueError(f"{where}[{k!r}] contains NaN or Inf")
            out[k] = arr
        return self._complete_state(out, where)

    def _complete_state(self, st, where):
        """Subclass hook: check that a loaded state has what the update needs."""
        return st

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params")
        return "\n".join(lines + [")"])
