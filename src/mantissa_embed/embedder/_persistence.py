"""Embedder files: ``save`` and ``load`` (the bodies of ``Embedder.save`` /
``Embedder.load``).

One ``.npz``: the trunk's parameters (``"trunk/0.weight"``, ...), the loss's learnable
parameters (``"loss/<i>"``) and ``"__config__"``, a JSON string. Written atomically
(``mantissa_embed._io.atomic_write``), read without unpickling.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from typing import Any, TypeVar

import numpy as np

from .. import losses, optim
from .._io import atomic_write
from .._npz import NpzEntries
from .._validation import check_int
from ..backend import BACKENDS
from ..layers import Sequential
from . import _recipe
from ._param_groups import param_groups

__all__ = ["EmbedderPersistence", "save", "load", "MAX_SAMPLE_ELEMENTS", "MAX_EMBED_DIM"]

#: plausibility bounds of a loaded model, from its config alone: values per image (the input
#: and every layer's output: 1 GiB of float32) and the embedding size
MAX_SAMPLE_ELEMENTS = 2**28
MAX_EMBED_DIM = 2**24

_FORMAT = "mantissa-embed/embedder"
_FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
_CONFIG_KEY = "__config__"
_MAX_CONFIG_BYTES = 2**24  # a saved config (JSON) is a few kB; the bound keeps a deflated bomb out
_PARAM_PREFIX = "trunk/"
_LOSS_PARAM_PREFIX = "loss/"
_OPTIM_PREFIX = "optim"


def _loss_object_spec(loss):
    spec = {"object": type(loss).__name__}
    get_config = getattr(loss, "get_config", None)
    if callable(get_config) and type(loss).__module__.startswith("mantissa_embed.losses"):
        spec["config"] = get_config()
    return spec


def _config(emb):
    loss_spec = emb._loss_spec
    if loss_spec is None:
        loss_spec = _loss_object_spec(emb.loss_func)
    miner_spec = emb._miner_spec
    if miner_spec == "object":
        miner_spec = {"object": type(emb.miner_func).__name__}
    return {
        "format": _FORMAT,
        "version": _FORMAT_VERSION,
        "trunk": emb.net.get_config(),
        "loss": loss_spec,
        "margin": emb.margin if emb._loss_spec is not None else None,
        "loss_shape": (
            {"num_classes": emb.loss_func.num_classes, "embedding_size": emb.loss_func.embedding_size}
            if emb._loss_spec is not None and hasattr(emb.loss_func, "num_classes")
            else None
        ),
        "loss_lr_factor": emb.loss_lr_factor,
        "lr_groups": emb.lr_groups,
        # the fine-tuning state the optimizer state depends on (it holds the trainable ones only)
        "frozen": [n for n, p in emb.net.named_parameters() if not p.requires_grad] if emb.net.built else [],
        "frozen_batchnorm": [n for n, x in emb.net.named_layers() if getattr(x, "frozen_stats", False)],
        "classes": None if emb.classes_ is None else [int(c) for c in emb.classes_],
        "train_state": emb.train_state_,
        "rng_state": emb._rng.bit_generator.state
        if isinstance(emb._rng.bit_generator, np.random.PCG64)
        else None,
        "layer_rng_states": {
            str(i): layer.rng_state()
            for i, layer in enumerate(emb.net.layers)
            if callable(getattr(layer, "rng_state", None)) and layer.built
        },
        "miner": miner_spec,
        "optimizer": emb.optimizer if isinstance(emb.optimizer, str) else "callable",
        "momentum": emb.momentum,
        "weight_decay": emb.weight_decay,
        "m_per_class": emb.m_per_class,
        "seed": emb.seed if isinstance(emb.seed, int) else None,
        "backend": emb.backend,
        "input_shape": list(emb.input_shape_),
        "embed_dim": emb.embed_dim_,
        "history": {k: [float(v) for v in vals] for k, vals in emb.history_.items()},
        "calibration": emb.calibration_,
    }


def save(emb, path):
    """Write the fitted Embedder ``emb`` to ``path``; returns ``path`` as a str."""
    emb._check_fitted()
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    arrays = {_PARAM_PREFIX + name: a for name, a in emb.net.state_arrays().items()}
    loss_params = getattr(emb.loss_func, "parameters", None)
    if callable(loss_params):
        for i, p in enumerate(loss_params()):
            arrays[f"{_LOSS_PARAM_PREFIX}{i}"] = np.array(p.data, copy=True)
    cfg = _config(emb)
    opt = emb.optimizer_
    if (
        emb.train_state_ is not None
        and isinstance(emb.optimizer, str)
        and callable(getattr(opt, "state_dict", None))
    ):
        opt_arrays, cfg["optimizer_state"] = optim.flatten_state_dict(opt.state_dict(), prefix=_OPTIM_PREFIX)
        arrays.update(opt_arrays)
    arrays[_CONFIG_KEY] = np.array(json.dumps(cfg))
    return atomic_write(path, lambda f: np.savez(f, **arrays), suffix=".npz.tmp")


def _saved_optimizer(emb):
    """The optimizer name the checkpointed fit ran (its plan's ``optimizer``; files written before
    plans recorded it ran ``Embedder.optimizer``, with "default" meaning AdamW)."""
    name = emb.train_state_.get("optimizer") if isinstance(emb.train_state_, dict) else None
    if name is None:
        name = emb.optimizer if isinstance(emb.optimizer, str) else None
        name = _recipe.DEFAULTS["optimizer"] if name == "default" else name
    if name is not None and name not in _recipe.OPTIMIZERS:
        raise ValueError(f"train_state names optimizer {name!r}, not one of {_recipe.OPTIMIZERS}")
    return name


def _restore_frozen(net, cfg):
    """Freeze the parameters and BatchNorm statistics the saved fit had frozen (``frozen``,
    ``frozen_batchnorm``: exact names). ValueError for a name the trunk does not have."""
    frozen, bns = cfg.get("frozen") or [], cfg.get("frozen_batchnorm") or []
    for key, names in (("frozen", frozen), ("frozen_batchnorm", bns)):
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"the config's {key!r} must be a list of names")
    params = dict(net.named_parameters()) if net.built else {}
    layers = dict(net.named_layers())
    for n in frozen:
        if n not in params:
            raise ValueError(f"the config freezes {n!r}, which is not a parameter of the trunk")
        params[n].requires_grad = False
    for n in bns:
        if not callable(getattr(layers.get(n), "freeze_statistics", None)):
            raise ValueError(
                f"the config freezes the statistics of {n!r}, which is not a BatchNorm layer of the trunk"
            )
        layers[n].freeze_statistics(True)


def load(cls, path, backend=None):
    """An Embedder of class ``cls`` read from ``path`` (see ``Embedder.load``)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such Embedder file: {path!r}")
    try:
        entries = NpzEntries(path)  # every header checked against its member's size, no data read
    except ValueError as exc:
        raise ValueError(f"{path!r} is not a readable mantissa-embed Embedder file ({exc})") from None
    with entries:
        try:
            if _CONFIG_KEY not in entries.headers:
                raise ValueError(f"missing the {_CONFIG_KEY!r} entry")
            nbytes = entries.headers[_CONFIG_KEY][1].itemsize
            if nbytes > _MAX_CONFIG_BYTES:
                raise ValueError(
                    f"the {_CONFIG_KEY!r} entry claims {nbytes} bytes; a config may have at most "
                    f"{_MAX_CONFIG_BYTES}"
                )
            cfg = entries.read(_CONFIG_KEY, shape=(), floats=False)
            if cfg.dtype.kind not in "US":
                raise ValueError(f"the {_CONFIG_KEY!r} entry must be a string, got dtype {cfg.dtype}")
            cfg = json.loads(str(cfg[()]))
            if not isinstance(cfg, dict) or cfg.get("format") != _FORMAT:
                raise ValueError(f"the config's format is not {_FORMAT!r}")
            if cfg.get("version") not in _READABLE_VERSIONS:
                raise ValueError(f"unsupported format version {cfg.get('version')!r}")
            return _from_config(cls, cfg, entries, backend)
        except (ValueError, TypeError, KeyError, AttributeError, RuntimeError) as exc:
            raise ValueError(f"{path!r} is not a valid mantissa-embed Embedder file ({exc})") from None


