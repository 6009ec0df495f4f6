"""Index.add: many small adds against one large add of the same vectors.

    python benchmarks/bench_index_add.py                       # 2,000 and 10,000 adds of 100
    python benchmarks/bench_index_add.py --dtypes float32 --repeats 3

For each dtype and each total (200,000 and 1,000,000 vectors of 64 floats, seeded standard
normal, generated before the clock), it times building a fresh Index by one ``add`` of all the
vectors and by ``add`` calls of ``--batch`` vectors, alternating the two within each repeat, and
prints the medians and their ratio (many small adds / one add). The encoding work is the same on
both sides, so the ratio is the cost of growing the storage. The engine runs on ``--threads``.
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


def _one(x, dtype):
    t = time.perf_counter()
    _idx = Index(x.shape[1], dtype=dtype).add(x)  # freed after the clock, as _many's index
    return time.perf_counter() - t


def _many(x, dtype, batch):
    t = time.perf_counter()
    idx = Index(x.shape[1], dtype=dtype)
    for s in range(0, x.shape[0], batch):
        idx.add(x[s : s + batch])
    return time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--totals", type=int, nargs="+", default=[200_000, 1_000_000])
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float16", "bfloat16", "int8"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    engine.set_num_threads(args.threads)
    print(f"CPU: {cpu_model()}; {args.threads} engine thread(s); dim {args.dim}; adds of {args.batch}")
    print(f"{'dtype':>9} {'vectors':>10} {'adds':>7} {'one add (s)':>12} {'many adds (s)':>14} {'ratio':>7}")
    for total in args.totals:
        x = np.random.default_rng(0).standard_normal((total, args.dim)).astype(np.float32)
        for dtype in args.dtypes:
            _one(x[:1000], dtype), _many(x[:1000], dtype, args.batch)  # warm-up, untimed
            one, many = [], []
            for _ in range(args.repeats):  # alternated
                one.append(_one(x, dtype))
                many.append(_many(x, dtype, args.batch))
            a, b = float(np.median(one)), float(np.median(many))
            print(f"{dtype:>9} {total:>10} {total // args.batch:>7} {a:>12.4f} {b:>14.4f} {b / a:>6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
