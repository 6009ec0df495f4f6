"""mantissa-embed vs PyTorch + pytorch-metric-learning (PML): the same jobs, alternated in one run.

Jobs (each side does the same work; all float32, CPU, ``--threads`` threads on both sides):

===================  ===========================================================================
sgemm NxNxN          ``engine.sgemm`` vs ``torch.matmul(out=)``, N = ``--gemm-n`` (1024)
conv2d fwd+bwd       small_cnn_embedder's second conv, Conv2D(16, 3, pad=1, act="relu") on
                     (64, 8, 14, 14): forward, then backward to weights, bias and input;
                     torch: ``relu(conv2d(x))`` + ``backward``
maxpool fwd+bwd      MaxPool2D(2) on (64, 8, 28, 28), forward and backward
TripletMarginLoss    all triplets, N = ``--loss-n`` (1024), D = 128, 16 classes, forward+backward
ContrastiveLoss      all pairs, same batch, forward+backward
semihard miner       ``TripletMarginMiner(margin=0.2, type_of_triplets="semihard")``, same batch
embed 6000           the forward pass of small_cnn_embedder(16) over the 6,000 images, batches of 256
retrieve 1k x 100k   embed 1,000 query images, then the 10 nearest of 100,000 L2-normalized
                     gallery embeddings (torch: ``cdist`` + ``topk`` in chunks of 100 queries)
fit semihard job     ``Embedder(small_cnn_embedder(16), loss="triplet", margin=0.1,
                     miner="semihard", optimizer="sgd", momentum=0)`` one epoch of 6,000 images,
                     batch 64, lr 0.05 constant, no augmentation (the same work as the torch side),
                     against the same network in torch trained with PML's
                     ``TripletMarginLoss(0.1)`` on ``TripletMarginMiner(0.1, "semihard")`` triplets
                     of class-balanced batches (m = 8 per class, the Embedder's rule), plain SGD.
fit default job      ``Embedder(small_cnn_embedder(16), loss="triplet")`` with ``fit``'s defaults
                     (the triplet loss's default miner, AdamW, cosine schedule, affine
                     augmentation: ``embedder.DEFAULTS``), batch 64,
                     against torch + PML's semihard triplets on random batches, SGD lr 0.05: what
                     a user runs first on each side. Each fit runs in its own subprocess
                     (``--child``), which reports the time of each timed epoch and its peak RSS
                     (``VmHWM``: the whole process, interpreter and imports included).
===================  ===========================================================================

Fit protocol (``_fit_timing``): in each child, everything done once happens before the clock
starts: the imports, the model, the loss, the miner, the optimizer (the first ``torch.optim``
optimizer of a process imports ``torch._dynamo``, seconds), the data tensors; then one untimed
warm-up step on the epoch's batch shapes (torch: ``_torch_reference.Trainer.warm_up``; mantissa:
the same ``Embedder`` fitted on one batch); then ``--fit-epochs`` (3) consecutive epochs, each
timed on its own (mantissa: through ``fit``'s ``callback``). The fit rows give the median over
every timed epoch of every round. Checks (exit status 1 when one fails): on each side the median
first timed epoch is at most 25% slower than the median of the later ones (a one-time cost left
in the timed region would show there); and a plain torch loop written out in this file
(``plain_torch_epoch``: model, PML loss + miner and SGD built before timing, one warm-up step,
one epoch timed), run as a third child in every round, agrees with the torch side's epoch within
15% (``--no-plain-check`` skips it).

Protocol: one untimed warm-up of every job on each side, then ``--repeats`` rounds; in every
round each job runs once on each side, torch first then mantissa, so that a slow patch of the
machine hits both. Every timed job starts after ``--settle`` seconds of sleep (0.2): after its
last call a library's idle worker threads keep spinning for a while (OpenMP, OpenBLAS), and
without the pause the side timed second would share the cores with the first side's spinners.
Jobs shorter than 0.1 s then run once untimed just before the timed call, so the wake-up of a
sleeping thread pool (0.3 ms to ~15 ms on this VM) is not charged to them. The table prints the medians (ms), the ratio of the medians torch /
mantissa (**above 1: mantissa-embed is faster**) and the minimums. The fit rows also print the
median peak RSS of each side's process and their ratio.

Data: the MNIST test set (6,000 images stratified by class, see ``_torch_reference``) when its
IDX files are in ``--data-dir`` / ``$MANTISSA_EMBED_DATA`` / ``/work/shared/data/mnist``,
otherwise seeded synthetic 28x28 images (``suite/common.py``); the timings do not depend on
the pixel values.

Usage::

    python benchmarks/compare_torch.py                       # 5 rounds, 2 threads, every job
    python benchmarks/compare_torch.py --repeats 9 --threads 1
    python benchmarks/compare_torch.py --jobs sgemm conv2d   # a subset (prefixes of job names)
    python benchmarks/compare_torch.py --no-fit              # skip the fit subprocesses
    python benchmarks/compare_torch.py --busy-neighbour      # with one core kept busy meanwhile
    python benchmarks/compare_torch.py --jobs fit --repeats 1 --fit-epochs 2   # a quick fit check

Without torch or pytorch-metric-learning the torch columns read "n/a" (mantissa side only).
Exit status 0, or 1 when a fit check fails (see above).
Run it on an otherwise idle machine (the script prints the load average at start and end).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _fit_timing as FT  # noqa: E402
import _torch_reference as R  # noqa: E402
from _machine import busy_neighbour, describe  # noqa: E402
from suite.common import embeddings as make_embeddings, synthetic_mnist  # noqa: E402

N_IMAGES = 6000
MARGIN = 0.1
#: jobs faster than this (seconds) run once untimed right before each timed call: after the
#: settle pause a sleeping thread pool takes from 0.3 ms to ~15 ms to wake (VM vCPUs), which
#: would otherwise be charged to a 0.1-10 ms job
REWARM_S = 0.1


# --------------------------------------------------------------------------- data
def load_data(data_dir, n=N_IMAGES):
    """(X (n, 1, 28, 28) float32, y int64, source string)."""
    try:
        X, y = R.load_mnist(data_dir)
        X, y = R.stratified_first(X, y, n)
        return X, y, "MNIST test set (stratified first 6000)"
    except (FileNotFoundError, OSError, ValueError):
        X, y = synthetic_mnist(n)
        return X, y, "synthetic 28x28 (MNIST files not found)"


def have_torch():
    try:
        import pytorch_metric_learning  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------- jobs
def make_jobs(args, X, torch_ok):
    """{name: (torch_fn or None, mantissa_fn)}, each fn runs the job once."""
    from mantissa_embed import Embedder, engine, losses, miners, models
    from mantissa_embed.layers import Conv2D, MaxPool2D

    engine.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    jobs = {}
    T = F = pml_l = pml_m = None
    if torch_ok:
        import torch
        import torch.nn.functional as F
        from pytorch_metric_learning import losses as pml_l, miners as pml_m

        T = torch
        torch.set_num_threads(args.threads)

    def want(name):
        return not args.jobs or any(name.startswith(j) for j in args.jobs)

    n = args.gemm_n
    name = f"sgemm {n}x{n}x{n}"
    if want("sgemm"):
        A = rng.standard_normal((n, n)).astype(np.float32)
        B = rng.standard_normal((n, n)).astype(np.float32)
        C = np.empty((n, n), np.float32)
        tf = None
        if T is not None:
            At, Bt, Ct = T.from_numpy(A), T.from_numpy(B), T.from_numpy(np.empty_like(C))
            tf = lambda: T.matmul(At, Bt, out=Ct)  # noqa: E731
        jobs[name] = (tf, lambda A=A, B=B, C=C: engine.sgemm(A, B, C))

    if want("conv2d"):
        x = rng.standard_normal((64, 8, 14, 14)).astype(np.float32)
        conv = Conv2D(16, 3, pad=1, act="relu")
        conv.build((8, 14, 14), np.random.default_rng(0))
        dy = rng.standard_normal((64, 16, 14, 14)).astype(np.float32)

        def m_conv(conv=conv, x=x, dy=dy):
            conv.forward(x)
            conv.backward(dy)

        tf = None
        if T is not None:
            tconv = T.nn.Conv2d(8, 16, 3, padding=1)

            def tf(x=x, dyt=T.from_numpy(dy)):
                xt = T.from_numpy(x).requires_grad_(True)
                F.relu(tconv(xt)).backward(dyt)

        jobs["conv2d fwd+bwd 64x8x14x14"] = (tf, m_conv)

    if want("maxpool"):
        x = rng.standard_normal((64, 8, 28, 28)).astype(np.float32)
        pool = MaxPool2D(2)
        pool.build((8, 28, 28), np.random.default_rng(0))
        dy = rng.standard_normal((64, 8, 14, 14)).astype(np.float32)

        def m_pool(pool=pool, x=x, dy=dy):
            pool.forward(x)
            pool.backward(dy)

        tf = None
        if T is not None:

            def tf(x=x, dyt=T.from_numpy(dy)):
                xt = T.from_numpy(x).requires_grad_(True)
                F.max_pool2d(xt, 2).backward(dyt)

        jobs["maxpool fwd+bwd 64x8x28x28"] = (tf, m_pool)

    e, lab = make_embeddings(args.loss_n, 128)
    for key, ours, theirs in (
        ("TripletMarginLoss", losses.TripletMarginLoss(), pml_l and pml_l.TripletMarginLoss()),
        ("ContrastiveLoss", losses.ContrastiveLoss(), pml_l and pml_l.ContrastiveLoss()),
    ):
        if not want(key):
            continue
        tf = None
        if theirs is not None:
            labt = T.from_numpy(lab)

            def tf(theirs=theirs):
                xt = T.from_numpy(e).requires_grad_(True)
                theirs(xt, labt).backward()

        jobs[f"{key} N={args.loss_n}"] = (tf, lambda ours=ours: ours(e, lab))

    if want("semihard"):
        ours = miners.TripletMarginMiner(margin=0.2, type_of_triplets="semihard")
        tf = None
        if pml_m is not None:
            theirs = pml_m.TripletMarginMiner(margin=0.2, type_of_triplets="semihard")
            et, labt = T.from_numpy(e), T.from_numpy(lab)
            tf = lambda: theirs(et, labt)  # noqa: E731
        jobs[f"semihard miner N={args.loss_n}"] = (tf, lambda: ours(e, lab))

    if want("embed") or want("retrieve"):
        y_small = np.arange(640) % 10
        emb = Embedder(models.small_cnn_embedder(embed_dim=16), loss="triplet", seed=0)
        emb.fit(X[:640], y_small, epochs=1)
        tmodel = None
        if T is not None:
            T.manual_seed(0)
            tmodel = R.small_cnn_embedder(16).eval()
        if want("embed"):
            tf = None
            if tmodel is not None:
                tf = lambda: R.embed(tmodel, X, batch_size=256)  # noqa: E731
            jobs[f"embed {len(X)}"] = (tf, lambda: emb.embed(X, batch_size=256))
        if want("retrieve"):
            G = rng.standard_normal((args.gallery, 16)).astype(np.float32)
            G /= np.linalg.norm(G, axis=1, keepdims=True)
            Q = X[:1000]
            tf = None
            if tmodel is not None:
                Gt = T.from_numpy(G)

                def tf():
                    with T.no_grad():
                        q = F.normalize(tmodel(T.from_numpy(Q)), dim=1)
                        for s in range(0, q.shape[0], 100):
                            T.cdist(q[s : s + 100], Gt).topk(10, dim=1, largest=False)

            jobs[f"retrieve 1000 x {args.gallery}"] = (tf, lambda: emb.retrieve(Q, G, k=10))
    return jobs


# --------------------------------------------------------------------------- fit (subprocess)
def peak_rss_mb():
    """Peak resident set size of this process in MB: ``VmHWM`` of /proc/self/status (reset at
    exec, unlike ``ru_maxrss``, which keeps the RSS of the forking parent), else ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / (1024.0 * 1024.0) if sys.platform == "darwin" else kb / 1024.0