def _check_plausible(net, input_shape):
    """ValueError unless the image and every layer's per-sample output (inside residual blocks
    too) have at most ``MAX_SAMPLE_ELEMENTS`` values and the embedding at most
    ``MAX_EMBED_DIM``; computed from the config alone."""

    def walk(layers, shape, where):
        for i, layer in enumerate(layers):
            block = getattr(layer, "block", None)
            if isinstance(block, list):
                walk(block, shape, f"{where}{i}.block.")
                walk(getattr(layer, "shortcut", None) or [], shape, f"{where}{i}.shortcut.")
            shape = layer.output_shape(shape)
            if math.prod(shape) > MAX_SAMPLE_ELEMENTS:
                raise ValueError(
                    f"layer {where}{i} ({type(layer).__name__}) outputs {math.prod(shape)} values per "
                    f"image (shape {shape}); a saved model may have at most {MAX_SAMPLE_ELEMENTS}"
                )
        return shape

    n = math.prod(input_shape)
    if n > MAX_SAMPLE_ELEMENTS:
        raise ValueError(
            f"input_shape {list(input_shape)} has {n} values per image; a saved model may have at "
            f"most {MAX_SAMPLE_ELEMENTS}"
        )
    out = walk(net.layers, tuple(input_shape), "")
    if len(out) == 1 and out[0] > MAX_EMBED_DIM:
        raise ValueError(
            f"the trunk's embedding size {out[0]} (for input_shape {list(input_shape)}) exceeds "
            f"{MAX_EMBED_DIM}, the largest a saved model may have"
        )


