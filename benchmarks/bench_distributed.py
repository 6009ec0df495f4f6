"""Exact search of a gallery too large for one process: mantissa_embed.distributed on Dask.

A LocalCluster of ``--workers`` worker processes (1 engine thread and 1 Dask thread each)
generates a gallery of ``--n`` random unit vectors of ``--dim`` dimensions chunk by chunk on the
workers (seeded; it never exists whole in one process), persists it there, builds a
``ShardedIndex`` on it, and times ``--queries`` queries (k = ``--k``) through ``knn`` and
through the ``ShardedIndex``. It reports queries/s, each worker's peak resident memory, and
checks ``--check`` queries against a float64 numpy brute force computed chunk by chunk on the
workers.

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


def _brute_chunk(block, Q, k, offset):
    X = np.asarray(block, np.float64)
    d = np.stack([np.sqrt(((X - q) ** 2).sum(1)) for q in Q.astype(np.float64)])  # one query at a time
    kk = min(k, block.shape[0])
    idx = np.argsort(d, axis=1, kind="stable")[:, :kk]
    return idx + offset, np.take_along_axis(d, idx, axis=1)


def _peak_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


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
        chunks = ((args.chunk,) * (nblk - 1) + (args.n - args.chunk * (nblk - 1),),)
        t = time.perf_counter()
        G = client.persist(da.map_blocks(_unit_chunk, 0, dtype=np.float32, chunks=(chunks[0], (args.dim,))))
        wait(G)
        print(
            f"gallery: {args.n:,} x {args.dim} float32 ({args.n * args.dim * 4 / 2**30:.2f} GiB) in {nblk} chunks, "
            f"generated on the workers in {time.perf_counter() - t:.1f} s"
        )
        rng = np.random.default_rng(1)
        Q = rng.standard_normal((args.queries, args.dim)).astype(np.float32)
        Q /= np.linalg.norm(Q, axis=1, keepdims=True)
        t = time.perf_counter()
        sharded = med.ShardedIndex(G, dtype=args.dtype, client=client)
        wait(sharded.shards)
        print(f"ShardedIndex ({args.dtype}) built in {time.perf_counter() - t:.1f} s")
        for name, fn in (
            ("knn", lambda: med.knn(Q, G, args.k, client=client)),
            ("ShardedIndex.search", lambda: sharded.search(Q, args.k)),
        ):
            fn()  # warm-up
            ts = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                idx, dist = fn()
                ts.append(time.perf_counter() - t)
            best = min(ts)
            print(
                f"{name}: {args.queries} queries, k={args.k}: median {np.median(ts):.2f} s, "
                f"{args.queries / np.median(ts):.0f} queries/s (best {args.queries / best:.0f})"
            )
        # a sample against a float64 brute force, chunk by chunk on the workers
        Qc = Q[: args.check]
        offsets = np.concatenate([[0], np.cumsum(G.chunks[0])])
        parts = [
            dask.delayed(_brute_chunk)(b, Qc, args.k, int(offsets[i]))
            for i, b in enumerate(G.to_delayed().ravel())
        ]
        res = client.compute(parts, sync=True)
        bi = np.concatenate([r[0] for r in res], axis=1)
        bd = np.concatenate([r[1] for r in res], axis=1)
        order = np.lexsort((bi, bd), axis=1)[:, : args.k]
        bi = np.take_along_axis(bi, order, axis=1)
        bd = np.take_along_axis(bd, order, axis=1)
        i_knn, d_knn = med.knn(Qc, G, args.k, client=client)
        print(
            f"check, {args.check} queries against the float64 brute force: ids equal "
            f"{np.array_equal(i_knn, bi)}, max |distance difference| {np.abs(d_knn - bd).max():.2e}"
        )
        rss = client.run(_peak_rss_mb)
        print("peak RSS per worker (MB): " + ", ".join(f"{v:.0f}" for v in rss.values()))
    finally:
        client.close()
        cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
