"""Exact k-NN throughput and peak extra memory: mantissa's engine vs faiss IndexFlatL2.

    python benchmarks/bench_knn_faiss.py                       # the default case (~3-5 min)
    python benchmarks/bench_knn_faiss.py --n 1000 --m 100000   # a quick run

Both sides search the same seeded random float32 arrays (standard normal) for the exact
``k`` nearest neighbours in squared Euclidean distance with 2 threads. Each side runs in its
own subprocess; the peak resident memory of the search is read from ``/proc/self/status``
(``VmHWM``, which sees C allocations, unlike tracemalloc) after resetting it through
``/proc/self/clear_refs`` once the arrays exist (when that file is not writable the
difference to the peak before the search is reported, an upper bound). faiss's figure includes
its own copy of the references (``IndexFlatL2.add``), which is part of using it; the search
alone is reported too. Needs faiss-cpu (``pip install 'mantissa-embed[faiss]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def _vm(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # kB -> bytes
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _data(n, m, dim, seed):
    rng = np.random.default_rng(seed)
    ref = rng.standard_normal((m, dim), dtype=np.float32)
    qry = rng.standard_normal((n, dim), dtype=np.float32)
    return qry, ref


def _child(args):
    qry, ref = _data(args.n, args.m, args.dim, args.seed)
    if args.side == "mantissa":
        from mantissa_embed import engine
        from mantissa_embed.evaluation.knn import knn

        engine.set_num_threads(args.threads)
        knn(qry[:64], ref[:20000], args.k, metric="sqeuclidean")  # warm-up (page-in, pools)

        def run():
            return knn(qry, ref, args.k, metric="sqeuclidean")[0], None
    else:
        import faiss

        faiss.omp_set_num_threads(args.threads)
        warm = faiss.IndexFlatL2(args.dim)
        warm.add(ref[:20000])
        warm.search(qry[:64], args.k)
        del warm

        def run():
            index = faiss.IndexFlatL2(args.dim)
            index.add(ref)
            t = time.perf_counter()
            rss0 = _vm("VmRSS")
            _, ids = index.search(qry, args.k)
            return ids, (time.perf_counter() - t, rss0)

    base_rss = _vm("VmRSS")
    exact_reset = _reset_peak()
    base_peak = base_rss if exact_reset else _vm("VmHWM")
    t0 = time.perf_counter()
    idx, extra = run()
    seconds = time.perf_counter() - t0
    peak = _vm("VmHWM")
    out = {"side": args.side, "seconds": seconds, "extra_bytes": peak - base_peak, "exact_peak": exact_reset}
    if extra is not None:  # faiss: the search without building the index
        out["search_seconds"] = extra[0]
        out["search_extra_bytes"] = peak - extra[1]
    np.save(args.out, np.asarray(idx, dtype=np.int64))
    print(json.dumps(out))


def _run_side(side, threads, args, tmp):
    out = os.path.join(tmp, f"{side}{threads}.npy")
    cmd = [sys.executable, __file__, "--side", side, "--out", out, f"--threads={threads}"] + [
        f"--{a}={getattr(args, a)}" for a in ("n", "m", "dim", "k", "seed")
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{side} run failed")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["idx"] = np.load(out)
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000, help="queries")
    p.add_argument("--m", type=int, default=1_000_000, help="references")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--threads", default="2", help="thread counts, comma-separated (e.g. 1,2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--side", choices=["mantissa", "faiss"], help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.side:
        args.threads = int(args.threads)
        _child(args)
        return 0

    threads = [int(t) for t in str(args.threads).split(",")]
    mb = 1024 * 1024
    input_mb = (args.n + args.m) * args.dim * 4 / mb
    print(
        f"exact {args.k}-NN: {args.n} queries x {args.m} references, dim {args.dim}, float32 "
        f"(inputs: {input_mb:.0f} MB, not counted); load average before: {os.getloadavg()[0]:.2f}"
    )
    print(f"{'backend':<30}{'threads':>8}{'seconds':>10}{'queries/s':>12}{'peak extra MB':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        for t in threads:
            mres = _run_side("mantissa", t, args, tmp)
            fres = _run_side("faiss", t, args, tmp)
            rows = [
                ("mantissa knn (engine)", mres["seconds"], mres["extra_bytes"]),
                ("faiss IndexFlatL2 add+search", fres["seconds"], fres["extra_bytes"]),
                ("faiss search only", fres["search_seconds"], fres["search_extra_bytes"]),
            ]
            for name, sec, extra in rows:
                print(f"{name:<30}{t:>8}{sec:>10.2f}{args.n / sec:>12.0f}{extra / mb:>15.1f}")
            ratio = fres["search_seconds"] / mres["seconds"]
            agree = float(np.mean(mres["idx"] == fres["idx"]))
            print(
                f"  {t} thread(s): throughput mantissa / faiss search = {ratio:.2f}x (target >= 0.8x); "
                f"mantissa peak extra {mres['extra_bytes'] / mb:.0f} MB (target < 1024 MB); "
                f"identical neighbours {agree:.4%}"
            )
            if not mres["exact_peak"]:
                print("  (/proc/self/clear_refs not writable: peak figures are upper bounds)")
    print(
        f"load average after: {os.getloadavg()[0]:.2f} (other work on the 2 cores slows multi-threaded runs)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
