"""ResNet-18 / ResNet-50 backbones: mantissa-embed against the same network in torch and in ONNX Runtime.

Both sides compute one network: ``mantissa_embed.models.resnet18`` / ``resnet50`` (``embed_dim``
128 head) and its torch twin (``_torch_resnet.py``: torchvision's layout and module names), the
torch model taking our weights by state-dict name; the eval outputs are checked to agree
(untimed, once per model and size, relative error <= 1e-3), and ONNX Runtime's output against
torch's. The grid: model x size (``--sizes`` px, square) x batch x threads x mode, where

- **eval**: one forward in eval mode (running BatchNorm statistics). ours ``net.forward(x)``;
  torch ``model(x)`` under ``torch.inference_mode()``; ONNX Runtime ``session.run`` on the
  torch model exported with ``torch.onnx.export`` (eval mode, opset 17, static batch; the
  TorchScript exporter, the dynamo one when that is the only one left; checked by
  ``onnx.checker``), one ``InferenceSession`` per batch and thread count
  (``intra_op_num_threads=threads``, ``inter_op_num_threads=1``, CPU provider).
- **train**: one step in train mode (BatchNorm batch statistics): forward, the loss
  ``0.5 * sum(y**2) / N`` on the embeddings, backward, SGD(lr 1e-3, momentum 0.9). ours:
  ``opt.zero_grad(); y = net.forward(x); net.backward(y / N, need_dx=False); opt.step()`` with
  ``mantissa_embed.optim.SGD``; torch: the same with autograd and ``torch.optim.SGD`` (no input
  gradient on either side).

Protocol (benchmarks/README.md): every one-time cost before the clock on all sides (imports,
model and optimizer construction, the ONNX export and session, one untimed warm-up call per
configuration); then ``--repeats`` rounds that alternate the sides (ours, torch, ORT), each
call after ``--settle`` seconds of sleep so the other library's idle threads have stopped
spinning; the median ms per batch is reported with the ratios torch / ours and ORT / ours
(**above 1: mantissa-embed is faster**). Both libraries run on the same thread count
(``mantissa_embed.set_num_threads``, ``torch.set_num_threads``). Train steps update the
weights, so every model and size runs its eval configurations before its train ones.

GFLOP/s: 2 x the multiply-adds of the convolutions and the head, counted from the built
``Sequential``'s layer shapes (cross-checked against torch's layers with forward hooks), per
batch / time; a train step counts 3 x the forward (forward, input and weight gradients).
``%peak``: of the float32 FMA peak measured by ``fma_peak.py`` on the same thread count
(``--no-peak`` skips it).

Peak RSS (``--rss``): every (configuration, side) in its own fresh process, started through a
tiny launcher so that its ``ru_maxrss`` is its own and not the parent's (Linux carries a
parent's ``ru_maxrss`` over to a child started from it); the ours process never imports torch,
the ORT process imports onnxruntime only (the parent exports the model). Each process sets up,
warms up and times ``--repeats`` calls of its side, so the times of that mode come from those
processes and the sides run one after another, not alternated within a round. Weights there
are each library's own seeded default initialization (same distributions; the values change
neither the work nor the memory).

Usage::

    python benchmarks/compare_torch_backbones.py                         # the full grid
    python benchmarks/compare_torch_backbones.py --models resnet18 --sizes 32 --batches 2 \\
        --threads 1 --repeats 1 --no-peak                               # smoke run
    python benchmarks/compare_torch_backbones.py --rss --models resnet50 --sizes 224 --batches 32

Needs torch; onnx and onnxruntime (the ``bench`` extra) for the ORT column, which is skipped
with a message when they are missing or with ``--no-onnx``. Run on an idle machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _rss import LAUNCHER, peaks_mb  # noqa: E402

SIDES = ("ours", "torch", "ort")
#: starts a child from a small process, so that the child's ru_maxrss is not the parent's
LR, MOMENTUM = 1e-3, 0.9
CHECK_RTOL = 1e-3
LABELS = {"ours": "ours", "torch": "torch", "ort": "ORT"}


def csv(kind):
    def parse(text):
        try:
            items = [kind(t) for t in text.split(",") if t.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}") from None
        if not items:
            raise argparse.ArgumentTypeError("empty list")
        return items

    return parse


# --------------------------------------------------------------------------- work counting
def leaf_layers(net):
    """``[(layer, per-sample input shape), ...]`` of every layer of the built ``Sequential``
    ``net`` that holds no layers, in order, recursing into residual blocks (their block, then
    their shortcut, both from the block's input; from ``children()``)."""
    out = []

    def chain(layers, shape):
        for layer in layers:
            block = getattr(layer, "block", None)
            if block is not None:
                kids = layer.children()
                chain(kids[: len(block)], shape)
                chain(kids[len(block) :], shape)
            else:
                out.append((layer, shape))
            shape = layer.output_shape(shape)

    chain(net.layers, tuple(net.input_shape))
    return out


def forward_macs(net):
    """Multiply-adds of one sample's forward through the built ``Sequential`` ``net``: every
    Conv2D (output elements x C_in x kh x kw) and Dense (weight size) of ``leaf_layers``."""
    from mantissa_embed.layers import Conv2D, Dense

    total = 0
    for layer, shape in leaf_layers(net):
        w = dict(layer.named_parameters()).get("weight")
        if isinstance(layer, Conv2D):
            total += int(np.prod(layer.output_shape(shape))) * int(np.prod(w.shape[1:]))
        elif isinstance(layer, Dense):
            total += int(w.data.size)
    return total


def torch_macs(model, x):
    """The same count from torch's Conv2d / Linear modules (forward hooks), per sample; leaves
    ``model`` in eval mode."""
    import torch

    total = [0]

    def hook(mod, inp, out):
        if isinstance(mod, torch.nn.Conv2d):
            total[0] += out[0].numel() * mod.weight[0].numel()
        else:
            total[0] += mod.weight.numel()

    handles = [
        m.register_forward_hook(hook)
        for m in model.modules()
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))
    ]
    model.eval()
    try:
        with torch.inference_mode():
            model(x[:1])
    finally:
        for h in handles:
            h.remove()
    return total[0]


