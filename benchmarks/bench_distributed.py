"""Exact search of a gallery too large for one process: mantissa_embed.distributed on Dask.

A LocalCluster of ``--workers`` worker processes (1 engine thread and 1 Dask thread each)
generates a gallery of ``--n`` random unit vectors of ``--dim`` dimensions chunk by chunk on the
workers (seeded; it never exists whole in one process) and runs the two documented patterns one
after the other, each holding the gallery once:

1. ``knn`` on the persisted gallery: ``--queries`` queries (k = ``--k``) timed, ``--check`` of
   them against a float64 numpy brute force computed chunk by chunk on the workers; then the
   persisted gallery is released.
2. ``ShardedIndex`` built from the lazy (regenerated, not persisted) gallery, so each worker ends
   up with its shards only; the same queries timed through ``ShardedIndex.search`` and checked
   against the same brute force.

It reports queries/s and each worker's peak resident memory (``VmHWM``) in each pattern (the
peak is reset between them through ``/proc/self/clear_refs``).

    python benchmarks/bench_distributed.py --n 10000000 --dim 64 --workers 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _unit_chunk(seed, block_info=None):
    info = block_info[None]
    rows, dim = info["chunk-shape"]
    rng = np.random.default_rng([seed, info["chunk-location"][0]])
    x = rng.standard_normal((rows, dim), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


_BRUTE_ROWS = 32768  # rows of one float64 slice of the brute force (bounded scratch)


def _brute_chunk(block, Q, k, offset):
    """The k nearest rows of ``block`` for each query by float64 numpy, slice by slice."""
    Qd = Q.astype(np.float64)
    best_i = np.empty((len(Q), 0), np.int64)
    best_d = np.empty((len(Q), 0))
    for s in range(0, block.shape[0], _BRUTE_ROWS):
        X = np.asarray(block[s : s + _BRUTE_ROWS], np.float64)
        d = np.stack([np.sqrt(((X - q) ** 2).sum(1)) for q in Qd])  # one query at a time
        i = np.broadcast_to(np.arange(offset + s, offset + s + len(X)), d.shape)
        best_i, best_d = _top(np.concatenate([best_i, i], 1), np.concatenate([best_d, d], 1), k)
    return best_i, best_d


def _top(i, d, k):
    order = np.lexsort((i, d), axis=1)[:, :k]
    return np.take_along_axis(i, order, axis=1), np.take_along_axis(d, order, axis=1)


def _peak_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak():
    with open("/proc/self/clear_refs", "w") as f:  # "5": VmHWM := the current RSS
        f.write("5")


def _time(name, fn, args):
    fn()  # warm-up
    ts = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    print(
        f"{name}: {args.queries} queries, k={args.k}: median {np.median(ts):.2f} s, "
        f"{args.queries / np.median(ts):.1f} queries/s (best {args.queries / min(ts):.1f})"
    )
    return out


def _check(name, idx, dist, bi, bd):
    print(
        f"{name}, {len(bi)} queries against the float64 brute force: ids equal "
        f"{np.array_equal(idx, bi)}, max |distance difference| {np.abs(dist - bd).max():.2e}"
    )


def _peaks(client, label):
    rss = client.run(_peak_rss_mb)
    print(f"peak RSS per worker, {label} (MB): " + ", ".join(f"{v:.0f}" for v in rss.values()))
    return list(rss.values())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000_000)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--chunk", type=int, default=500_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--check", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dtype", default="float32")
    args = p.parse_args(argv)

    import dask
    import dask.array as da

    from _machine import describe
    from distributed import Client, LocalCluster, wait
    from mantissa_embed import distributed as med

    print(describe(args.workers))
    cluster = LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        memory_limit=0,
        env={"MANTISSA_EMBED_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
    )
    client = Client(cluster)
    try:
        nblk = -(-args.n // args.chunk)
        chunks = ((args.chunk,) * (nblk - 1) + (args.n - args.chunk * (nblk - 1),), (args.dim,))

        def gallery():  # lazy: each chunk generated (seeded) on a worker when a task needs it
            return da.map_blocks(_unit_chunk, 0, dtype=np.float32, chunks=chunks)

        rng = np.random.default_rng(1)
        Q = rng.standard_normal((args.queries, args.dim)).astype(np.float32)
        Q /= np.linalg.norm(Q, axis=1, keepdims=True)
        Qc = Q[: args.check]
        base = _peaks(client, "at start")

        # 1. knn on the persisted gallery
        t = time.perf_counter()
        G = client.persist(gallery())
        wait(G)
        print(
            f"gallery: {args.n:,} x {args.dim} float32 ({args.n * args.dim * 4 / 2**30:.2f} GiB) in {nblk} "
            f"chunks, generated and persisted on the workers in {time.perf_counter() - t:.1f} s"
        )
        _time("knn", lambda G=G: med.knn(Q, G, args.k, client=client), args)
        offsets = np.concatenate([[0], np.cumsum(G.chunks[0])])
        parts = [
            dask.delayed(_brute_chunk)(b, Qc, args.k, int(offsets[i]))
            for i, b in enumerate(G.to_delayed().ravel())
        ]
        res = client.compute(parts, sync=True)
        bi, bd = _top(np.concatenate([r[0] for r in res], 1), np.concatenate([r[1] for r in res], 1), args.k)
        _check("knn check", *med.knn(Qc, G, args.k, client=client), bi, bd)
        peak_knn = _peaks(client, "persisted gallery + knn")
        del G, parts, res  # release the persisted gallery
        deadline = time.monotonic() + 60
        while sum(len(v) for v in client.has_what().values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        client.run(_reset_peak)

        # 2. a ShardedIndex built from the lazy gallery: the chunks are released once added
        t = time.perf_counter()
        sharded = med.ShardedIndex(gallery(), dtype=args.dtype, client=client)
        wait(sharded.shards)
        print(f"ShardedIndex ({args.dtype}) built from the lazy gallery in {time.perf_counter() - t:.1f} s")
        _time("ShardedIndex.search", lambda: sharded.search(Q, args.k), args)
        _check("ShardedIndex check", *sharded.search(Qc, args.k), bi, bd)
        peak_index = _peaks(client, "ShardedIndex")
        print(
            "peak RSS per worker, either pattern (MB): "
            + ", ".join(f"{max(a, b):.0f}" for a, b in zip(peak_knn, peak_index))
            + f" (at start: {', '.join(f'{v:.0f}' for v in base)})"
        )
    finally:
        client.close()
        cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