def _rebuild_loss(spec, backend):
    """The library loss of a saved ``{"object": name, "config": ...}`` spec, or None (custom)."""
    conf = spec.get("config")
    if not isinstance(conf, dict) or conf.get("dropped"):
        return None
    loss_cls = getattr(losses, str(conf.get("type")), None)
    if not isinstance(loss_cls, type) or not isinstance(conf.get("args"), dict):
        return None
    try:
        return loss_cls(**{**conf["args"], "backend": backend})
    except (TypeError, ValueError):
        return None


def _optimizer_arrays(entries, optimizer):
    """The ``optim/<i>/<name>`` entries, each checked to have the shape of the optimizer's
    parameter ``i`` before it is read."""
    params = getattr(optimizer, "params", [])
    out = {}
    for k in entries.headers:
        if not k.startswith(_OPTIM_PREFIX + "/"):
            continue
        idx = k[len(_OPTIM_PREFIX) + 1 :].partition("/")[0]
        if not idx.isdigit() or int(idx) >= len(params):
            raise ValueError(f"entry {k!r} names no parameter of the optimizer ({len(params)} parameters)")
        out[k] = entries.read(k, getattr(params[int(idx)], "shape", None))
    return out


def _from_config(cls, cfg, entries, backend):
    backend = cfg["backend"] if backend is None else backend
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    trunk = dict(cfg["trunk"])
    trunk["backend"] = backend
    trunk_shape = trunk.pop("input_shape", None)  # built below, once the arrays are checked
    net = Sequential.from_config(trunk)
    input_shape = tuple(
        check_int(s, f"input_shape[{i}]", minimum=1) for i, s in enumerate(cfg["input_shape"])
    )
    if trunk_shape is not None and list(trunk_shape) != list(input_shape):
        raise ValueError(
            f"the trunk's input_shape {trunk_shape} differs from input_shape {list(input_shape)}"
        )
    unknown = [
        k
        for k in entries.headers
        if k != _CONFIG_KEY and not k.startswith((_PARAM_PREFIX, _LOSS_PARAM_PREFIX, _OPTIM_PREFIX + "/"))
    ]
    if unknown:
        raise ValueError(f"unexpected entries {unknown}")
    # compare the config's parameter shapes with the stored headers before reading the arrays
    # or letting build() allocate, so a manipulated config (absurd layer sizes) or header
    # (1e11 floats) cannot trigger a huge allocation
    saved = {k[len(_PARAM_PREFIX) :]: h for k, h in entries.headers.items() if k.startswith(_PARAM_PREFIX)}
    shapes = net._state_shapes(input_shape)
    missing, unexpected = sorted(set(shapes) - set(saved)), sorted(set(saved) - set(shapes))
    if missing or unexpected:
        raise ValueError(f"state arrays do not match the model: missing {missing}, unexpected {unexpected}")
    for name, shape in shapes.items():
        if saved[name][0] != shape:
            raise ValueError(f"arrays[{name!r}] must have shape {shape}, got {saved[name][0]}")
    _check_plausible(net, input_shape)
    state = {name: entries.read(_PARAM_PREFIX + name, shape) for name, shape in shapes.items()}
    net.build(input_shape)
    net.load_state_arrays(state)

    loss, margin, miner = cfg["loss"], cfg["margin"], cfg["miner"]
    loss_obj = _rebuild_loss(loss, backend) if isinstance(loss, dict) else None
    if isinstance(loss, dict) and loss_obj is not None:
        loss, margin = loss_obj, None
    if isinstance(loss, dict) or isinstance(miner, dict):
        warnings.warn(
            f"the saved Embedder used a custom loss or miner ({loss!r}, {miner!r}); it is replaced by "
            "the default recipe (only matters for further training)",
            stacklevel=4,
        )
        if isinstance(loss, dict):
            loss, margin = "default", None
        if isinstance(miner, dict):
            miner = "default"
    seed = cfg.get("seed")
    optimizer = cfg.get("optimizer", "default")
    if optimizer == "callable":
        warnings.warn(
            "the saved Embedder was trained with an optimizer callable, which a file cannot hold: "
            "further fits use optimizer='default' (give yours to a new Embedder), and resume=True "
            "is not available",
            stacklevel=4,
        )
        optimizer = "default"
    emb = cls(
        net,
        loss=loss,
        margin=margin,
        seed=0 if seed is None else seed,
        backend=backend,
        miner=miner,
        optimizer=optimizer,
        momentum=cfg.get("momentum"),
        weight_decay=cfg.get("weight_decay"),
        m_per_class=cfg.get("m_per_class"),
        loss_lr_factor=cfg.get("loss_lr_factor"),
        lr_groups=cfg.get("lr_groups"),
    )
    shape = cfg.get("loss_shape")
    if shape is not None and emb.loss_func is None:
        emb._ensure_loss(
            check_int(shape["num_classes"], "num_classes", minimum=1),
            check_int(shape["embedding_size"], "embedding_size", minimum=1),
        )
    loss_keys = sorted(
        (k for k in entries.headers if k.startswith(_LOSS_PARAM_PREFIX)),
        key=lambda k: int(k[len(_LOSS_PARAM_PREFIX) :]),
    )
    loss_params = getattr(emb.loss_func, "parameters", None)
    params = list(loss_params()) if callable(loss_params) else []
    if loss_keys and len(params) != len(loss_keys):
        if loss_obj is not None or emb._loss_spec is not None and shape is not None:
            raise ValueError(f"{len(loss_keys)} saved loss parameters, the loss has {len(params)}")
        warnings.warn("the saved loss parameters are dropped with the custom loss", stacklevel=4)
    else:
        for p, k in zip(params, loss_keys):
            p.assign(entries.read(k, p.shape))
    if cfg.get("rng_state") is not None:
        emb._rng.bit_generator.state = cfg["rng_state"]
    for i, state in (cfg.get("layer_rng_states") or {}).items():
        k = int(i)
        layer = net.layers[k] if 0 <= k < len(net.layers) else None
        if not callable(getattr(layer, "set_rng_state", None)):
            raise ValueError(f"layer_rng_states names layer {i}, which has no random state")
        layer.set_rng_state(state)
    if cfg.get("classes") is not None:
        emb.classes_ = np.asarray(cfg["classes"], dtype=np.int64)
    _restore_frozen(emb.net, cfg)
    emb.train_state_ = cfg.get("train_state")
    if cfg.get("optimizer_state") is not None and emb.train_state_ is not None:
        groups = param_groups(emb, float(emb.train_state_["base_lrs"][0]))
        emb.optimizer_ = emb._make_optimizer(groups, _saved_optimizer(emb))
        emb.optimizer_.load_state_dict(
            optim.unflatten_state_dict(
                _optimizer_arrays(entries, emb.optimizer_), cfg["optimizer_state"], prefix=_OPTIM_PREFIX
            )
        )
    emb.input_shape_ = input_shape
    emb._check_trunk_output(input_shape)
    emb.embed_dim_ = int(net.output_shape(input_shape)[0])
    if cfg.get("embed_dim") is not None and int(cfg["embed_dim"]) != emb.embed_dim_:
        raise ValueError(f"embed_dim {cfg['embed_dim']} does not match the trunk's output {emb.embed_dim_}")
    emb.history_ = {k: [float(v) for v in vals] for k, vals in cfg.get("history", {"loss": []}).items()}
    cal = cfg.get("calibration")
    if cal is not None:
        if (
            not isinstance(cal, dict)
            or not isinstance(cal.get("threshold"), (int, float))
            or isinstance(cal.get("threshold"), bool)
            or not np.isfinite(cal["threshold"])
            or cal["threshold"] < 0
        ):
            raise ValueError(f"calibration must hold a finite threshold >= 0, got {cal!r}")
        emb.calibration_ = dict(cal)
        emb.threshold_ = float(cal["threshold"])
    emb.fitted_ = True
    emb.net.eval()
    return emb


