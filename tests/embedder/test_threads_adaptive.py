"""The busy-aware thread count of fit / embed (mantissa_embed.embedder._threads): the rule, the user's
count restored, the switch off, and fit / embed results that do not depend on the switching."""

import numpy as np
import pytest

import mantissa_embed as me
from mantissa_embed import Embedder, models
from mantissa_embed.embedder import _threads


@pytest.fixture
def two_threads(monkeypatch):
    old = me.get_num_threads()
    me.set_num_threads(2)
    monkeypatch.setenv("MANTISSA_EMBED_ADAPTIVE_THREADS", "1")
    monkeypatch.setitem(_threads._state, "last", None)
    monkeypatch.setitem(_threads._state, "choice", None)
    yield
    me.set_num_threads(old)


@pytest.mark.parametrize(
    "user, ncpu, others, want",
    [
        (2, 2, 0.0, 2),
        (2, 2, 0.4, 2),
        (2, 2, 0.6, 1),
        (2, 2, 1.0, 1),
        (2, 2, 2.0, 1),
        (8, 4, 0.0, 4),
        (3, 8, 0.0, 3),
        (4, 4, 1.2, 3),
        (1, 2, 0.0, 1),
    ],
)
def test_choose(user, ncpu, others, want):
    assert _threads.choose(user, ncpu, others) == want


def test_others_cores_subtracts_this_process():
    # 1 s of wall time, 1.7 CPU-seconds busy, 0.6 of them ours: 1.1 cores for the others
    assert _threads.others_cores((0.0, 10.0, 5.0, 2), (1.0, 11.7, 5.6, 2)) == pytest.approx(1.1)
    assert _threads.others_cores((0.0, 10.0, 5.0, 2), (1.0, 10.2, 5.6, 2)) == 0.0  # never negative
    assert _threads.others_cores((1.0, 0, 0, 2), (1.0, 5, 0, 2)) == 0.0


def test_sample_reads_proc_stat():
    s = _threads._sample()
    if s is None:
        pytest.skip("no /proc/stat on this platform")
    t, busy, ours, ncpu = s
    assert t > 0 and busy >= 0 and ours >= 0 and ncpu >= 1


def _fake_load(monkeypatch, others):
    """_sample returns a new window each call in which the other processes used ``others`` cores."""
    clock = {"t": 1000.0, "busy": 0.0}

    def sample():
        clock["t"] += 1.0
        clock["busy"] += others
        return clock["t"], clock["busy"], 0.0, 2

    monkeypatch.setattr(_threads, "_sample", sample)
    monkeypatch.setattr(_threads, "_clock", lambda: clock["t"] + 1.0)  # every step sees a full window


def test_a_busy_core_takes_one_thread_and_the_count_is_restored(two_threads, monkeypatch):
    _fake_load(monkeypatch, 1.0)
    seen = []
    with _threads.AdaptiveThreads() as a:
        for _ in range(3):
            a.step()
            seen.append(me.get_num_threads())
        with _threads.AdaptiveThreads() as b:  # nested (validation's embed inside fit)
            b.step()
            seen.append(me.get_num_threads())
        assert me.get_num_threads() == 1
    assert seen == [2, 1, 1, 1]
    assert me.get_num_threads() == 2


def test_idle_machine_keeps_the_users_count(two_threads, monkeypatch):
    _fake_load(monkeypatch, 0.1)
    with _threads.AdaptiveThreads() as a:
        for _ in range(3):
            a.step()
            assert me.get_num_threads() == 2


@pytest.mark.parametrize("value", ["0", "off", "false"])
def test_switched_off_by_the_environment(two_threads, monkeypatch, value):
    monkeypatch.setenv("MANTISSA_EMBED_ADAPTIVE_THREADS", value)
    _fake_load(monkeypatch, 2.0)
    with _threads.AdaptiveThreads() as a:
        for _ in range(3):
            a.step()
            assert me.get_num_threads() == 2


def test_fit_and_embed_do_not_depend_on_the_switching(two_threads, monkeypatch):
    """Thread counts alternating 1, 2, 1, ... batch after batch give the bits of a fixed count."""
    rng = np.random.default_rng(0)
    X = rng.random((96, 1, 12, 12), dtype=np.float32)
    y = np.repeat(np.arange(6), 16)

    def run():
        emb = Embedder(models.small_cnn_embedder(8), seed=1)
        emb.fit(X, y, epochs=2, batch_size=32)
        return emb.embed(X, batch_size=16)

    monkeypatch.setenv("MANTISSA_EMBED_ADAPTIVE_THREADS", "0")
    fixed = run()
    monkeypatch.setenv("MANTISSA_EMBED_ADAPTIVE_THREADS", "1")
    counts = []
    turn = iter(range(10**6))
    monkeypatch.setattr(_threads, "choose", lambda user, ncpu, others: 1 + next(turn) % 2)
    orig = _threads.engine._adapt_num_threads

    def spy(n):
        counts.append(n)
        orig(n)

    monkeypatch.setattr(_threads.engine, "_adapt_num_threads", spy)
    _fake_load(monkeypatch, 0.0)
    switched = run()
    assert 1 in counts and 2 in counts
    np.testing.assert_array_equal(switched, fixed)
    assert me.get_num_threads() == 2


@pytest.mark.parametrize("adaptive", ["1", "0"])
@pytest.mark.parametrize("others", [0.0, 1.0])
def test_a_count_set_during_fit_is_kept(two_threads, monkeypatch, adaptive, others):
    """set_num_threads from a callback (or another thread) is the user's new choice: neither
    the next batch nor the end of fit undoes it. Found by a review."""
    monkeypatch.setenv("MANTISSA_EMBED_ADAPTIVE_THREADS", adaptive)
    _fake_load(monkeypatch, others)
    rng = np.random.default_rng(0)
    X = rng.random((64, 1, 12, 12), dtype=np.float32)
    y = np.repeat(np.arange(4), 16)
    seen = []

    def cb(emb, epoch, hist):
        seen.append(me.get_num_threads())
        me.set_num_threads(1)

    Embedder(models.small_cnn_embedder(8), seed=1).fit(X, y, epochs=3, batch_size=16, callbacks=[cb])
    assert me.get_num_threads() == 1
    assert seen[1:] == [1, 1]


def test_a_failing_hook_leaves_no_state(two_threads, monkeypatch):
    """A hook whose begin raises: every hook's end still runs and the adapter's state is
    cleared (a leaked context would pin later fits to the busy-machine count)."""
    from mantissa_embed.embedder import _hooks

    _fake_load(monkeypatch, 1.0)
    monkeypatch.setattr(_hooks.Profiler, "begin", lambda self: 1 / 0)
    rng = np.random.default_rng(0)
    X = rng.random((32, 1, 12, 12), dtype=np.float32)
    y = np.repeat(np.arange(2), 16)
    with pytest.raises(ZeroDivisionError):
        Embedder(models.small_cnn_embedder(8), seed=1).fit(X, y, epochs=1, batch_size=16, profile=True)
    assert _threads._state["active"] == 0 and me.get_num_threads() == 2


@pytest.mark.parametrize("value", ["2", "abc", ""])
def test_unknown_environment_values_warn(monkeypatch, value):
    monkeypatch.setenv("MANTISSA_EMBED_ADAPTIVE_THREADS", value)
    with pytest.warns(RuntimeWarning, match="MANTISSA_EMBED_ADAPTIVE_THREADS"):
        assert _threads.enabled()