FIT_JOBS = ("semihard", "default")
FIT_SIDES = ("torch", "mantissa", "plain")


def child_fit(side, seed, threads, data_dir, job="semihard", epochs=3):
    """Runs in a subprocess: ``epochs`` timed epochs of ``job`` (FIT_JOBS) after the untimed setup
    and warm-up (module docstring), prints a JSON line {epochs: [seconds...], setup_s, warmup_s,
    maxrss_mb, loss}. ``side`` "plain": ``plain_torch_epoch`` (one timed epoch)."""
    t_setup = time.perf_counter()
    X, y, _ = load_data(data_dir)
    m = R.default_m(64, len(np.unique(y)))
    if side == "plain":
        dt, loss, setup_s, warm_s = plain_torch_epoch(X, y, seed, threads, job, m)
        times = [dt]
    elif side == "torch":
        import torch

        torch.set_num_threads(threads)
        torch.manual_seed(seed)
        sampler = {"sampler": "mperclass", "m": m} if job == "semihard" else {"sampler": "random"}
        recipe = R.Recipe(
            loss="triplet",
            margin=MARGIN,
            miner="semihard",
            momentum=0.0,
            epochs=epochs,
            batch_size=64,
            lr=0.05,
            **sampler,
        )
        trainer = R.Trainer(R.small_cnn_embedder(16), X, y, recipe, seed=seed)  # imports PML, builds SGD
        t_warm = time.perf_counter()
        setup_s = t_warm - t_setup
        trainer.warm_up()
        warm_s = time.perf_counter() - t_warm
        times, loss = FT.torch_epochs(trainer, epochs)
    else:
        import mantissa_embed
        from mantissa_embed import Embedder, models

        mantissa_embed.set_num_threads(threads)
        if job == "semihard":
            emb = Embedder(
                models.small_cnn_embedder(embed_dim=16),
                loss="triplet",
                margin=MARGIN,
                miner="semihard",
                seed=seed,
                m_per_class=m,
                optimizer="sgd",
                momentum=0.0,
            )
            kw = {"lr": 0.05, "augment": None, "schedule": None}
        else:
            emb = Embedder(models.small_cnn_embedder(embed_dim=16), loss="triplet", seed=seed)
            kw = {}
        setup_s = time.perf_counter() - t_setup
        # the warm-up fit on one batch is inside mantissa_epochs; its time is the first fit's share
        t = time.perf_counter()
        times = FT.mantissa_epochs(emb, X, y, epochs, batch_size=64, **kw)
        warm_s = time.perf_counter() - t - sum(times)
        loss = float(emb.history_["loss"][-1])
    print(
        json.dumps(
            {
                "epochs": times,
                "setup_s": setup_s,
                "warmup_s": warm_s,
                "maxrss_mb": peak_rss_mb(),
                "loss": float(loss),
            }
        )
    )