_E = TypeVar("_E", bound="EmbedderPersistence")


class EmbedderPersistence:
    """``Embedder.save`` and ``Embedder.load``, mixed into ``Embedder`` (the file format is this
    module's ``save`` / ``load``)."""

    _lock: Any

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the fitted Embedder to one ``.npz`` file at ``path`` (exactly that name).

        Contents: the trunk's parameters (``"trunk/0.weight"``, ...), the loss's learnable
        parameters if any (``"loss/<i>"``), and ``"__config__"``: a JSON string (trunk layers,
        loss, margin, miner, optimizer settings, input shape, embedding size, history). The
        file is written to a temporary file in the same directory, then renamed onto ``path``
        (``os.replace``), so readers never see a partial file. Custom loss/miner/optimizer
        objects are recorded by class name only: ``load`` restores the trunk exactly and
        falls back to the default recipe for them (with a warning).

        Raises RuntimeError before fit; TypeError for a non-path ``path``; OSError naming
        ``path`` (not the temporary file) when the directory does not exist
        (FileNotFoundError) or is not writable (PermissionError).
        """
        with self._lock:
            return save(self, path)

    @classmethod
    def load(cls: type[_E], path: str | os.PathLike[str], backend: str | None = None) -> _E:
        """Read an Embedder written by ``save``; ready to ``embed`` / ``retrieve`` / ``verify``
        (and to ``fit`` further).

        Parameters
        ----------
        path : str or os.PathLike
        backend : {"mantissa", "numpy"} or None, default None
            None: the backend recorded in the file.

        Loading never unpickles, so a file cannot run code, and allocates no more than the
        file holds: every entry's ``.npy`` header is read first and must describe exactly its
        member's bytes and the shape the config implies. Weights must be floats: float32, or
        float16 / float64 cast to float32. The config must be plausible: at most 2**28 values
        per image for the input and every layer's output, and an embedding size of at most
        2**24 (``_persistence.MAX_SAMPLE_ELEMENTS`` / ``MAX_EMBED_DIM``).

        Raises FileNotFoundError for a missing file; ValueError naming ``path`` (and the entry)
        for a truncated, corrupt or foreign file, a missing or unexpected entry, a header whose
        shape or dtype does not fit the recorded trunk, loss or optimizer, non-finite values, or
        an implausible ``input_shape`` / embedding size.
        """
        return load(cls, path, backend)
