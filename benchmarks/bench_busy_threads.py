"""fit and embed with and without a busy neighbour, on 1 and 2 threads, adaptive threads on / off.

The job is compare_torch.py's semihard fit job (``small_cnn_embedder(16)``, one epoch over
6,000 MNIST images, batch 64, SGD, no augmentation), then ``embed`` of the 6,000 images. Every
round runs each combination once: idle, then with one process spinning on the last CPU
(``_machine.busy_neighbour``); within each, 1 and 2 engine threads with
``MANTISSA_EMBED_ADAPTIVE_THREADS`` 1 and 0. Prints the medians over the rounds. Needs the MNIST
files (``--data-dir`` / ``$MANTISSA_EMBED_DATA``), else seeded synthetic digits.

    python benchmarks/bench_busy_threads.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _torch_reference as R  # noqa: E402
import mantissa_embed as me  # noqa: E402
from _machine import busy_neighbour, describe  # noqa: E402
from compare_torch import MARGIN, load_data  # noqa: E402
from mantissa_embed import Embedder, models  # noqa: E402


def one(X, y, m, threads):
    me.set_num_threads(threads)
    emb = Embedder(
        models.small_cnn_embedder(embed_dim=16),
        loss="triplet",
        margin=MARGIN,
        miner="semihard",
        seed=0,
        m_per_class=m,
        optimizer="sgd",
        momentum=0.0,
    )
    t = time.perf_counter()
    emb.fit(X, y, epochs=1, batch_size=64, lr=0.05, augment=None, schedule=None)
    fit_s = time.perf_counter() - t
    t = time.perf_counter()
    emb.embed(X)
    return fit_s, time.perf_counter() - t


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--data-dir", default=None)
    args = p.parse_args(argv)
    X, y, source = load_data(args.data_dir)
    m = R.default_m(64, len(np.unique(y)))
    print(describe(2))
    print(f"data: {source}")
    one(X, y, m, 2)  # warm-up
    res = {}
    for _ in range(args.rounds):
        for busy in (False, True):
            with busy_neighbour(busy):
                time.sleep(0.3)
                for threads in (1, 2):
                    for adaptive in ("1", "0"):
                        os.environ["MANTISSA_EMBED_ADAPTIVE_THREADS"] = adaptive
                        res.setdefault((busy, threads, adaptive), []).append(one(X, y, m, threads))
    print(f"{'machine':<14} {'threads':>7} {'adaptive':>8} {'fit s':>8} {'embed ms':>9}")
    for (busy, threads, adaptive), v in sorted(res.items()):
        v = np.array(v)
        print(
            f"{'one core busy' if busy else 'idle':<14} {threads:>7} {'on' if adaptive == '1' else 'off':>8} "
            f"{np.median(v[:, 0]):>8.3f} {np.median(v[:, 1]) * 1e3:>9.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
