"""Regression tests of the bugs the C-boundary fuzz suite found, one per bug, on both backends
where the twin shares the check."""

import numpy as np
import pytest

from mantissa_embed import _reference as ref, engine

BACKENDS = [engine, ref]
LAB = np.array([0, 0, 1, 1])


def _sim():
    return np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)


@pytest.mark.parametrize("N, M", [(2**63, 0), (2**40, 2**40)])
def test_euclidean_workspace_size_of_huge_counts_raises_valueerror(N, M):
    # was OverflowError (2**63) or an int64 product wrapped to a wrong size (2**40 squared)
    with pytest.raises(ValueError, match="2\\*\\*56"):
        engine.euclidean_workspace_size(N, M, backward=True)


def test_zero_dim_input_keeps_its_shape():
    # as_numeric_array went through np.ascontiguousarray, which makes a 0-D array 1-D: a 0-D
    # float64 mask "did not match" a 0-D x
    out = engine.dropout_forward(np.array(3.0, np.float32), np.array(2.0))
    assert out.shape == () and out == 6.0
    assert engine.relu_forward(np.array(-1.5)).shape == ()


@pytest.mark.parametrize("mod", BACKENDS)
@pytest.mark.parametrize("num_bins", [10**12, 2**63])
def test_dsm_num_bins_beyond_limit_raises_before_allocating(mod, num_bins):
    # was MemoryError (29 TiB of per-anchor bins) or OverflowError
    with pytest.raises(ValueError, match="num_bins"):
        mod.dsm_triplet_hist(_sim(), LAB, LAB, True, -1.0, 0.1, num_bins, 0.1)


@pytest.mark.parametrize("mod", BACKENDS)
@pytest.mark.parametrize(
    "cdf, error",
    [
        (None, TypeError),
        ("abc", TypeError),
        ([[0.5]], ValueError),
        ([0.1, np.nan], ValueError),
        (np.zeros(0), ValueError),
    ],
)
def test_dsm_cdf_none_or_text_raises_naming_cdf(mod, cdf, error):
    # cdf=None gave a NaN loss, "abc" numpy's unnamed "could not convert string to float"
    with pytest.raises(error, match="cdf"):
        mod.dsm_triplet_loss(_sim(), LAB, LAB, True, -1.0, 0.1, cdf)


def test_dsm_nan_distance_stays_in_bounds():
    # a NaN distance made the C kernels cast NaN to int64 (undefined, an index of -2**63) and the
    # twin raise IndexError; now the bin is clipped and the NaN reaches the loss
    mat = _sim()
    mat[0, 1] = np.nan
    cdf = np.linspace(0.0, 1.0, 10)
    args = (mat, LAB, LAB, True, -1.0, 0.1)
    loss, by_bin = engine.dsm_triplet_loss(*args, cdf)
    tloss, tby_bin = ref.dsm_triplet_loss(*args, cdf)
    assert np.isnan(loss) and np.isnan(tloss)
    np.testing.assert_allclose(by_bin, tby_bin, rtol=1e-6)
    g_u = np.linspace(-1.0, 1.0, 10)
    d = engine.dsm_triplet_backward(*args, cdf, g_u, 1.0, 0.1)
    np.testing.assert_allclose(d, ref.dsm_triplet_backward(*args, cdf, g_u, 1.0, 0.1), rtol=1e-5, atol=1e-6)
    u, n = engine.dsm_triplet_hist(*args, 10, 0.1)
    tu, tn = ref.dsm_triplet_hist(*args, 10, 0.1)
    np.testing.assert_allclose(u, tu, rtol=1e-6)
    assert n == tn


@pytest.mark.parametrize("mod", BACKENDS)
@pytest.mark.parametrize(
    "kw, error, name",
    [
        ({"scale": None}, TypeError, "scale"),
        ({"scale": np.nan}, ValueError, "scale"),
        ({"scale": 1e39}, ValueError, "scale"),
        ({"grad_scale": "a"}, TypeError, "grad_scale"),
    ],
)
def test_softmax_xent_scales_are_checked(mod, kw, error, name):
    # scale / grad_scale went unchecked to C floats: NaN rows for nan or 1e39, Cython's unnamed
    # "must be real number, not NoneType"
    with pytest.raises(error, match=name):
        mod.softmax_xent_forward_backward(_sim(), LAB, **kw)


@pytest.mark.parametrize("mod", BACKENDS)
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda m: m.ntxent_all(_sim(), LAB, LAB, 1e-320), "temperature"),  # was a loss of 0.0
        (lambda m: m.supcon_all(_sim(), LAB, LAB, 1e-40), "temperature"),
        (lambda m: m.softmax_nll_forward(_sim(), LAB, LAB, scale=1e39), "scale"),  # was all-zero losses
        (lambda m: m.softmax_xent_rows_forward(_sim(), LAB, scale=-1e39), "scale"),
        (lambda m: m.triplet_loss_all(np.abs(_sim()), LAB, LAB, margin=1e39), "margin"),  # was inf
        (lambda m: m.contrastive_loss_all(np.abs(_sim()), LAB, LAB, pos_margin=1e39), "pos_margin"),
        (lambda m: m.triplet_margin_mine(_sim(), LAB, LAB, True, "all", 1e39, False), "margin"),
        (lambda m: m.pairw_rows_forward("circle", _sim(), LAB, LAB, params=(0.25, 1e39)), "gamma"),
    ],
)
def test_scalars_beyond_float32_raise_instead_of_silent_inf(mod, call, name):
    with pytest.raises(ValueError, match=name):
        call(mod)