# --------------------------------------------------------------------------- the sides
def build_ours(name, size, embed_dim, seed=0):
    from mantissa_embed import models

    return getattr(models, name)(embed_dim, input_shape=(3, size, size), seed=seed)


def build_torch(name, embed_dim, state=None):
    import torch

    from _torch_resnet import torch_resnet

    torch.manual_seed(0)
    model = torch_resnet(name, embed_dim)
    if state is not None:
        missing, unexpected = model.load_state_dict(
            {k: torch.from_numpy(v) for k, v in state.items()}, strict=False
        )
        missing = [k for k in missing if not k.endswith("num_batches_tracked")]
        if missing or unexpected:
            raise RuntimeError(f"state-dict names differ: missing {missing}, unexpected {unexpected}")
    return model


def ours_step(net, x, mode, opt_cache=None):
    """``fn()`` running one eval forward or one train step of ``net`` on ``x``. Train: the
    optimizer is made once and kept in ``opt_cache`` (a dict) across batch sizes and thread
    counts, as ``torch_step``'s."""
    from mantissa_embed import optim

    n = x.shape[0]
    if mode == "eval":
        net.eval()
        return lambda: net.forward(x)
    net.train()
    opt_cache = {} if opt_cache is None else opt_cache
    if "opt" not in opt_cache:
        opt_cache["opt"] = optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    opt = opt_cache["opt"]

    def step():
        opt.zero_grad()
        y = net.forward(x)
        y /= n  # dL/dy of 0.5 * sum(y**2) / N (forward returns a fresh array)
        net.backward(y, need_dx=False)
        opt.step()

    return step


def torch_step(model, x, mode, opt_cache=None):
    """``fn()``: one eval forward or one train step of the torch ``model`` on ``x``."""
    import torch

    xt = torch.from_numpy(x)
    n = x.shape[0]
    if mode == "eval":
        model.eval()

        def forward():
            with torch.inference_mode():
                return model(xt)

        return forward
    model.train()
    opt_cache = {} if opt_cache is None else opt_cache
    if "opt" not in opt_cache:
        opt_cache["opt"] = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    opt = opt_cache["opt"]

    def step():
        opt.zero_grad()
        y = model(xt)
        loss = 0.5 * (y * y).sum() / n
        loss.backward()
        opt.step()

    return step


