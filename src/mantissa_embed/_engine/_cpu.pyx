"""Thread count, CPU features and the SGEMM micro-kernel choice (``src/engine_c/cpu.c``): process-wide
state of the engine's one shared library, seen by every kernel module."""
from mantissa_embed._checks.cpu import check_num_threads, env_num_threads

from mantissa_embed._engine._cengine cimport (me_cpu_features, me_gemm_kernel_name, me_get_num_threads,
                                             me_set_gemm_kernel, me_set_num_threads)


__all__ = ['get_num_threads', 'set_num_threads', 'gemm_kernel_name', 'cpu_features']


def get_num_threads():
    """Number of threads the engine uses (int >= 1).

    Default: the processors available to the process, or the environment variable
    ``MANTISSA_EMBED_NUM_THREADS`` read at first use (an invalid value gives a RuntimeWarning
    at import and is ignored); ``set_num_threads`` changes it.
    """
    return me_get_num_threads()


def set_num_threads(n):
    """Set the number of threads of the C engine (process-wide; OpenMP inside each kernel).

    n : int >= 1, overriding the default (``MANTISSA_EMBED_NUM_THREADS`` when it holds a positive
    integer, read at the engine's first use, else the processors available to the process). For a
    fixed thread count results are bitwise reproducible; ``sgemm`` is moreover bitwise identical
    for every count. numpy's and other libraries' thread pools are not touched. Raises TypeError
    when ``n`` is not an int (bool rejected), ValueError when ``n < 1`` or ``n > 4096``.
    """
    global _generation
    me_set_num_threads(<int>check_num_threads(n))
    _generation += 1


# the engine reads MANTISSA_EMBED_NUM_THREADS at its first use and ignores an invalid value;
# checked here, at import, so that an invalid value gives a RuntimeWarning naming it
env_num_threads()

# how many times set_num_threads was called (the adaptive thread count adopts a new user count)
_generation = 0


def _adapt_num_threads(n):
    """set_num_threads for mantissa_embed.embedder._threads: the same, not counted as the user's choice."""
    me_set_num_threads(<int>check_num_threads(n))


def _num_threads_generation():
    return _generation


def gemm_kernel_name():
    """The SGEMM micro-kernel chosen at run time: ``'avx512'``, ``'avx2'`` or ``'generic'``.

    The best the CPU (and OS) supports, unless ``MANTISSA_EMBED_GEMM_KERNEL`` (read at first
    use) asks for a lower one.
    """
    return me_gemm_kernel_name().decode()


def cpu_features():
    """The CPU features the engine detected and may use.

    Returns
    -------
    dict
        ``{"avx2", "fma", "avx512f", "avx512vl", "f16c", "avx512bw", "avx512vnni", "avx512bf16"}``
        -> bool (cpuid, with the OS support of the YMM / ZMM register state checked by xgetbv).
    """
    cdef int f = me_cpu_features()
    return {"avx2": bool(f & 1), "fma": bool(f & 2), "avx512f": bool(f & 4), "avx512vl": bool(f & 8),
            "f16c": bool(f & 16), "avx512bw": bool(f & 32), "avx512vnni": bool(f & 64),
            "avx512bf16": bool(f & 128)}


def _set_gemm_kernel(name):
    """Force the SGEMM micro-kernel (tests and benchmarks); returns the previous name.

    Raises ``TypeError`` when ``name`` is not a str, ``ValueError`` for a name other than
    'generic', 'avx2', 'avx512', or for a kernel this CPU cannot run.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    previous = gemm_kernel_name()
    cdef bytes b = name.encode()
    cdef int rc = me_set_gemm_kernel(b)
    if rc == -1:
        raise ValueError(f"name must be one of 'generic', 'avx2', 'avx512', got {name!r}")
    if rc == -2:
        raise ValueError(f"the {name!r} SGEMM kernel is not supported by this CPU "
                         f"(features: {cpu_features()})")
    return previous
