"""Forward + backward time of losses and a miner, mantissa-embed vs pytorch-metric-learning, side by side.

The losses against pytorch-metric-learning. For N in ``--n`` (default 256 and 1024), D = 128, 16 classes, seeded
standard-normal embeddings, it times:

=============================  =============================================================
TripletMarginLoss              every triplet of the batch (no miner), default margin 0.05
ContrastiveLoss                every pair, default margins (0, 1)
MultiSimilarityLoss            every pair, defaults (alpha 2, beta 50, base 0.5)
NTXentLoss                     every positive pair against every negative, temperature 0.07
TripletMarginMiner(semihard)   mining only (no gradient), margin 0.2
=============================  =============================================================

A loss call is "forward + backward": mantissa-embed's ``loss(x, labels)`` returns the loss and
dL/dx in one call; the PML side runs ``loss(torch.tensor(x, requires_grad=True), labels)`` then
``.backward()``. Before timing, the two loss values are compared (column ``|dL|/L``).

The mantissa-embed classes are looked up lazily: a class another engineer has not added yet
prints "not available". PML's NTXentLoss materializes a (positive pairs x negative pairs) matrix
(about 6e10 entries at N = 1024 with 16 classes, tens of GB): the PML side is skipped when that
product exceeds ``--pml-max-elements`` (default 4e8) and the row says so.

Repeats alternate between the libraries (PML, mantissa, PML, ...) so that a slow patch of the
machine hits both; medians and minimums in ms, and the ratio of the medians PML / mantissa
(above 1: mantissa-embed is faster). ``--threads`` sets both libraries' threads. Each timing
starts after a 0.2 s pause (so neither side runs next to the other's spinning idle threads);
calls under 20 ms are timed as a block of calls (steady state).

Usage::

    python benchmarks/bench_losses_pml.py                          # N = 256 and 1024, 5 repeats
    python benchmarks/bench_losses_pml.py --n 256 --repeats 9 --threads 1
    python benchmarks/bench_losses_pml.py --all --threads 1 --n 256 --repeats 3
    python benchmarks/bench_losses_pml.py --all --losses SoftTripleLoss ArcFaceLoss

``--all`` (every loss both libraries have) builds every class of
``mantissa_embed.losses.__all__`` that ``pytorch_metric_learning.losses`` also has, with the same
default arguments: proxy / classifier losses get ``num_classes=--classes`` (default 32 with
``--all``) and ``embedding_size=D``, and our initial weights are copied into PML's (transposed
where the layouts differ, e.g. P2SGradLoss: ours (C, D), PML (D, C)); ManifoldLoss gets ``l=D``
and the same seeded meta-classes as ``indices_tuple`` on both sides; RankedListLoss margin 0.4,
Tn 1.0; wrappers get an inner loss (SelfSupervisedLoss: NTXentLoss; CrossBatchMemory:
ContrastiveLoss, memory 1024; MultipleLosses: Contrastive + TripletMargin). SelfSupervisedLoss
and VICRegLoss are called with a reference batch (x + 0.1 noise). One row per loss and N: medians,
minimums, the ratio PML / ours, the relative difference of the loss values and whether they agree
within 1e-3; the load average at start and end, numpy's BLAS threads (our float64 paths use
numpy's BLAS, which ``set_num_threads`` does not limit: set ``OPENBLAS_NUM_THREADS``), and the
list of rows where mantissa-embed is slower. PML's NTXent / LiftedStructure / TupletMargin /
SelfSupervised(NTXent) pair-by-pair matrices and PNPLoss's N^3 tensor are skipped above
``--pml-max-elements``.

Without torch / pytorch-metric-learning it prints the mantissa-embed side alone.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

#: (row label, mantissa module, class name, constructor kwargs, kind)
ITEMS = [
    ("TripletMarginLoss (all)", "losses", "TripletMarginLoss", {}, "loss"),
    ("ContrastiveLoss", "losses", "ContrastiveLoss", {}, "loss"),
    ("MultiSimilarityLoss", "losses", "MultiSimilarityLoss", {}, "loss"),
    ("NTXentLoss", "losses", "NTXentLoss", {}, "loss"),
    (
        "TripletMarginMiner(semihard)",
        "miners",
        "TripletMarginMiner",
        {"margin": 0.2, "type_of_triplets": "semihard"},
        "miner",
    ),
]


def _ours(module, name, kwargs):
    import importlib

    try:
        mod = importlib.import_module(f"mantissa_embed.{module}")
        cls = getattr(mod, name)
        return cls(**kwargs)
    except (ImportError, AttributeError):
        return None


def _theirs(module, name, kwargs):
    try:
        import importlib

        mod = importlib.import_module(f"pytorch_metric_learning.{module}")
        return getattr(mod, name)(**kwargs)
    except (ImportError, AttributeError):
        return None


def _pml_ntxent_elements(y):
    """(# ordered positive pairs) x (# ordered negative pairs): the size of PML's NTXent matrix."""
    counts = np.bincount(y)
    n = len(y)
    pos = int((counts * (counts - 1)).sum())
    neg = n * n - int((counts * counts).sum())
    return pos * neg


SETTLE = 0.2  # seconds of sleep before each timed block (see _time_once)
BLOCK_MS = 20.0  # calls shorter than this are timed as a block of calls lasting about this long


def _time_once(fn, settle=SETTLE):
    """ms per call of ``fn``, after ``settle`` seconds of sleep.

    The pause lets the other library's idle worker threads stop spinning (torch's OpenMP pool,
    numpy's OpenBLAS keep spinning for a while after their last call; timed right after them,
    the second side would share its cores with the spinners). A call shorter than BLOCK_MS is
    then timed again as a block of calls (the first, untimed in that case, also absorbs the
    wake-up of the sleeping thread pool), so sub-millisecond losses get a steady-state time."""
    if settle:
        time.sleep(settle)
    t = time.perf_counter()
    fn()
    ms = (time.perf_counter() - t) * 1e3
    if ms >= BLOCK_MS:
        return ms
    k = max(2, int(BLOCK_MS / max(ms, 1e-3)))
    t = time.perf_counter()
    for _ in range(k):
        fn()
    return (time.perf_counter() - t) * 1e3 / k


def _alternate(run_ours, run_theirs, repeats):
    """Time both sides in alternation (PML first): (ours ms list, theirs ms list, error note).
    run_theirs None: ours only. A PML exception on a repeat drops the PML side (its list is
    emptied and the note says why)."""
    t_ours, t_theirs, err = [], [], ""
    for _ in range(repeats):
        if run_theirs is not None:
            try:
                t_theirs.append(_time_once(run_theirs))
            except Exception as e:  # noqa: BLE001
                run_theirs, t_theirs = None, []
                err = f"PML raised on a repeat: {type(e).__name__}: {str(e)[:60]}"
        t_ours.append(_time_once(run_ours))
    return t_ours, t_theirs, err


# ---------------------------------------------------------------------------------------------
# --all: every loss both libraries have
# ---------------------------------------------------------------------------------------------

#: required constructor arguments that have no default, filled for both sides
#: (``None``: a wrapper whose inner loss is built by ``_inner``)
_ALL_FILL = {
    "margin": 0.4,  # RankedListLoss(margin, Tn): values of PML's docs example
    "Tn": 1.0,
}

#: losses whose PML implementation materializes a large intermediate: how to count its entries
#: "pairpair": (# positive pairs) x (# negative pairs) (NTXent, LiftedStructure, TupletMargin);
#: "cubic": N x N x N (PNPLoss's pairwise-difference tensor)
_PML_MEMORY = {
    "NTXentLoss": "pairpair",
    "LiftedStructureLoss": "pairpair",
    "TupletMarginLoss": "pairpair",
    "SelfSupervisedLoss": "pairpair",  # wraps NTXentLoss on 2N embeddings, labels 0..N-1 twice
    "PNPLoss": "cubic",
}


def _inner(lib, name):
    """The inner loss(es) a wrapper gets, from module ``lib`` (ours or PML's losses)."""
    if name == "SelfSupervisedLoss":
        return {"loss": lib.NTXentLoss()}
    if name == "CrossBatchMemory":
        return {"loss": lib.ContrastiveLoss()}
    if name == "MultipleLosses":
        return {"losses": [lib.ContrastiveLoss(), lib.TripletMarginLoss()]}
    return {}


def _build_pair(name, ours_mod, pml_mod, d, n_classes):
    """(ours, theirs, note): both instances with the same arguments, our weights copied into PML's.

    Raises with a reason when a side cannot be built."""
    import inspect

    import torch

    ocls, pcls = getattr(ours_mod, name), getattr(pml_mod, name)
    kw = {}
    for p in inspect.signature(ocls).parameters.values():
        if p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in _ALL_FILL:
            kw[p.name] = _ALL_FILL[p.name]
        elif p.name == "num_classes":
            kw[p.name] = n_classes
        elif p.name == "embedding_size":
            kw[p.name] = d
        elif p.name == "l":  # ManifoldLoss(l): the embedding size
            kw[p.name] = d
        elif p.name in ("loss", "losses"):
            pass
        else:
            raise ValueError(f"our constructor needs {p.name!r}, no value known")
    if name == "CrossBatchMemory":
        kw["memory_size"] = 1024
    okw = dict(kw, **_inner(ours_mod, name))
    pkw = dict(kw, **_inner(pml_mod, name))
    if name == "P2SGradLoss":  # PML: P2SGradLoss(descriptors_dim, num_classes)
        pkw = {"descriptors_dim": d, "num_classes": n_classes}
    ours = ocls(**okw)
    theirs = pcls(**pkw)
    # copy our weights into PML's, in order, transposing where the layouts differ
    note = ""
    oparams = list(ours.parameters()) if hasattr(ours, "parameters") else []
    tparams = list(theirs.parameters())
    if oparams and tparams:
        copied = []
        for op, (tname, tp) in zip(oparams, theirs.named_parameters()):
            a = np.asarray(getattr(op, "data", op), dtype=np.float32)
            if tuple(a.shape) == tuple(tp.shape):
                src, how = a, ""
            elif a.ndim == 2 and tuple(a.T.shape) == tuple(tp.shape):
                src, how = a.T, " (transposed)"
            else:
                raise ValueError(f"weight shapes differ: ours {a.shape}, PML {tname} {tuple(tp.shape)}")
            with torch.no_grad():
                tp.copy_(torch.from_numpy(np.ascontiguousarray(src)))
            copied.append(f"{tname}{how}")
        note = "weights copied: " + ", ".join(copied)
    return ours, theirs, note


def _pml_elements(name, y):
    kind = _PML_MEMORY.get(name)
    n = len(y)
    if kind == "cubic":
        return n**3
    if kind == "pairpair":
        if name == "SelfSupervisedLoss":
            y = np.concatenate([np.arange(n), np.arange(n)])
        return _pml_ntxent_elements(y)
    return 0


def main_all(args):
    """``--all``: one row per loss in ``mantissa_embed.losses.__all__`` that PML also has."""
    import os

    import mantissa_embed
    import mantissa_embed.losses as ours_mod

    mantissa_embed.set_num_threads(args.threads)
    try:
        import pytorch_metric_learning
        import pytorch_metric_learning.losses as pml_mod
        import torch
    except ImportError:
        print("SKIPPED: --all needs torch and pytorch-metric-learning")
        return
    import warnings

    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=UserWarning, module="pytorch_metric_learning")
    names = []
    for name in ours_mod.__all__:
        obj = getattr(ours_mod, name, None)
        if not isinstance(obj, type) or name.startswith(("Base", "Generic")) or name == "LossOutput":
            continue
        if args.losses and name not in args.losses:
            continue
        if not hasattr(pml_mod, name):
            print(f"# {name}: not in pytorch_metric_learning.losses, skipped")
            continue
        names.append(name)
    n_classes = args.classes
    print(
        f"mantissa_embed {mantissa_embed.__version__}; torch {torch.__version__}, "
        f"pytorch-metric-learning {pytorch_metric_learning.__version__}"
    )
    print(
        f"threads={args.threads} D={args.d} classes={n_classes} repeats={args.repeats} "
        f"float32 CPU; load average at start {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
        f"{os.getloadavg()[2]:.2f} ({os.cpu_count()} CPUs)"
    )
    try:  # numpy's BLAS (used by the float64 paths of some losses) is not set_num_threads'
        from threadpoolctl import threadpool_info

        blas = ", ".join(
            f"{i['internal_api']} {i['num_threads']} threads"
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        )
    except ImportError:
        blas = "unknown (threadpoolctl not installed)"
    print(
        f"numpy BLAS: {blas or 'none found'} (set OPENBLAS_NUM_THREADS to change it; "
        "mantissa_embed.set_num_threads does not)"
    )
    hdr = (
        f"{'loss':<34}{'N':>6}{'PML med':>10}{'PML min':>10}{'ours med':>10}{'ours min':>10}"
        f"{'PML/ours':>10}  {'|dL|/L':>8} {'agree':>5}  note"
    )
    print(hdr)
    print("-" * len(hdr))
    slow = []
    rng = np.random.default_rng(0)
    for n in args.n:
        x = rng.standard_normal((n, args.d)).astype(np.float32)
        y = rng.integers(0, n_classes, n).astype(np.int64)
        ref = (x + 0.1 * rng.standard_normal((n, args.d))).astype(np.float32)
        yt = torch.from_numpy(y)
        for name in names:
            try:
                ours, theirs, note = _build_pair(name, ours_mod, pml_mod, args.d, n_classes)
            except Exception as e:  # noqa: BLE001 - a benchmark row, not a test
                print(f"{name:<34}{n:>6}  skipped: {type(e).__name__}: {e}")
                continue
            el = _pml_elements(name, y)
            if el > args.pml_max_elements:
                theirs = None
                note = f"PML skipped: its pair matrix would have {el:.1e} entries"
            if name in ("SelfSupervisedLoss",):

                def run_ours():
                    return ours(x, ref)

                def run_theirs():
                    xt = torch.tensor(x, requires_grad=True)
                    rt = torch.tensor(ref, requires_grad=True)
                    loss = theirs(xt, rt)
                    loss.backward()
                    return float(loss.detach())
            elif name == "VICRegLoss":

                def run_ours():
                    return ours(x, ref_emb=ref)

                def run_theirs():
                    xt = torch.tensor(x, requires_grad=True)
                    rt = torch.tensor(ref, requires_grad=True)
                    loss = theirs(xt, ref_emb=rt)
                    loss.backward()
                    return float(loss.detach())
            elif name == "ManifoldLoss":
                # no labels (both libraries refuse them): the same seeded meta-classes on both sides,
                # every one of the K proxies used at least once, as PML draws them
                K = ours.K
                mc = np.concatenate([np.arange(K), rng.integers(0, K, max(n - K, 0))])[:n]
                mc = rng.permutation(mc).astype(np.int64)
                mct = torch.from_numpy(mc)
                note = (note + "; " if note else "") + "meta-classes passed as indices_tuple"

                def run_ours():
                    return ours(x, indices_tuple=mc)

                def run_theirs():
                    xt = torch.tensor(x, requires_grad=True)
                    loss = theirs(xt, indices_tuple=mct)
                    loss.backward()
                    return float(loss.detach())
            elif name == "DynamicSoftMarginLoss" and theirs is not None:
                # PML keeps the autograd graph in its histogram state: a second backward through
                # the same instance raises, so PML gets a fresh instance per call (no weights)
                note = "PML: fresh instance per call (its histogram state keeps the graph)"

                def run_ours():
                    return ours(x, y)

                def run_theirs():
                    xt = torch.tensor(x, requires_grad=True)
                    loss = getattr(pml_mod, name)()(xt, yt)
                    loss.backward()
                    return float(loss.detach())
            else:

                def run_ours():
                    return ours(x, y)

                def run_theirs():
                    xt = torch.tensor(x, requires_grad=True)
                    loss = theirs(xt, yt)
                    loss.backward()
                    return float(loss.detach())

            try:
                out = run_ours()  # warm-up + value check
                lo = float(getattr(out, "loss", out))
            except Exception as e:  # noqa: BLE001
                print(f"{name:<34}{n:>6}  skipped: ours raised {type(e).__name__}: {e}")
                continue
            diff, agree = "", ""
            if theirs is not None:
                try:
                    lt = run_theirs()
                    d_rel = abs(lo - lt) / max(abs(lt), 1e-12)
                    diff = f"{d_rel:.1e}"
                    agree = "yes" if d_rel <= 1e-3 or abs(lo - lt) <= 1e-6 else "NO"
                except Exception as e:  # noqa: BLE001
                    theirs = None
                    note = f"PML raised {type(e).__name__}: {e}"
            t_ours, t_theirs, err = _alternate(
                run_ours, run_theirs if theirs is not None else None, args.repeats
            )
            if err:
                theirs, note = None, err
            mo = statistics.median(t_ours)
            if t_theirs:
                mt = statistics.median(t_theirs)
                cols = f"{mt:>10.2f}{min(t_theirs):>10.2f}{mo:>10.2f}{min(t_ours):>10.2f}{mt / mo:>9.2f}x"
                if mt / mo < 1.0:
                    slow.append((name, n, mt / mo))
            else:
                cols = f"{'n/a':>10}{'n/a':>10}{mo:>10.2f}{min(t_ours):>10.2f}{'n/a':>10}"
            print(f"{name:<34}{n:>6}{cols}  {diff:>8} {agree:>5}  {note}", flush=True)
    la = os.getloadavg()
    print(f"load average at end {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    if slow:
        print(
            "mantissa-embed slower than PML (PML/ours < 1): "
            + ", ".join(f"{nm} N={n} ({r:.2f}x)" for nm, n, r in slow)
        )
    else:
        print("mantissa-embed is not slower than PML on any row")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--classes", type=int, default=None, help="number of classes (default 16; 32 with --all)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--pml-max-elements",
        type=float,
        default=4e8,
        help="skip PML's NTXent-like losses when their pair-by-pair (or N^3) "
        "intermediate exceeds this many entries",
    )
    ap.add_argument(
        "--all", action="store_true", help="every loss of mantissa_embed.losses.__all__ that PML also has"
    )
    ap.add_argument(
        "--losses", nargs="+", default=None, metavar="NAME", help="with --all: only these class names"
    )
    args = ap.parse_args(argv)
    if args.all:
        if args.classes is None:
            args.classes = 32
        return main_all(args)
    if args.classes is None:
        args.classes = 16

    import mantissa_embed

    mantissa_embed.set_num_threads(args.threads)
    try:
        import pytorch_metric_learning
        import torch

        torch.set_num_threads(args.threads)
        vers = f"torch {torch.__version__}, pytorch-metric-learning {pytorch_metric_learning.__version__}"
    except ImportError:
        torch = None
        vers = "torch / pytorch-metric-learning not installed: mantissa side only"
    print(f"mantissa_embed {mantissa_embed.__version__}; {vers}")
    print(f"threads={args.threads} D={args.d} classes={args.classes} repeats={args.repeats}")
    hdr = (
        f"{'item':<30}{'N':>6}{'PML med':>11}{'PML min':>10}{'ours med':>11}{'ours min':>10}"
        f"{'PML/ours':>10}  {'|dL|/L':>8}  note"
    )
    print(hdr)
    print("-" * len(hdr))
    rng = np.random.default_rng(0)
    for n in args.n:
        x = rng.standard_normal((n, args.d)).astype(np.float32)
        y = rng.integers(0, args.classes, n).astype(np.int64)
        for label, module, name, kwargs, kind in ITEMS:
            ours = _ours(module, name, kwargs)
            theirs = None if torch is None else _theirs(module, name, kwargs)
            note = ""
            if ours is None:
                print(f"{label:<30}{n:>6}  not available (mantissa_embed.{module}.{name} does not exist yet)")
                continue
            if theirs is not None and name == "NTXentLoss":
                el = _pml_ntxent_elements(y)
                if el > args.pml_max_elements:
                    theirs = None
                    note = f"PML skipped: its NTXent matrix would have {el:.1e} entries"
            if kind == "loss":

                def run_ours():
                    return ours(x, y).loss

                def run_theirs():
                    xt = torch.tensor(x, requires_grad=True)
                    loss = theirs(xt, torch.from_numpy(y))
                    loss.backward()
                    return float(loss.detach())
            else:

                def run_ours():
                    return ours(x, y)

                def run_theirs():
                    return theirs(torch.from_numpy(x), torch.from_numpy(y))

            diff = ""
            lo = run_ours()  # warm-up + value check
            if theirs is not None:
                lt = run_theirs()
                if kind == "loss":
                    diff = f"{abs(float(lo) - lt) / max(abs(lt), 1e-12):.1e}"
                else:
                    same = all(
                        np.array_equal(np.sort(np.asarray(a)), np.sort(b.numpy())) for a, b in zip(lo, lt)
                    )
                    diff = "same" if same else "differ"
            t_ours, t_theirs, err = _alternate(
                run_ours, run_theirs if theirs is not None else None, args.repeats
            )
            if err:
                note = err
            mo = statistics.median(t_ours)
            if t_theirs:
                mt = statistics.median(t_theirs)
                cols = f"{mt:>11.2f}{min(t_theirs):>10.2f}{mo:>11.2f}{min(t_ours):>10.2f}{mt / mo:>9.1f}x"
            else:
                cols = f"{'n/a':>11}{'n/a':>10}{mo:>11.2f}{min(t_ours):>10.2f}{'n/a':>10}"
            print(f"{label:<30}{n:>6}{cols}  {diff:>8}  {note}", flush=True)


if __name__ == "__main__":
    main()