def plain_torch_epoch(X, y, seed, threads, job, m):
    """The reference check: a plain torch loop written out here, not ``_torch_reference``'s
    training code. The model, PML's loss and miner and ``torch.optim.SGD`` are built before the
    clock, one untimed step runs on each batch size of the epoch, then one epoch is timed.
    Returns (epoch seconds, its mean loss, setup seconds, warm-up seconds)."""
    t0 = time.perf_counter()
    import torch
    from pytorch_metric_learning import losses, miners
    from torch import nn

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 7 * 7, 64),
        nn.ReLU(),
        nn.Linear(64, 16),
    )
    loss_fn = losses.TripletMarginLoss(margin=MARGIN)
    miner = miners.TripletMarginMiner(margin=MARGIN, type_of_triplets="semihard")
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.0)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    sampler, mm = ("mperclass", m) if job == "semihard" else ("random", None)
    model.train()

    def step(idx):
        idx = torch.from_numpy(idx)
        xb, yb = Xt[idx], yt[idx]
        emb = model(xb)
        loss = loss_fn(emb, yb, miner(emb, yb))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    t1 = time.perf_counter()
    warm = R.batch_indices(y, 64, np.random.default_rng(seed + 1), sampler, mm)
    for n in sorted({len(b) for b in warm}, reverse=True):  # 64, and the random sampler's last 48
        step(warm[0][:n])
    rng = np.random.default_rng(seed)
    t2 = time.perf_counter()
    losses_ = [step(idx) for idx in R.batch_indices(y, 64, rng, sampler, mm)]
    dt = time.perf_counter() - t2
    return dt, float(np.mean(losses_)), t1 - t0, t2 - t1