def onnx_status():
    """None when onnx and onnxruntime import, else the reason."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        return f"{exc.name or exc} is not installed (pip install '.[bench]' installs onnx and onnxruntime)"
    return None


def export_onnx(model, batch, size, path):
    """Export ``model`` (eval mode) for a static (batch, 3, size, size) input; returns the
    exporter used. The TorchScript exporter first (deprecated in torch 2.9+ but needs no
    onnxscript), the dynamo one if it is gone."""
    import torch

    model.eval()
    x = torch.zeros(batch, 3, size, size)
    kw = {"input_names": ["x"], "output_names": ["y"], "opset_version": 17}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(model, (x,), path, dynamo=False, **kw)
            return "torchscript"
        except TypeError:
            torch.onnx.export(model, (x,), path, dynamo=True, **kw)
            return "dynamo"


def check_onnx(path):
    """``onnx.checker`` on the exported file (untimed): a malformed export fails here, not in ORT."""
    import onnx

    onnx.checker.check_model(path)


def ort_session(path, threads):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


def ort_step(session, x):
    feed = {session.get_inputs()[0].name: x}
    return lambda: session.run(None, feed)


def rel_error(a, ref):
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    return float(np.abs(a - ref).max() / max(np.abs(ref).max(), 1e-30))


def make_x(batch, size, seed=0):
    return np.random.default_rng(seed).standard_normal((batch, 3, size, size)).astype(np.float32)


def set_threads(threads, torch_too=True):
    import mantissa_embed

    mantissa_embed.set_num_threads(threads)
    if torch_too:
        import torch

        torch.set_num_threads(threads)


# --------------------------------------------------------------------------- in-process run
def run_inprocess(args, name, size, ort_ok, tmp):
    """Every configuration of one model and size, the sides alternated in each round.
    Returns (rows, info)."""
    import torch

    ours = build_ours(name, size, args.embed_dim)
    tmodel = build_torch(name, args.embed_dim, ours.state_arrays())
    macs = forward_macs(ours)
    x0 = make_x(args.batches[0], size)
    tm = torch_macs(tmodel, torch.from_numpy(x0))
    if tm != macs:
        raise RuntimeError(f"{name} {size}px: multiply-add count {macs} (layer shapes) != {tm} (torch hooks)")
    # the check: eval outputs agree, untimed, at the benchmark size (first batch size)
    set_threads(args.threads[0])
    ours.eval()
    tmodel.eval()
    y_ours = ours.forward(x0)
    with torch.inference_mode():
        y_torch = tmodel(torch.from_numpy(x0)).numpy()
    err = rel_error(y_ours, y_torch)
    print(
        f"  check {name} {size}px batch {len(x0)}: eval output ours vs torch, max |diff| / max |torch| = "
        f"{err:.2e}",
        flush=True,
    )
    if not err <= CHECK_RTOL:
        raise AssertionError(
            f"{name} {size}px: ours and torch's eval outputs differ (relative {err:.2e} > {CHECK_RTOL})"
        )
    info = {"macs_per_sample": macs, "check_rel_error": err}
    onnx_paths = {}
    if ort_ok and "eval" in args.modes:
        for b in args.batches:
            path = os.path.join(tmp, f"{name}_{size}_{b}.onnx")
            t = time.perf_counter()
            info["exporter"] = export_onnx(tmodel, b, size, path)
            info.setdefault("export_s", {})[b] = round(time.perf_counter() - t, 2)
            check_onnx(path)
            onnx_paths[b] = path
        sess = ort_session(onnx_paths[args.batches[0]], args.threads[0])
        (y_ort,) = sess.run(None, {sess.get_inputs()[0].name: x0})
        del sess
        err = rel_error(y_ort, y_torch)
        print(
            f"  check {name} {size}px: eval output ORT vs torch, relative {err:.2e} ({info['exporter']} "
            f"exporter)",
            flush=True,
        )
        if not err <= CHECK_RTOL:
            raise AssertionError(
                f"{name} {size}px: ONNX Runtime's eval output differs from torch's ({err:.2e})"
            )
        info["ort_rel_error"] = err

    rows = []
    ours_opt, torch_opt = {}, {}  # one optimizer per side and model, kept across configurations
    for mode in args.modes:  # eval before train: the train steps change the weights
        for b in args.batches:
            x = make_x(b, size, seed=1)
            for threads in args.threads:
                set_threads(threads)
                fns = {
                    "ours": ours_step(ours, x, mode, ours_opt),
                    "torch": torch_step(tmodel, x, mode, torch_opt),
                }
                sess = None
                if mode == "eval" and onnx_paths:
                    sess = ort_session(onnx_paths[b], threads)
                    fns["ort"] = ort_step(sess, x)
                for fn in fns.values():  # untimed warm-up: buffers, plans, first-call costs
                    fn()
                times = {side: [] for side in fns}
                for _ in range(args.repeats):
                    for side, fn in fns.items():
                        time.sleep(args.settle)
                        t = time.perf_counter()
                        fn()
                        times[side].append(time.perf_counter() - t)
                row = {"model": name, "size": size, "batch": b, "threads": threads, "mode": mode}
                for side, ts in times.items():
                    row[f"{side}_ms"] = statistics.median(ts) * 1e3
                    row[f"{side}_ms_min"] = min(ts) * 1e3
                    row[f"{side}_ms_all"] = [round(t * 1e3, 3) for t in ts]
                rows.append(row)
                print(
                    f"  {name} {mode} {size}px batch {b} threads {threads}: "
                    + ", ".join(f"{s} {row[f'{s}_ms']:.1f} ms" for s in fns),
                    flush=True,
                )
                del sess, fns
                gc.collect()
    return rows, info


# --------------------------------------------------------------------------- --rss children


def child(args):
    """One side of one configuration in this fresh process: set up, warm up, time
    ``--repeats`` calls; prints a JSON line with the times and the peak RSS."""
    side, name, size, b, threads, mode = (
        args.child,
        args.models[0],
        args.sizes[0],
        args.batches[0],
        args.threads[0],
        args.modes[0],
    )
    x = make_x(b, size, seed=1)
    if side == "ours":  # never imports torch
        set_threads(threads, torch_too=False)
        fn = ours_step(build_ours(name, size, args.embed_dim), x, mode)
    elif side == "torch":
        set_threads(threads)
        fn = torch_step(build_torch(name, args.embed_dim), x, mode)
    else:
        fn = ort_step(ort_session(args.onnx_path, threads), x)
    fn()
    times = []
    for _ in range(args.repeats):
        time.sleep(args.settle)
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    ru, hwm = peaks_mb()
    print(json.dumps({"times": times, "ru_maxrss_mb": ru, "vmhwm_mb": hwm}))


def run_child(args, side, name, size, b, threads, mode, onnx_path=None):
    cmd = [
        sys.executable,
        "-c",
        LAUNCHER,
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        side,
        "--models",
        name,
        "--sizes",
        str(size),
        "--batches",
        str(b),
        "--threads",
        str(threads),
        "--modes",
        mode,
        "--repeats",
        str(args.repeats),
        "--settle",
        str(args.settle),
        "--embed-dim",
        str(args.embed_dim),
    ]
    if onnx_path:
        cmd += ["--onnx-path", onnx_path]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=6 * 3600, check=False)
    if out.returncode != 0:
        raise RuntimeError(
            f"{side} child ({name} {mode} {size}px batch {b} threads {threads}) failed "
            f"(status {out.returncode}):\n{out.stderr[-3000:]}"
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_rss(args, name, size, ort_ok, tmp):
    """Every configuration of one model and size, each side in its own fresh process."""
    import torch

    # untimed, in the parent: the agreement check, the work count and the ONNX exports
    ours = build_ours(name, size, args.embed_dim)
    tmodel = build_torch(name, args.embed_dim, ours.state_arrays())
    macs = forward_macs(ours)
    x0 = make_x(args.batches[0], size)
    set_threads(args.threads[0])
    ours.eval()
    tmodel.eval()
    with torch.inference_mode():
        y_torch = tmodel(torch.from_numpy(x0)).numpy()
    err = rel_error(ours.forward(x0), y_torch)
    print(
        f"  check {name} {size}px batch {len(x0)}: eval output ours vs torch, relative {err:.2e}", flush=True
    )
    if not err <= CHECK_RTOL:
        raise AssertionError(f"{name} {size}px: ours and torch's eval outputs differ (relative {err:.2e})")
    info = {"macs_per_sample": macs, "check_rel_error": err}
    onnx_paths = {}
    if ort_ok and "eval" in args.modes:
        for b in args.batches:
            onnx_paths[b] = os.path.join(tmp, f"{name}_{size}_{b}.onnx")
            info["exporter"] = export_onnx(tmodel, b, size, onnx_paths[b])
            check_onnx(onnx_paths[b])
    del ours, tmodel
    gc.collect()
    rows = []
    for mode in args.modes:
        for b in args.batches:
            for threads in args.threads:
                row = {"model": name, "size": size, "batch": b, "threads": threads, "mode": mode}
                sides = ["ours", "torch"] + (["ort"] if mode == "eval" and onnx_paths else [])
                for side in sides:
                    d = run_child(args, side, name, size, b, threads, mode, onnx_paths.get(b))
                    row[f"{side}_ms"] = statistics.median(d["times"]) * 1e3
                    row[f"{side}_ms_min"] = min(d["times"]) * 1e3
                    row[f"{side}_ms_all"] = [round(t * 1e3, 3) for t in d["times"]]
                    row[f"{side}_rss_mb"] = d["ru_maxrss_mb"]
                    row[f"{side}_vmhwm_mb"] = d["vmhwm_mb"]
                rows.append(row)
                print(
                    f"  {name} {mode} {size}px batch {b} threads {threads}: "
                    + ", ".join(f"{s} {row[f'{s}_ms']:.1f} ms, {row[f'{s}_rss_mb']:.0f} MB" for s in sides),
                    flush=True,
                )
    return rows, info


# --------------------------------------------------------------------------- report
def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def add_rates(row, macs, peaks):
    """GFLOP/s and % of the FMA peak of every side of ``row``."""
    flops = 2.0 * macs * row["batch"] * (3 if row["mode"] == "train" else 1)
    row["gflop_per_batch"] = flops / 1e9
    peak = peaks.get(row["threads"])
    for side in SIDES:
        ms = row.get(f"{side}_ms")
        if ms is None:
            continue
        row[f"{side}_gflops"] = flops / (ms * 1e-3) / 1e9
        row[f"{side}_pct_peak"] = 100.0 * row[f"{side}_gflops"] / peak if peak else None
    for side in ("torch", "ort"):
        if row.get(f"{side}_ms") is not None:
            row[f"{side}_over_ours"] = row[f"{side}_ms"] / row["ours_ms"]


def print_tables(rows, models, modes, rss):
    for name in models:
        for mode in modes:
            sel = [r for r in rows if r["model"] == name and r["mode"] == mode]
            if not sel:
                continue
            has_ort = any("ort_ms" in r for r in sel)
            sides = ("ours", "torch", "ort") if has_ort else ("ours", "torch")
            label = " / ".join(LABELS[s] for s in sides)
            head = (
                ["px", "batch", "threads", "GFLOP/batch"]
                + [f"{LABELS[s]} ms" for s in sides]
                + ["torch/ours"]
            )
            head += ["ORT/ours"] if has_ort else []
            head += [f"GFLOP/s {label}", f"%peak {label}"]
            head += [f"peak RSS MB {label}"] if rss else []
            print(
                f"\n### {name}, {'eval forward' if mode == 'eval' else 'train step (fwd + bwd + SGD)'}"
                f"{'' if rss else ' (peak RSS: --rss)'}\n"
            )
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
            for r in sel:
                cells = [str(r["size"]), str(r["batch"]), str(r["threads"]), f"{r['gflop_per_batch']:.2f}"]
                cells += [fmt(r.get(f"{s}_ms"), ".1f") for s in sides]
                cells += [fmt(r.get("torch_over_ours"), ".2f") + "x"]
                if has_ort:
                    cells += [fmt(r.get("ort_over_ours"), ".2f") + ("x" if r.get("ort_over_ours") else "")]
                cells += [
                    " / ".join(fmt(r.get(f"{s}_gflops"), ".1f") for s in sides),
                    " / ".join(fmt(r.get(f"{s}_pct_peak"), ".0f") for s in sides),
                ]
                if rss:
                    cells += [" / ".join(fmt(r.get(f"{s}_rss_mb"), ".0f") for s in sides)]
                print("| " + " | ".join(cells) + " |")


def versions():
    import torch

    import mantissa_embed

    out = {
        "mantissa_embed": mantissa_embed.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    try:
        import onnx
        import onnxruntime

        out.update(onnx=onnx.__version__, onnxruntime=onnxruntime.__version__)
    except ImportError:
        pass
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--models",
        type=csv(str),
        default=["resnet18", "resnet50"],
        help="comma-separated (default resnet18,resnet50; resnet34 also works)",
    )
    p.add_argument("--sizes", type=csv(int), default=[112, 224], help="input px, square (default 112,224)")
    p.add_argument("--batches", type=csv(int), default=[16, 32], help="batch sizes (default 16,32)")
    p.add_argument("--threads", type=csv(int), default=[1, 2], help="thread counts (default 1,2)")
    p.add_argument("--modes", type=csv(str), default=["eval", "train"], help="eval,train (default both)")
    p.add_argument("--repeats", type=int, default=3, help="alternated timed rounds (default 3)")
    p.add_argument("--settle", type=float, default=0.2, help="seconds of sleep before each timed call (0.2)")
    p.add_argument("--embed-dim", type=int, default=128, help="the embedding head's size (default 128)")
    p.add_argument("--no-onnx", action="store_true", help="skip the ONNX Runtime column")
    p.add_argument(
        "--rss",
        action="store_true",
        help="each side of each configuration in a fresh process, with its peak RSS",
    )
    p.add_argument("--no-peak", action="store_true", help="do not measure the FMA peak")
    p.add_argument("--json", metavar="PATH", help="also write the JSON result to PATH")
    p.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    p.add_argument("--onnx-path", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    bad = [m for m in args.models if m not in ("resnet18", "resnet34", "resnet50")]
    if bad:
        p.error(f"unknown model(s) {bad}")
    if any(m not in ("eval", "train") for m in args.modes):
        p.error("--modes takes eval and/or train")
    args.modes = [m for m in ("eval", "train") if m in args.modes]  # eval first
    if args.repeats < 1 or min(args.threads) < 1 or min(args.batches) < 1 or min(args.sizes) < 1:
        p.error("--repeats, --threads, --batches and --sizes must be >= 1")
    if args.child:
        child(args)
        return 0

    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIPPED: torch is not installed")
        return 0
    from _machine import cpu_model, describe

    ort_ok = False
    if args.no_onnx:
        print("ONNX Runtime column skipped (--no-onnx)")
    else:
        why = onnx_status()
        if why:
            print(f"ONNX Runtime column skipped: {why}")
        else:
            ort_ok = True
    vers = versions()
    print("# compare_torch_backbones: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    peaks = {}
    for t in args.threads:
        if args.no_peak:
            line = describe(t, peak=float("nan")).replace(
                "float32 FMA peak nan GFLOP/s on", "FMA peak not measured (--no-peak),"
            )
        else:
            import fma_peak

            peaks[t] = fma_peak.measure(t)
            line = describe(t, peak=peaks[t])
        print(line)
    print(
        f"models={','.join(args.models)} sizes={args.sizes} batches={args.batches} threads={args.threads} "
        f"modes={args.modes} repeats={args.repeats} settle={args.settle}s embed_dim={args.embed_dim} "
        f"rss={args.rss}; load average at start {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)",
        flush=True,
    )

    rows, infos = [], {}
    run = run_rss if args.rss else run_inprocess
    with tempfile.TemporaryDirectory(prefix="backbones_onnx_") as tmp:
        for name in args.models:
            for size in args.sizes:
                r, info = run(args, name, size, ort_ok, tmp)
                for row in r:
                    add_rates(row, info["macs_per_sample"], peaks)
                rows += r
                infos[f"{name}_{size}"] = info
                gc.collect()
    print_tables(rows, args.models, args.modes, args.rss)
    load = os.getloadavg()[0]
    busy = load > (os.cpu_count() or 1)
    print(
        f"\nratios: torch (or ORT) ms / ours ms, above 1 = mantissa-embed faster. load average at end "
        f"{load:.2f} ({'WARNING: busy machine, timings unreliable' if busy else 'ok'})"
    )
    result = {
        "bench": "compare_torch_backbones",
        "cpu": cpu_model(),
        "versions": vers,
        "fma_peak_gflops": {str(t): v for t, v in peaks.items()},
        "repeats": args.repeats,
        "rss": args.rss,
        "onnx": ort_ok,
        "models": infos,
        "rows": rows,
        "load_end": load,
    }
    line = json.dumps(result)
    print(line)
    if args.json:
        with open(args.json, "w") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
