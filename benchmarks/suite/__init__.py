"""The asv benchmark suite of mantissa-embed (``asv.conf.json`` at the repository root points here).

Run from the repository root after ``pip install .``::

    asv machine --yes                         # once per machine
    asv run --python=same --quick             # every benchmark once, against the installed package
    asv run --python=same --quick -b Sgemm    # a subset (regular expression on the names)

Modules: ``bench_gemm`` (SGEMM), ``bench_layers`` (conv2d / max pooling forward and backward),
``bench_losses`` (every loss and miner the package exports, discovered at import),
``bench_embedder`` (one ``Embedder.fit`` epoch, ``embed``, ``retrieve`` on a 100k gallery).
Each has ``time_*`` (wall time) and ``peakmem_*`` (peak resident memory of the benchmark
process) variants. ``common`` holds the seeded synthetic data.
"""