def run_child(side, seed, args, job="semihard"):
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        side,
        "--seed",
        str(seed),
        "--threads",
        str(args.threads),
        "--fit-job",
        job,
        "--fit-epochs",
        str(args.fit_epochs),
    ]
    if args.data_dir:
        cmd += ["--data-dir", args.data_dir]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"{side} fit failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- main
def _fmt(v, unit="ms"):
    if v is None:
        return "n/a"
    return f"{v:.1f}" if unit == "MB" else (f"{v:.3f}" if v < 10 else f"{v:.1f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data-dir", default=None)
    p.add_argument(
        "--jobs",
        nargs="*",
        default=None,
        help="prefixes of the job names to run (sgemm conv2d maxpool TripletMarginLoss "
        "ContrastiveLoss semihard embed retrieve fit); default all",
    )
    p.add_argument("--no-fit", action="store_true", help="skip the fit subprocesses")
    p.add_argument(
        "--fit-epochs",
        type=int,
        default=3,
        help="timed epochs per fit child, after the untimed warm-up (default 3, at least 2: "
        "the first is checked against the later ones)",
    )
    p.add_argument(
        "--no-plain-check",
        action="store_true",
        help="skip the plain torch loop run next to the fit jobs (and its 15%% agreement check)",
    )
    p.add_argument(
        "--steady-tol",
        type=float,
        default=FT.STEADY_TOL,
        help="the first timed epoch may be this much slower than the later ones (default 0.25)",
    )
    p.add_argument(
        "--plain-tol",
        type=float,
        default=FT.PLAIN_TOL,
        help="allowed relative difference between the torch side's epoch and the plain loop's (default 0.15)",
    )
    p.add_argument(
        "--busy-neighbour",
        action="store_true",
        help="keep one core busy with a spinning process (pinned to the last CPU) during "
        "the timed rounds, as another program on a laptop would",
    )
    p.add_argument(
        "--settle",
        type=float,
        default=0.2,
        help="seconds of sleep before each timed job (default 0.2), so that the other "
        "library's idle worker threads have stopped spinning",
    )
    p.add_argument("--gemm-n", type=int, default=1024)
    p.add_argument("--loss-n", type=int, default=1024)
    p.add_argument("--gallery", type=int, default=100_000)
    p.add_argument("--child", choices=FIT_SIDES, help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--fit-job", choices=FIT_JOBS, default="semihard", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child_fit(args.child, args.seed, args.threads, args.data_dir, args.fit_job, args.fit_epochs)
        return 0
    if args.fit_epochs < 2:
        p.error("--fit-epochs must be at least 2 (the first timed epoch is checked against the later ones)")

    import mantissa_embed
    from mantissa_embed import engine

    torch_ok = have_torch()
    X, _, source = load_data(args.data_dir)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average at start {os.getloadavg()[0]:.2f}"
    )
    vers = f"mantissa_embed {mantissa_embed.__version__} (gemm kernel {engine.gemm_kernel_name()})"
    if torch_ok:
        import pytorch_metric_learning
        import torch

        vers += f", torch {torch.__version__}, pytorch-metric-learning {pytorch_metric_learning.__version__}"
    else:
        print("SKIPPED torch side: torch / pytorch-metric-learning not installed (mantissa side only)")
    print(f"versions: {vers}, numpy {np.__version__}, python {platform.python_version()}")
    print(f"threads={args.threads} repeats={args.repeats} data: {source}")
    print(describe(args.threads))

    jobs = make_jobs(args, X, torch_ok)
    times = {k: ([], []) for k in jobs}
    short = {}  # (job, side) -> True when a call is short enough to be re-warmed before timing
    for k, (tf, mf) in jobs.items():  # warm-up
        for side, fn in ((0, tf), (1, mf)):
            if fn is not None:
                t = time.perf_counter()
                fn()
                short[k, side] = time.perf_counter() - t < REWARM_S
    do_fit = not args.no_fit and (not args.jobs or any("fit".startswith(j) or j == "fit" for j in args.jobs))
    fit = {(job, side): [] for job in FIT_JOBS for side in FIT_SIDES}
    with busy_neighbour(args.busy_neighbour):
        _rounds(args, jobs, times, short, do_fit, fit, torch_ok)
    return report(args, times, do_fit, fit)


