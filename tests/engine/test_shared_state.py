"""The engine's process-wide state (thread count, forced SGEMM kernel) exists once: every family
module links the one shared engine library instead of a static copy of its own."""

import ctypes
import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

import mantissa_embed._engine as engine_pkg
from mantissa_embed import engine

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")

MODULES = [
    importlib.import_module(f"mantissa_embed._engine.{m.name}")
    for m in pkgutil.iter_modules(engine_pkg.__path__)
    if m.name.startswith("_")
]
STATE = ("me_get_num_threads", "me_set_num_threads", "me_gemm_kernel_id", "me_set_gemm_kernel")


def _engine_library():
    paths = {
        line.split()[-1]
        for line in Path("/proc/self/maps").read_text().splitlines()
        if "libmantissa_engine" in line
    }
    assert len(paths) == 1, paths
    return ctypes.CDLL(paths.pop())


def _address(lib, name):
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value


def test_every_family_module_is_loaded():
    assert len(MODULES) >= 14


@pytest.mark.parametrize("module", MODULES, ids=[m.__name__.rpartition(".")[2] for m in MODULES])
def test_module_resolves_the_state_to_the_shared_library(module):
    lib = _engine_library()
    mod = ctypes.CDLL(module.__file__)  # already loaded: the same handle, searched with its dependencies
    for name in STATE:
        assert _address(mod, name) == _address(lib, name), name


def test_setters_reach_the_shared_library():
    lib = _engine_library()
    lib.me_get_num_threads.restype = ctypes.c_int
    lib.me_gemm_kernel_id.restype = ctypes.c_int
    threads = engine.get_num_threads()
    previous = engine._set_gemm_kernel("generic")
    try:
        engine.set_num_threads(3)
        assert lib.me_get_num_threads() == 3
        assert lib.me_gemm_kernel_id() == 0
    finally:
        engine.set_num_threads(threads)
        engine._set_gemm_kernel(previous)
    assert lib.me_get_num_threads() == threads
