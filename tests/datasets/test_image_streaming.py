"""``datasets._stream``: batches decoded on a thread pool with a bounded prefetch ring. In
order, bitwise the same for any thread count; an error in one decode thread while others are in
flight raises in the caller naming the file; a stream closed half way (or failing) leaves no
thread behind."""

import threading
import time

import numpy as np
import pytest

from mantissa_embed.datasets import ImageFileError, ImageFolder
from mantissa_embed.datasets._stream import eval_batches, stream_batches


def _threads_settle(baseline, timeout=5.0):
    end = time.monotonic() + timeout
    while threading.active_count() > baseline and time.monotonic() < end:
        time.sleep(0.01)
    return threading.active_count()


@pytest.fixture
def big_tree(tmp_path, write_image):
    root = tmp_path / "big"
    for c in range(4):
        for i in range(6):
            write_image(root / f"c{c}" / f"{i}.png", size=(24, 20), seed=c * 10 + i)
    return root


@pytest.mark.parametrize(
    "num_workers, prefetch, batch", [(1, 1, 5), (4, 2, 5), (8, 3, 2), (3, 1, 24), (2, 4, 1)]
)
def test_eval_stream_in_order_equals_getitem(big_tree, num_workers, prefetch, batch):
    ds = ImageFolder(big_tree, size=8, num_workers=num_workers, prefetch=prefetch)
    ref = np.stack([ds[i] for i in range(len(ds))])
    got, starts = [], []
    for idx, xb in eval_batches(ds, batch):
        starts.append(int(idx[0]))
        got.append(xb.copy())  # xb is a ring-buffer view, valid until the next batch
    np.testing.assert_array_equal(np.concatenate(got), ref)
    assert starts == list(range(0, len(ds), batch))


def test_ring_buffers_are_reused_and_bounded(big_tree):
    ds = ImageFolder(big_tree, size=8, num_workers=2, prefetch=2)
    bases = {xb.__array_interface__["data"][0] for _, xb in eval_batches(ds, 3)}
    assert len(bases) == ds.prefetch + 1  # 8 batches through 3 buffers


def test_closing_a_stream_half_way_leaves_no_thread(big_tree):
    ds = ImageFolder(big_tree, size=8, num_workers=4, prefetch=3)
    baseline = threading.active_count()
    gen = eval_batches(ds, 2)
    next(gen)
    next(gen)
    assert threading.active_count() > baseline
    gen.close()
    assert _threads_settle(baseline) == baseline
    for _, _ in zip(range(3), eval_batches(ds, 2)):  # abandoned by a for loop, then garbage collected
        pass
    assert _threads_settle(baseline) == baseline


def test_error_in_one_thread_while_others_in_flight(big_tree, monkeypatch):
    ds = ImageFolder(big_tree, size=8, num_workers=4, prefetch=2)
    bad = 9
    real = type(ds).load_into
    started = []

    def load_into(self, i, out, params=None, train=False):
        started.append(i)
        if i == bad:
            raise ImageFileError(self.paths[i], "cannot decode: injected")
        time.sleep(0.01)  # the others are still decoding when the bad one fails
        real(self, i, out, params, train)

    monkeypatch.setattr(type(ds), "load_into", load_into)
    baseline = threading.active_count()
    seen = []
    with pytest.raises(ImageFileError, match="injected") as e:
        for idx, _ in eval_batches(ds, 4):
            seen.append(int(idx[0]))
    assert e.value.path == ds.paths[bad]
    assert seen == [0, 4]  # batches before the bad one's were given
    assert _threads_settle(baseline) == baseline


def test_other_exceptions_propagate_unchanged(big_tree, monkeypatch):
    ds = ImageFolder(big_tree, size=8, num_workers=2)

    def boom(self, i, out, params=None, train=False):
        raise MemoryError("no room")

    monkeypatch.setattr(type(ds), "load_into", boom)
    baseline = threading.active_count()
    with pytest.raises(MemoryError):
        list(eval_batches(ds, 5))
    assert _threads_settle(baseline) == baseline


def test_batch_larger_than_batch_size_is_refused(big_tree):
    ds = ImageFolder(big_tree, size=8, num_workers=2)
    baseline = threading.active_count()
    with pytest.raises(ValueError, match="larger than batch_size"):
        list(stream_batches(ds, [(np.arange(3), None)], 2))
    assert _threads_settle(baseline) == baseline


def test_empty_dataset_streams_nothing(big_tree):
    ds = ImageFolder(big_tree, size=8).subset([])
    assert list(eval_batches(ds, 4)) == []
    assert ds.load_all().shape == (0, 3, 8, 8)


def test_a_failing_parameter_draw_stops_the_stream(big_tree):
    ds = ImageFolder(big_tree, size=8, num_workers=3, prefetch=2)
    baseline = threading.active_count()

    def draws():
        yield np.arange(4), [None] * 4
        raise RuntimeError("draw failed")

    def train_params():
        rng = np.random.default_rng(0)
        for idx, _ in draws():
            yield idx, [ds.train_transform.draw(rng, ds.source_size(int(i))) for i in idx]

    with pytest.raises(RuntimeError, match="draw failed"):
        list(stream_batches(ds, train_params(), 4))
    assert _threads_settle(baseline) == baseline