def _rounds(args, jobs, times, short, do_fit, fit, torch_ok):
    """The timed rounds: every job once per side per round, torch first (the fit jobs: torch,
    mantissa, then the plain torch loop, each in its own process)."""
    if args.busy_neighbour:
        print("busy neighbour: one process spinning on the last CPU during the timed rounds")
    for r in range(args.repeats):
        for k, (tf, mf) in jobs.items():
            if tf is not None:
                time.sleep(args.settle)
                if short[k, 0]:
                    tf()
                t = time.perf_counter()
                tf()
                times[k][0].append((time.perf_counter() - t) * 1e3)
            time.sleep(args.settle)
            if short[k, 1]:
                mf()
            t = time.perf_counter()
            mf()
            times[k][1].append((time.perf_counter() - t) * 1e3)
        if do_fit:
            for job in FIT_JOBS:
                if torch_ok:
                    fit[job, "torch"].append(run_child("torch", r, args, job))
                fit[job, "mantissa"].append(run_child("mantissa", r, args, job))
                if torch_ok and not args.no_plain_check:
                    fit[job, "plain"].append(run_child("plain", r, args, job))
        print(f"  round {r + 1}/{args.repeats} done", file=sys.stderr, flush=True)


def report(args, times, do_fit, fit):
    """The table of medians, ratios and minimums (and the fit rows)."""
    med = lambda v: statistics.median(v) if v else None  # noqa: E731
    hdr = (
        f"{'job':<30} | {'torch+PML median':>16} | {'mantissa median':>15} | {'ratio torch/mantissa':>20} "
        f"| {'torch min':>9} | {'mantissa min':>12}"
    )
    print(hdr)
    print("-" * len(hdr))
    for k, (tt, mt) in times.items():
        a, b = med(tt), med(mt)
        ratio = f"{a / b:.2f}x" if a is not None else "n/a"
        print(
            f"{k + ' (ms)':<30} | {_fmt(a):>16} | {_fmt(b):>15} | {ratio:>20} "
            f"| {_fmt(min(tt) if tt else None):>9} | {_fmt(min(mt)):>12}"
        )
    checks = []
    if do_fit:
        for job in FIT_JOBS:
            ts = [x * 1e3 for d in fit[job, "torch"] for x in d["epochs"]]
            ms = [x * 1e3 for d in fit[job, "mantissa"] for x in d["epochs"]]
            a, b = med(ts), med(ms)
            ratio = f"{a / b:.2f}x" if a is not None else "n/a"
            print(
                f"{f'fit {job} job, 1 epoch (ms)':<30} | {_fmt(a):>16} | {_fmt(b):>15} | {ratio:>20} "
                f"| {_fmt(min(ts) if ts else None):>9} | {_fmt(min(ms)):>12}"
            )
        rt = med([d["maxrss_mb"] for d in fit["semihard", "torch"]])
        rm = med([d["maxrss_mb"] for d in fit["semihard", "mantissa"]])
        ratio = f"{rt / rm:.2f}x" if rt is not None else "n/a"
        print(
            f"{'fit peak RSS, semihard (MB)':<30} | {_fmt(rt, 'MB'):>16} | {_fmt(rm, 'MB'):>15} | {ratio:>20} |"
        )
        print(
            f"fit rows: median of {args.fit_epochs} timed epochs x {args.repeats} round(s) per side, each "
            "child's setup (imports, model, loss, miner, optimizer, data) and warm-up step untimed"
        )
        for job in FIT_JOBS:
            for side in ("torch", "mantissa"):
                runs = fit[job, side]
                if not runs:
                    continue
                print(
                    f"  {job:<8} {side:<8} setup {med([d['setup_s'] for d in runs]):.2f} s, warm-up "
                    f"{med([d['warmup_s'] for d in runs]) * 1e3:.0f} ms (untimed); epochs of each round (ms): "
                    + "; ".join(" ".join(f"{x * 1e3:.0f}" for x in d["epochs"]) for d in runs)
                )
                checks.append(
                    FT.check_steady(f"fit {job} job, {side}", [d["epochs"] for d in runs], args.steady_tol)
                )
        for job in FIT_JOBS:
            plain, tside = fit[job, "plain"], fit[job, "torch"]
            if plain and tside:
                p_med = med([d["epochs"][0] for d in plain])
                t_med = med([x for d in tside for x in d["epochs"]])
                print(
                    f"plain torch loop (inline, optimizer built before timing), fit {job} job: "
                    f"{p_med * 1e3:.1f} ms per epoch (median of {len(plain)}), torch side {t_med * 1e3:.1f} ms, "
                    f"torch side / plain {t_med / p_med:.2f}; fit ratio against the plain loop "
                    f"{p_med * 1e3 / med([x * 1e3 for d in fit[job, 'mantissa'] for x in d['epochs']]):.2f}x"
                )
                checks.append(
                    FT.check_agree(
                        f"fit {job} job, torch side vs plain torch loop", t_med, p_med, args.plain_tol
                    )
                )
        for job in FIT_JOBS:
            lt = med([d["loss"] for d in fit[job, "torch"]])
            lm = med([d["loss"] for d in fit[job, "mantissa"]])
            print(
                f"last-epoch mean loss of the {job} job (sanity): torch {lt if lt is None else round(lt, 4)}, "
                f"mantissa {round(lm, 4)}"
            )
    busy = os.getloadavg()[0] > (os.cpu_count() or 1)
    print(
        f"load average at end {os.getloadavg()[0]:.2f} "
        f"({'WARNING: busy machine, timings unreliable' if busy and not args.busy_neighbour else 'ok'})"
    )
    return FT.finish(checks) if checks else 0


if __name__ == "__main__":
    sys.exit(main())
