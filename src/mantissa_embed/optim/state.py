"""An optimizer ``state_dict`` as flat arrays plus one JSON string, for an ``.npz`` file."""

from __future__ import annotations

import json
import numbers

import numpy as np

__all__ = ["flatten_state_dict", "unflatten_state_dict"]


def _check_prefix(prefix):
    if not isinstance(prefix, str) or not prefix or "/" in prefix:
        raise ValueError(f"prefix must be a non-empty str without '/', got {prefix!r}")


def _scalar(v, where):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, str) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_scalar(x, where) for x in v]
    raise TypeError(f"{where} must be an array or a JSON-able scalar, got {type(v).__name__}")


def flatten_state_dict(state_dict, prefix: str = "optim"):
    """``optimizer.state_dict()`` as ``(arrays, meta)``: ``arrays`` maps
    ``"<prefix>/<index>/<name>"`` (e.g. ``"optim/0/exp_avg"``) to the state arrays, ``meta`` is a
    JSON string with the groups, the scalar state (``"step"``) and the array names.
    ``unflatten_state_dict`` inverts it. No pickle: both fit in an ``np.savez`` file.

    Raises TypeError for a value that is neither an array nor a JSON-able scalar, ValueError
    for a bad ``prefix``.
    """
    _check_prefix(prefix)
    if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
        raise TypeError("state_dict must be a dict with 'state' and 'param_groups' (optimizer.state_dict())")
    arrays, scalars, names = {}, {}, []
    for idx, st in state_dict["state"].items():
        entry = {}
        for key, v in st.items():
            if isinstance(v, np.ndarray):
                name = f"{idx}/{key}"
                arrays[f"{prefix}/{name}"] = v
                names.append(name)
            else:
                entry[key] = _scalar(v, f"state[{idx!r}][{key!r}]")
        scalars[str(idx)] = entry
    groups = [
        {k: _scalar(v, f"param_groups[{i}][{k!r}]") for k, v in g.items()}
        for i, g in enumerate(state_dict["param_groups"])
    ]
    meta = json.dumps(
        {"state": scalars, "arrays": names, "param_groups": groups}, sort_keys=True, allow_nan=False
    )
    return arrays, meta


def unflatten_state_dict(arrays, meta, prefix: str = "optim"):
    """The ``state_dict`` ``flatten_state_dict`` flattened, from a mapping of arrays (a dict
    or an ``np.load`` file) and the JSON string; for ``optimizer.load_state_dict``.

    Raises ValueError for a malformed ``meta`` or a missing array.
    """
    _check_prefix(prefix)
    try:
        doc = json.loads(meta)
    except (TypeError, ValueError) as e:
        raise ValueError(f"meta must be the JSON string flatten_state_dict returned: {e}") from None
    if not isinstance(doc, dict) or not {"state", "arrays", "param_groups"} <= set(doc):
        raise ValueError("meta must hold 'state', 'arrays' and 'param_groups' (from flatten_state_dict)")
    state = {}
    for idx, entry in doc["state"].items():
        state[int(idx)] = dict(entry)
    for name in doc["arrays"]:
        idx, _, key = name.partition("/")
        full = f"{prefix}/{name}"
        try:
            arr = arrays[full]
        except KeyError:
            raise ValueError(f"the checkpoint lacks the optimizer array {full!r}") from None
        state.setdefault(int(idx), {})[key] = np.asarray(arr)
    groups = [dict(g) for g in doc["param_groups"]]
    return {"state": state, "param_groups": groups}