@pytest.mark.parametrize("mod", BACKENDS)
@pytest.mark.parametrize("max_loss, error", [(None, TypeError), ("1", TypeError), (np.nan, ValueError)])
def test_max_loss_must_be_a_number(mod, max_loss, error):
    # float(max_loss) took "1" and NaN, and said nothing about max_loss for None
    with pytest.raises(error, match="max_loss"):
        mod.softmax_nll_forward(_sim(), LAB, LAB, max_loss=max_loss)


@pytest.mark.parametrize("mod", BACKENDS)
def test_miner_scalars_name_themselves(mod):
    # float(margin) / float(angle): "float() argument must be a string or a real number"
    with pytest.raises(TypeError, match="margin"):
        mod.triplet_margin_mine(_sim(), LAB, LAB, True, "all", None, False)
    with pytest.raises(TypeError, match="angle"):
        mod.angular_mine(_sim(), _sim(), LAB, LAB, True, "x")


@pytest.mark.parametrize("mod", BACKENDS)
def test_knn_huge_tiles_raise_before_allocating(mod):
    # the scratch is num_threads * min(tile_q, n) * min(tile_r, M) floats: 3.2 GB here
    x = np.zeros((20000, 1), np.float32)
    with pytest.raises(ValueError, match="tile_q \\* tile_r"):
        mod.knn_search(x, x, 1, tile_q=10**9, tile_r=10**9)


def _f32_over(ints, shape):
    """A float32 output of ``shape`` over the memory of the int64 array ``ints``."""
    return ints.view(np.uint8)[: 4 * int(np.prod(shape))].view(np.float32).reshape(shape)


@pytest.mark.parametrize("mod", BACKENDS)
def test_output_over_the_index_array_raises_instead_of_segfault(mod):
    # the gather wrote dsrc over index and then read dout[index[k]] at the overwritten, huge
    # index (a segfault); the scatter-add and softmax_xent_forward_backward likewise
    buf = np.zeros(8, np.int64)
    with pytest.raises(ValueError, match="dsrc must not share memory with index"):
        mod.scatter_add_backward(np.ones((4, 4), np.float32), buf[:4], _f32_over(buf, (4, 4)))
    with pytest.raises(ValueError, match="out must not share memory with index"):
        mod.scatter_add_forward(np.ones((4, 4), np.float32), buf[:4], _f32_over(buf, (4, 4)))
    big = np.zeros(64 * 64, np.int64)
    logits = np.ones((64, 64), np.float32)
    with pytest.raises(ValueError, match="dlogits must not share memory with labels"):
        mod.softmax_xent_forward_backward(logits, big[:64], dlogits=_f32_over(big, (64, 64)))
    with pytest.raises(ValueError, match="dx must not share memory with labels"):
        mod.p2sgrad_forward_backward(
            np.ones((64, 4), np.float32), np.ones((8, 4), np.float32), big[:64], dx=_f32_over(big, (64, 4))
        )


@pytest.mark.parametrize("mod", BACKENDS)
def test_ddist_over_the_pair_indices_raises(mod):
    # ddist written over a1 / a while the kernel still reads them as indices
    d = np.ones((8, 8), np.float32)
    buf = np.zeros(64, np.int64)
    z = np.zeros(0, np.int64)
    with pytest.raises(ValueError, match="ddist must not share memory with a1"):
        mod.contrastive_loss_pairs(d, buf[:16], np.zeros(16, np.int64), z, z, ddist=_f32_over(buf, (8, 8)))
    with pytest.raises(ValueError, match="ddist must not share memory with a"):
        mod.triplet_loss_triplets(
            d, buf[:4], np.ones(4, np.int64), np.full(4, 2, np.int64), ddist=_f32_over(buf, (8, 8))
        )
    with pytest.raises(ValueError, match="ddist must not share memory with weights"):
        w = np.ones((8, 8), np.float32)
        mod.contrastive_loss_all(d, np.zeros(8, np.int64), np.zeros(8, np.int64), weights=w, ddist=w)
    with pytest.raises(ValueError, match="dmat must not share memory with labels"):
        mod.pairw_rows_forward(
            "circle", d, buf[:8], np.zeros(8, np.int64), params=(0.25, 80.0), dmat=_f32_over(buf, (8, 8))
        )


@pytest.mark.parametrize("mod", BACKENDS)
@pytest.mark.parametrize("value", [None, "no", 1.0])
def test_flags_are_not_truth_values(mod, value):
    # bool(flag) took "no" as True and None as False
    sim = _sim()
    for call, name in [
        (lambda: mod.ntxent_all(sim, LAB, LAB, 0.1, grad=value), "grad"),
        (lambda: mod.supcon_all(sim, LAB, LAB, 0.1, exclude_self=value), "exclude_self"),
        (lambda: mod.softmax_nll_forward(sim, LAB, LAB, inverted=value), "inverted"),
        (lambda: mod.triplet_margin_mine(sim, LAB, LAB, True, "all", 0.1, value), "is_inverted"),
        (lambda: mod.dsm_triplet_hist(sim, LAB, LAB, value, -1.0, 0.1, 10, 0.1), "exclude_self"),
    ]:
        with pytest.raises(TypeError, match=name):
            call()


@pytest.mark.parametrize("value", [None, "no", 1.0])
def test_engine_only_flags_are_not_truth_values(value):
    a = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match="trans_a"):
        engine.sgemm(a, a, trans_a=value)
    with pytest.raises(TypeError, match="backward"):
        engine.euclidean_workspace_size(2, 2, backward=value)
