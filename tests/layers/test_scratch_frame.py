"""``scratch_frame``: the per-thread last-in first-out scratch the layers' kernel workspaces
and per-call gradients come from."""

import threading

import numpy as np

from mantissa_embed._workspace import scratch_frame


def test_frames_nest_and_reuse_memory_after_they_end():
    with scratch_frame() as f:
        f.take(1024)  # the stack holds at least this much from here on: no growth below
    with scratch_frame() as f:
        a = f.take(10)
        with scratch_frame() as g:
            b = g.take(5)
            assert not np.shares_memory(a, b)
            assert b.ctypes.data - a.ctypes.data == 64  # 10 floats rounded up to 16
        with scratch_frame() as g:
            c = g.take(5)
            assert c.ctypes.data == b.ctypes.data  # the ended frame's memory is reused
    with scratch_frame() as f:
        assert f.take(3).ctypes.data == a.ctypes.data


def test_growth_keeps_the_arrays_already_handed_out():
    with scratch_frame() as f:
        a = f.take(7)
        a[:] = np.arange(7)
        big = f.take(1 << 22)  # more than the stack holds: new memory
        big[:] = -1
        np.testing.assert_array_equal(a, np.arange(7))
        assert not np.shares_memory(a, big) and big.size == 1 << 22 and big.dtype == np.float32


def test_each_thread_has_its_own_stack():
    start, errors = threading.Barrier(2), []

    def work(v):
        try:
            with scratch_frame() as f:
                a = f.take(1000)
                start.wait()
                for _ in range(200):
                    a[:] = v
                    with scratch_frame() as g:
                        g.take(500)[:] = -v
                    if not (a == v).all():
                        errors.append(v)
        except Exception as e:  # reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(v,)) for v in (1.0, 2.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_failing_block_releases_its_frame():
    with scratch_frame() as f:
        mark = f.take(1).ctypes.data
    try:
        with scratch_frame() as f:
            f.take(100)
            raise KeyError
    except KeyError:
        pass
    with scratch_frame() as f:
        assert f.take(1).ctypes.data == mark
