"""Index.search per storage dtype against faiss's index of the same bytes per vector.

    python benchmarks/bench_index_faiss.py                  # 1M x 64, 2 batches of 256, k = 10
    python benchmarks/bench_index_faiss.py --n 100000       # a quick run

The gallery is ``--n`` seeded random unit vectors of ``--dim`` floats (no cluster structure: the
nearest neighbours of a query are close together, the hard case for recall), the queries
``--batches`` batches of ``--batch`` other such vectors; both are generated, and every index is
built, before the clock. Pairs: the float32 ``Index`` and ``faiss.IndexFlatL2``; float16 and
``IndexScalarQuantizer(QT_fp16)``; bfloat16 and ``QT_bf16``; int8 (64 bytes + a 4-byte scale per
vector) and ``QT_8bit`` (64 bytes, per-dimension ranges trained on the gallery). Each search
runs once untimed; then ``--repeats`` rounds time every pair, its two sides one after the other
and in alternating order, batch by batch. It prints queries/s (medians), each dtype's ratio to
the float32 Index and to its faiss pair, and recall@10: the share of faiss ``IndexFlatL2``'s ids
(the exact float32 result) that each index returns; for int8 also with ``rerank=4 k`` (an Index
with ``keep_float32=True``). Both libraries run ``--threads`` threads (``pip install ".[faiss]"``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _machine import cpu_model  # noqa: E402
from mantissa_embed import engine  # noqa: E402
from mantissa_embed.index import Index  # noqa: E402


def _unit(rng, n, d):
    x = rng.standard_normal((n, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def _timed(search, batches):
    t = time.perf_counter()
    out = [search(b) for b in batches]
    return time.perf_counter() - t, np.concatenate(out)


def _recall(ids, truth):
    k = truth.shape[1]
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(ids, truth)]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--batches", type=int, default=2)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float16", "bfloat16", "int8"])
    args = ap.parse_args(argv)
    import faiss

    faiss.omp_set_num_threads(args.threads)
    engine.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    G = _unit(rng, args.n, args.dim)
    Q = _unit(rng, args.batch * args.batches, args.dim)
    batches = [Q[i : i + args.batch] for i in range(0, Q.shape[0], args.batch)]
    k = args.k
    sq = {"float16": "QT_fp16", "bfloat16": "QT_bf16", "int8": "QT_8bit"}
    sides = {}
    for dt in args.dtypes:
        ix = Index(args.dim, dtype=dt).add(G)
        if dt == "float32":
            fx = faiss.IndexFlatL2(args.dim)
        else:
            fx = faiss.IndexScalarQuantizer(args.dim, getattr(faiss.ScalarQuantizer, sq[dt]), faiss.METRIC_L2)
            fx.train(G)
        fx.add(G)
        sides[dt] = (
            lambda b, ix=ix: ix.search(b, k)[0],
            lambda b, fx=fx: fx.search(b, k)[1],
            faiss.IndexFlatL2 if dt == "float32" else sq[dt],
        )
    rerank = None
    if "int8" in args.dtypes:
        rx = Index(args.dim, dtype="int8", keep_float32=True).add(G)
        rerank = lambda b: rx.search(b, k, rerank=4 * k)[0]  # noqa: E731
    for ours, theirs, _ in sides.values():  # warm-up, untimed
        ours(batches[0]), theirs(batches[0])
    times = {dt: ([], []) for dt in sides}
    results = {}
    for r in range(args.repeats):
        for dt, (ours, theirs, _) in sides.items():
            order = [(0, ours), (1, theirs)] if r % 2 == 0 else [(1, theirs), (0, ours)]
            for side, fn in order:
                t, ids = _timed(fn, batches)
                times[dt][side].append(t)
                results[(dt, side)] = ids
    truth = results[("float32", 1)] if "float32" in sides else None
    nq = Q.shape[0]
    print(
        f"CPU: {cpu_model()}; {args.threads} threads; {args.n:,} x {args.dim} random unit vectors; "
        f"{args.batches} batches of {args.batch} queries; k = {k}; medians of {args.repeats} rounds"
    )
    f32 = nq / np.median(times["float32"][0]) if "float32" in sides else float("nan")
    print(
        f"{'dtype':>9} {'Index q/s':>10} {'x float32':>10} {'faiss':>16} {'faiss q/s':>10} {'x faiss':>8} {'recall@10':>10}"
    )
    for dt, (_, _, fname) in sides.items():
        ours_qps = nq / np.median(times[dt][0])
        faiss_qps = nq / np.median(times[dt][1])
        rec = _recall(results[(dt, 0)], truth) if truth is not None else float("nan")
        name = fname if isinstance(fname, str) else "IndexFlatL2"
        print(
            f"{dt:>9} {ours_qps:10.0f} {ours_qps / f32:10.2f} {name:>16} {faiss_qps:10.0f} "
            f"{ours_qps / faiss_qps:8.2f} {rec:10.4f}"
        )
    if rerank is not None and truth is not None:
        ids = np.concatenate([rerank(b) for b in batches])
        print(f"int8 with rerank={4 * k} (keep_float32=True): recall@10 {_recall(ids, truth):.4f}")
    if truth is not None:
        for dt in sides:
            if dt != "float32":
                print(f"faiss {sides[dt][2]}: recall@10 {_recall(results[(dt, 1)], truth):.4f}")


if __name__ == "__main__":
    main()
