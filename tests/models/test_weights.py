"""mantissa_embed.models.weights: safetensors read/write with numpy only, load_weights/save_weights.

The F16/BF16/bad-input files are written byte by byte here (struct + json), independently of
``write_safetensors``; the ``safetensors`` package, when installed, is a second reader/writer;
torch (oracle, skipped without it) checks that a torch state_dict loads into the same net and
that ``save_weights`` loads back into torch with equal outputs.
"""

import json
import mmap
import os
import pickle
import re
import struct
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

from mantissa_embed import models
from mantissa_embed.models import weights as W
from mantissa_embed.parameter import Parameter


def _net(seed=0):
    net = models.cnn_embedder(embed_dim=8, widths=(4, 8), seed=seed)
    net.build((1, 28, 28))
    return net


def _trained_net(seed=0):
    """BatchNorm statistics away from their init (a training forward updates them)."""
    net = _net(seed)
    net.forward(np.random.default_rng(seed).standard_normal((3, 1, 28, 28)).astype(np.float32))
    return net


def _raw(path, header, buffer=b"", pad=True):
    """A safetensors file written by hand: the header dict as JSON (space padded), then ``buffer``."""
    text = json.dumps(header).encode() if not isinstance(header, bytes) else header
    if pad:
        text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + buffer)
    return path


def _entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": [begin, end]}


def _msg(path, key=None):
    """A pytest.raises match: the file's name and (when given) the key."""
    return re.escape(os.path.basename(path)) + (r".*" + re.escape(repr(key)) if key is not None else "")


# -- round trips ------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
def test_save_load_round_trip_is_bitwise(tmp_path, suffix):
    src, dst = _trained_net(0), _net(1)
    path = tmp_path / f"m{suffix}"
    assert W.save_weights(src, path) == str(path)
    report = W.load_weights(dst, path)
    names = W.state_names(src)
    assert report["loaded"] == names and report["missing"] == [] and report["unexpected"] == []
    assert report["ignored"] == [
        n.replace("running_mean", "num_batches_tracked") for n in names if n.endswith("running_mean")
    ]
    a, b = src.state_arrays(), dst.state_arrays()
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), k
    x = np.random.default_rng(5).standard_normal((2, 1, 28, 28)).astype(np.float32)
    assert np.array_equal(src.eval().forward(x), dst.eval().forward(x))


def test_state_names_are_the_parameters_then_the_buffers():
    net = _net()
    assert W.state_names(net) == list(net.state_arrays())


def test_save_weights_layout(tmp_path):
    net = _trained_net()
    path = W.save_weights(net, tmp_path / "m.safetensors")
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0 and raw[8:9] == b"{"
    header = json.loads(raw[8 : 8 + n])
    assert header["__metadata__"] == {"format": "pt"}
    assert header["1.num_batches_tracked"] == _entry("I64", [], 0, 8)
    assert header["0.weight"]["dtype"] == "F32"
    got = W.read_safetensors(path)
    assert got["1.num_batches_tracked"].dtype == np.int64 and got["1.num_batches_tracked"].shape == ()
    assert not [f for f in os.listdir(tmp_path) if f != "m.safetensors"]  # no temporary file left


def test_write_safetensors_header_and_metadata(tmp_path):
    tensors = {
        "a": np.arange(3, dtype=np.float32),
        "i": np.array([7, -1], np.int64),
        "t": np.arange(6, dtype=np.float32).reshape(2, 3).T,
        "s": np.float32(2.5) * np.ones((), np.float32),
        "e": np.zeros((0, 4), np.float32),
    }
    path = W.write_safetensors(tmp_path / "x.safetensors", tensors, metadata={"k": "v"})
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0 and raw[8 + n - 1 : 8 + n] in (b" ", b"}")
    header = json.loads(raw[8 : 8 + n])
    assert header["__metadata__"] == {"k": "v"}
    assert header["i"]["data_offsets"] == [0, 16]  # int64 first: 8-byte aligned
    got = W.read_safetensors(path)
    assert got.keys() == tensors.keys()
    for k, v in tensors.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape and np.array_equal(got[k], v), k


def test_write_safetensors_rejects(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(ValueError, match="'h'.*float64"):
        W.write_safetensors(path, {"h": np.zeros(2)})
    with pytest.raises(ValueError, match="__metadata__"):
        W.write_safetensors(path, {"__metadata__": np.zeros(2, np.float32)})
    with pytest.raises(TypeError, match="'l'"):
        W.write_safetensors(path, {"l": [1.0]})
    with pytest.raises(ValueError, match="metadata"):
        W.write_safetensors(path, {}, metadata={"k": 1})
    assert not os.listdir(tmp_path)


def test_an_existing_file_is_replaced_only_when_complete(tmp_path, monkeypatch):
    path = tmp_path / "x.safetensors"
    W.write_safetensors(path, {"a": np.ones(2, np.float32)})
    before = path.read_bytes()

    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError):
        W.write_safetensors(path, {"a": np.zeros(2, np.float32)})
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["x.safetensors"]


# -- reading --------------------------------------------------------------------------------------
def test_f16_and_bf16_are_read_as_float32(tmp_path):
    rng = np.random.default_rng(0)
    h = (rng.standard_normal((2, 3)) * 100).astype("<f2")
    f32 = (rng.standard_normal(5) * 1e3).astype(np.float32)
    f32[:3] = [np.inf, -0.0, 1e-40]
    bf = (f32.view("<u4") >> 16).astype("<u2")  # bfloat16 = the high half of a float32
    path = _raw(
        tmp_path / "h.safetensors",
        {
            "h": _entry("F16", h.shape, 0, 12),
            "b": _entry("BF16", bf.shape, 12, 22),
            "__metadata__": {"format": "pt"},
        },
        h.tobytes() + bf.tobytes(),
    )
    got = W.read_safetensors(path)
    assert list(got) == ["h", "b"]
    assert got["h"].dtype == np.float32 and np.array_equal(got["h"], h.astype(np.float32))
    expected = (bf.astype(np.uint32) << 16).view(np.float32)
    assert got["b"].dtype == np.float32 and got["b"].tobytes() == expected.tobytes()
    # truncation toward zero of float32 -> bf16: within one bf16 ulp (2**-7 relative)
    normal = np.isfinite(f32) & (np.abs(f32) >= np.finfo(np.float32).tiny)
    np.testing.assert_allclose(got["b"][normal], f32[normal], rtol=2**-7)
    assert np.isposinf(got["b"][0])


def test_f32_is_a_read_only_view_of_a_memory_map(tmp_path):
    a = np.arange(12, dtype="<f4").reshape(3, 4)
    path = _raw(tmp_path / "z.safetensors", {"a": _entry("F32", a.shape, 0, 48)}, a.tobytes())
    got = W.read_safetensors(path)["a"]
    assert np.array_equal(got, a) and not got.flags.writeable
    base = got
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.obj if isinstance(base, memoryview) else base.base
    assert isinstance(base, mmap.mmap)


def test_integer_entries_and_empty_and_scalar_shapes(tmp_path):
    path = _raw(
        tmp_path / "i.safetensors",
        {"n": _entry("I64", [], 0, 8), "e": _entry("F32", [0, 3], 8, 8), "u": _entry("U8", [2], 8, 10)},
        struct.pack("<q", 42) + b"\x01\x02",
    )
    got = W.read_safetensors(path)
    assert got["n"].shape == () and got["n"] == 42 and got["e"].shape == (0, 3) and list(got["u"]) == [1, 2]


def test_an_empty_header_is_an_empty_file(tmp_path):
    assert W.read_safetensors(_raw(tmp_path / "e.safetensors", {})) == {}


def test_safetensors_package_reads_ours_and_we_read_its(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    tensors = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "n": np.array(3, np.int64)}
    ours = W.write_safetensors(tmp_path / "ours.safetensors", tensors, metadata={"format": "pt"})
    back = st.load_file(ours)
    theirs = tmp_path / "theirs.safetensors"
    st.save_file({**tensors, "h": np.ones(3, np.float16)}, str(theirs))
    got = W.read_safetensors(theirs)
    for k, v in tensors.items():
        assert np.array_equal(back[k], v) and np.array_equal(got[k], v)
    assert got["h"].dtype == np.float32 and np.array_equal(got["h"], np.ones(3))


# -- bad files ------------------------------------------------------------------------------------
A = np.arange(4, dtype="<f4").tobytes()

BAD_FILES = {
    "out_of_bounds": ({"w": _entry("F32", [4], 0, 32)}, A, "'w'.*out of bounds"),
    "overlap": (
        {"v": _entry("F32", [2], 0, 8), "w": _entry("F32", [2], 4, 12)},
        A + A[:4],
        "'w'.*overlap entry 'v'",
    ),
    "gap": ({"v": _entry("F32", [1], 0, 4), "w": _entry("F32", [2], 8, 16)}, A, "'w'.*leave bytes"),
    "size_mismatch": ({"w": _entry("F32", [3], 0, 16)}, A, "'w'.*hold 16 bytes.*needs 12"),
    "unknown_dtype": ({"w": _entry("F31", [4], 0, 16)}, A, "'w'.*unknown dtype 'F31'"),
    "unsupported_dtype": ({"w": _entry("F8_E4M3", [16], 0, 16)}, A, "'w'.*F8_E4M3 is not supported"),
    "bad_shape": ({"w": _entry("F32", [-4], 0, 16)}, A, "'w'.*shape"),
    "float_shape": ({"w": {"dtype": "F32", "shape": [4.0], "data_offsets": [0, 16]}}, A, "'w'.*shape"),
    "reversed_offsets": ({"w": _entry("F32", [0], 16, 0)}, A, "'w'.*data_offsets"),
    "missing_field": ({"w": {"dtype": "F32", "shape": [4]}}, A, "'w'.*data_offsets"),
    "trailing_bytes": ({"w": _entry("F32", [3], 0, 12)}, A, "16 bytes, the entries cover 12.*'w'"),
    "truncated_data": ({"w": _entry("F32", [4], 0, 16)}, A[:10], "'w'.*out of bounds"),
    "bad_metadata": ({"__metadata__": {"k": 1}}, b"", "__metadata__"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_bad_files_are_value_errors_naming_file_and_key(tmp_path, case):
    header, buffer, message = BAD_FILES[case]
    path = _raw(tmp_path / f"bad_{case}.safetensors", header, buffer)
    with pytest.raises(ValueError, match=_msg(path) + ".*" + message):
        W.read_safetensors(path)


@pytest.mark.parametrize(
    "header, message",
    [
        (b"not json", "not UTF-8 JSON"),
        (b"\xff\xfe{}", "not UTF-8 JSON"),
        (b"[1, 2]", "JSON object, got list"),
        (b'{"w": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}, "w": {}}', "'w' twice"),
        (b"[" * 100000 + b"]" * 100000, "not UTF-8 JSON|JSON object"),
    ],
)
def test_bad_headers(tmp_path, header, message):
    path = _raw(tmp_path / "h.safetensors", header, b"\0" * 4)
    with pytest.raises(ValueError, match=_msg(path) + ".*(" + message + ")"):
        W.read_safetensors(path)


@pytest.mark.parametrize("content", [b"", b"\x10\0\0", b"\x10\0\0\0\0\0\0\0{}"])
def test_truncated_files(tmp_path, content):
    path = tmp_path / "t.safetensors"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=_msg(path) + ".*truncated"):
        W.read_safetensors(path)


def test_a_lying_header_length_fails_fast_without_allocating(tmp_path):
    path = tmp_path / "lie.safetensors"
    path.write_bytes(struct.pack("<Q", 10**12) + b'{"w": {}}')
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(ValueError, match=_msg(path) + ".*1000000000000.*larger than"):
            W.read_safetensors(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t0 < 1.0 and peak < 1 << 20


def test_a_lying_shape_allocates_nothing(tmp_path):
    path = _raw(tmp_path / "shape.safetensors", {"w": _entry("F32", [10**6, 10**6], 0, 16)}, A)
    with pytest.raises(ValueError, match=_msg(path, "w") + ".*needs 4000000000000"):
        W.read_safetensors(path)


class _Marker:
    """Unpickling this creates a file: the tests check that nothing is ever unpickled."""

    path = ""

    def __reduce__(self):
        return (open, (self.path, "w"))


def _pickle_bytes(tmp_path):
    marker = _Marker()
    marker.path = str(tmp_path / "UNPICKLED")
    return pickle.dumps({"w": marker}, protocol=2), tmp_path / "UNPICKLED"


@pytest.mark.parametrize("name", ["m.pth", "m.pt", "m.safetensors", "m.bin", "m.npz"])
def test_pickles_are_refused_with_the_conversion(tmp_path, name):
    data, marker = _pickle_bytes(tmp_path)
    path = tmp_path / name
    if name.endswith(".npz"):  # torch.save's zip format, named .npz
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", data)
    else:
        path.write_bytes(data)
    net = _net()
    for call in (lambda: W.read_safetensors(path), lambda: W.load_weights(net, path)):
        with pytest.raises(ValueError, match=_msg(path) + ".*never unpickles") as info:
            call()
        text = str(info.value)
        assert "from safetensors.torch import save_file" in text and f"torch.load('{name}'" in text
        assert "np.savez(" in text and "\n" not in text
    assert not marker.exists()


def test_a_torch_zip_checkpoint_is_refused(tmp_path):
    path = tmp_path / "resnet18-f37072fd.pth.tar"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    with pytest.raises(ValueError, match=_msg(path) + ".*never unpickles"):
        W.read_safetensors(path)


def test_read_safetensors_points_an_npz_to_load_weights(tmp_path):
    path = W.save_weights(_net(), tmp_path / "m.npz")
    with pytest.raises(ValueError, match=_msg(path) + ".*an .npz archive, not a safetensors file"):
        W.read_safetensors(path)


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 not a zip"])
def test_a_broken_npz_is_a_value_error(tmp_path, content):
    path = tmp_path / "b.npz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=_msg(path)):
        W.load_weights(_net(), path)


def test_save_weights_refuses_a_pickle_name(tmp_path):
    with pytest.raises(ValueError, match="m.pth"):
        W.save_weights(_net(), tmp_path / "m.pth")
    assert not os.listdir(tmp_path)


def test_npz_with_objects_is_refused_without_unpickling(tmp_path):
    data, marker = _pickle_bytes(tmp_path)
    path = tmp_path / "o.npz"
    state = {k: v for k, v in _net().state_arrays().items()}
    np.savez(path, **state, extra=np.array([object()], dtype=object))
    with pytest.raises(ValueError, match=_msg(path) + ".*'extra'.*pickle"):
        W.load_weights(_net(), path)
    assert not marker.exists()


# -- load_weights ---------------------------------------------------------------------------------
def _state(net):
    return {k: v.copy() for k, v in net.state_arrays().items()}


def _assert_unchanged(net, before):
    after = net.state_arrays()
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_strict_errors_name_the_key_and_change_nothing(tmp_path):
    net = _trained_net(0)
    state = _state(_trained_net(1))
    before = _state(net)
    cases = {
        "missing": ({k: v for k, v in state.items() if k != "3.weight"}, r"missing \['3.weight'\]"),
        "unexpected": ({**state, "layer9.weight": np.ones(2, np.float32)}, r"unexpected \['layer9.weight'\]"),
        "shape": (
            {**state, "1.bias": np.ones(5, np.float32)},
            r"'1.bias' has shape \(5,\) in the file, \(4,\) in the net",
        ),
    }
    for case, (tensors, message) in cases.items():
        path = W.write_safetensors(tmp_path / f"{case}.safetensors", tensors)
        with pytest.raises(ValueError, match=_msg(path) + ".*" + message):
            W.load_weights(net, path)
        _assert_unchanged(net, before)


@pytest.mark.parametrize("dtype, entry", [(np.float64, "F64"), (np.int32, "I32")])
def test_a_parameter_of_another_dtype_is_refused(tmp_path, dtype, entry):
    net = _net()
    before = _state(net)
    tensors = _state(_net(1))
    w = tensors.pop("3.weight")
    nbytes = w.size * np.dtype(dtype).itemsize
    path = W.write_safetensors(tmp_path / "d.safetensors", tensors)
    # append the entry by hand: write_safetensors writes float32 / int64 only
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header, buffer = json.loads(raw[8 : 8 + n]), raw[8 + n :]
    header["3.weight"] = _entry(entry, w.shape, len(buffer), len(buffer) + nbytes)
    _raw(tmp_path / "d.safetensors", header, buffer + w.astype(dtype).tobytes())
    for strict in (True, False):
        with pytest.raises(ValueError, match=_msg(path, "3.weight") + f".*dtype {entry}"):
            W.load_weights(net, path, strict=strict)
    _assert_unchanged(net, before)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
def test_non_finite_values_are_refused(tmp_path, bad, suffix):
    net = _net()
    before = _state(net)
    tensors = _state(_net(1))
    tensors["4.running_var"][1] = bad
    path = tmp_path / f"n{suffix}"
    if suffix == ".npz":
        np.savez(path, **tensors)
    else:
        W.write_safetensors(path, tensors)
    for strict in (True, False):
        with pytest.raises(ValueError, match=_msg(path, "4.running_var") + ".*NaN or Inf"):
            W.load_weights(net, path, strict=strict)
    _assert_unchanged(net, before)


def test_non_strict_loads_what_matches_and_reports_the_rest(tmp_path):
    net, src = _net(0), _trained_net(1)
    tensors = _state(src)
    del tensors["3.weight"]
    tensors["1.bias"] = np.ones(7, np.float32)
    tensors["extra.weight"] = np.ones(2, np.float32)
    tensors["fc.weight"] = np.ones((1000, 8), np.float32)
    tensors["1.num_batches_tracked"] = np.array(5, np.int64)
    path = W.write_safetensors(tmp_path / "p.safetensors", tensors)
    before = _state(net)
    with pytest.warns(UserWarning, match=r"missing \['3.weight'\].*unexpected \['extra.weight'\].*'1.bias'"):
        report = W.load_weights(net, path, strict=False)
    assert report["missing"] == ["3.weight"] and report["unexpected"] == ["extra.weight"]
    assert report["mismatched"] == {"1.bias": ((7,), (4,))}
    assert sorted(report["ignored"]) == ["1.num_batches_tracked", "fc.weight"]
    after = net.state_arrays()
    for k in W.state_names(net):
        expected = before[k] if k in ("3.weight", "1.bias") else tensors[k]
        assert np.array_equal(after[k], expected), k
    assert report["loaded"] == [k for k in W.state_names(net) if k not in ("3.weight", "1.bias")]


class _Named:
    """A net with torchvision-style names and an embedding head (the load_weights contract only)."""

    def __init__(self, rng):
        self.params = {
            "conv1.weight": Parameter(rng.standard_normal((4, 3, 3, 3))),
            "bn1.weight": Parameter(rng.standard_normal(4)),
            "bn1.bias": Parameter(rng.standard_normal(4)),
            "head.weight": Parameter(rng.standard_normal((2, 4))),
            "head.bias": Parameter(np.zeros(2)),
        }
        self.buffers = {
            "bn1.running_mean": np.zeros(4, np.float32),
            "bn1.running_var": np.ones(4, np.float32),
        }

    def named_parameters(self):
        return list(self.params.items())

    def named_buffers(self):
        return list(self.buffers.items())


def test_a_pretrained_file_without_head_loads_strictly_and_keeps_the_head(tmp_path):
    net, src = _Named(np.random.default_rng(0)), _Named(np.random.default_rng(1))
    state = {k: p.data for k, p in src.named_parameters()} | src.buffers
    state["bn1.running_var"] = np.full(4, 2.0, np.float32)
    trunk = {k: v for k, v in state.items() if not k.startswith("head.")}
    trunk |= {
        "fc.weight": np.ones((1000, 4), np.float32),
        "fc.bias": np.ones(1000, np.float32),
        "bn1.num_batches_tracked": np.array(100, np.int64),
    }
    head = net.params["head.weight"].data.copy()
    path = W.write_safetensors(tmp_path / "pre.safetensors", trunk)
    report = W.load_weights(net, path)
    assert report["missing"] == ["head.weight", "head.bias"] and report["unexpected"] == []
    assert np.array_equal(net.params["head.weight"].data, head)
    assert np.array_equal(net.params["conv1.weight"].data, state["conv1.weight"])
    assert np.array_equal(net.buffers["bn1.running_var"], state["bn1.running_var"])
    # a file with the head restores it
    path = W.write_safetensors(tmp_path / "full.safetensors", state)
    assert W.load_weights(net, path)["missing"] == []
    assert np.array_equal(net.params["head.weight"].data, state["head.weight"])
    # a head of another shape is a strict error naming both shapes
    path = W.write_safetensors(
        tmp_path / "h3.safetensors", {**state, "head.weight": np.ones((3, 4), np.float32)}
    )
    with pytest.raises(
        ValueError, match=r"'head.weight' has shape \(3, 4\) in the file, \(2, 4\) in the net"
    ):
        W.load_weights(net, path)


def test_f16_and_bf16_files_load(tmp_path):
    net, src = _net(0), _trained_net(1)
    state = _state(src)
    header, buffer = {}, b""
    for i, (k, v) in enumerate(state.items()):
        if i % 2:
            raw, dtype = v.astype("<f2").tobytes(), "F16"
        else:
            raw, dtype = (v.view("<u4") >> 16).astype("<u2").tobytes(), "BF16"
        header[k] = _entry(dtype, v.shape, len(buffer), len(buffer) + len(raw))
        buffer += raw
    path = _raw(tmp_path / "half.safetensors", header, buffer)
    W.load_weights(net, path)
    after = net.state_arrays()
    for i, (k, v) in enumerate(state.items()):
        expected = (
            v.astype(np.float16).astype(np.float32)
            if i % 2
            else (v.view(np.uint32) & 0xFFFF0000).view(np.float32)
        )
        assert np.array_equal(after[k], expected), k


def test_load_weights_needs_a_built_net(tmp_path):
    path = W.save_weights(_net(), tmp_path / "m.safetensors")
    with pytest.raises(RuntimeError, match="not built"):
        W.load_weights(models.cnn_embedder(embed_dim=8, widths=(4, 8)), path)


# -- torch (oracle) -------------------------------------------------------------------------------
def _torch_twin(torch, embed_dim=8, widths=(4, 8)):
    """cnn_embedder's torch twin with the same state_dict names ("0.weight", "1.running_mean", ...):
    the ReLUs (fused into our BatchNorms) and pools sit under names that hold no state."""
    nn = torch.nn
    from collections import OrderedDict

    mods, c, i = [], 1, 0
    for j, w in enumerate(widths):
        mods += [
            (str(i), nn.Conv2d(c, w, 3, padding=1, bias=False)),
            (str(i + 1), nn.BatchNorm2d(w)),
            (f"relu{j}", nn.ReLU()),
        ]
        i += 2
        if j < len(widths) - 1:
            mods.append((str(i), nn.MaxPool2d(2)))
            i += 1
        c = w
    mods += [
        (str(i), nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())),
        (str(i + 1), nn.Linear(c, embed_dim)),
    ]
    return nn.Sequential(OrderedDict(mods))


def test_torch_state_dict_loads_and_save_weights_loads_into_torch(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    twin = _torch_twin(torch)
    twin.train()
    with torch.no_grad():
        twin(torch.randn(4, 1, 28, 28))  # running statistics away from their init
    twin.eval()
    sd = twin.state_dict()
    path = tmp_path / "twin.safetensors"
    try:
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in sd.items()}, str(path))
    except ImportError:
        W.write_safetensors(path, {k: v.numpy() for k, v in sd.items()})
    net = _net(3)
    report = W.load_weights(net, path)
    assert report["missing"] == [] and report["unexpected"] == []
    x = np.random.default_rng(0).standard_normal((5, 1, 28, 28)).astype(np.float32)
    with torch.no_grad():
        expected = twin(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(net.eval().forward(x), expected, rtol=1e-4, atol=1e-5)

    ours = _trained_net(7)
    back = tmp_path / "ours.safetensors"
    W.save_weights(ours, back)
    other = _torch_twin(torch)
    try:
        from safetensors.torch import load_file

        state = load_file(str(back))
    except ImportError:
        state = {k: torch.from_numpy(np.array(v)) for k, v in W.read_safetensors(back).items()}
    other.load_state_dict(state, strict=True)
    other.eval()
    with torch.no_grad():
        got = other(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, ours.eval().forward(x), rtol=1e-4, atol=1e-5)


def _torchvision_resnet18(torch):
    """torchvision's ResNet-18, written with its module names (torchvision is not installed)."""
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self, inplanes, planes, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = nn.Sequential(
                    nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
                )

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    class ResNet(nn.Module):
        def __init__(self, num_classes=1000):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            inplanes = 64
            for i, planes in enumerate((64, 128, 256, 512)):
                stride = 1 if i == 0 else 2
                setattr(
                    self,
                    f"layer{i + 1}",
                    nn.Sequential(BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes, 1)),
                )
                inplanes = planes
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet()


def _resnet18_or_skip():
    torch = pytest.importorskip("torch")
    if not hasattr(models, "resnet18"):
        pytest.skip("mantissa_embed.models.resnet18 is not there yet")
    return torch


def test_a_torchvision_resnet18_state_dict_loads_and_ours_loads_into_torch(tmp_path):
    torch = _resnet18_or_skip()
    torch.manual_seed(0)
    tv = _torchvision_resnet18(torch)
    tv.train()
    with torch.no_grad():
        tv(torch.randn(4, 3, 32, 32))  # running statistics away from their init
    tv.eval()
    path = tmp_path / "resnet18.safetensors"
    try:
        from safetensors.torch import save_file

        save_file(tv.state_dict(), str(path))
    except ImportError:
        W.write_safetensors(path, {k: v.numpy() for k, v in tv.state_dict().items()})
    net = models.resnet18(embed_dim=8, input_shape=(3, 32, 32), seed=1)
    head = net.state_arrays()["head.weight"]
    report = W.load_weights(net, path)  # strict: fc.* and num_batches_tracked ignored, head kept
    assert report["missing"] == ["head.weight", "head.bias"] and report["unexpected"] == []
    assert sorted(report["ignored"])[:2] == ["bn1.num_batches_tracked", "fc.bias"]
    assert np.array_equal(net.state_arrays()["head.weight"], head)
    trunk = models.resnet18(embed_dim=None, weights=path, input_shape=(3, 32, 32))
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    tv.fc = torch.nn.Identity()
    with torch.no_grad():
        expected = tv(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(
        trunk.eval().forward(x), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max()
    )

    ours = models.resnet18(embed_dim=None, input_shape=(3, 32, 32), seed=2)
    ours.forward(np.random.default_rng(1).standard_normal((3, 3, 32, 32)).astype(np.float32))
    back = W.save_weights(ours, tmp_path / "ours.safetensors")
    state = {k: torch.from_numpy(np.array(v)) for k, v in W.read_safetensors(back).items()}
    strict_twin = _torchvision_resnet18(torch)
    strict_twin.fc = torch.nn.Identity()
    strict_twin.load_state_dict(state, strict=True)
    with_fc = _torchvision_resnet18(torch)
    keys = with_fc.load_state_dict(state, strict=False)
    assert sorted(keys.missing_keys) == ["fc.bias", "fc.weight"] and keys.unexpected_keys == []
    strict_twin.eval()
    with torch.no_grad():
        got = strict_twin(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, ours.eval().forward(x), rtol=1e-4, atol=1e-4 * np.abs(got).max())


@pytest.mark.parametrize("name", ["w.safetensors", "w.npz"])
def test_a_fifo_or_directory_is_refused_without_blocking(tmp_path, name):
    """open() of a FIFO blocks until a writer comes: the path is checked to be a regular file
    first (a directory likewise)."""
    fifo = tmp_path / name
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        W.load_weights(_net(), fifo)
    (tmp_path / "d").mkdir()
    with pytest.raises(ValueError, match="not a regular file"):
        W.load_weights(_net(), tmp_path / "d" / ".." / "d")


def test_an_npz_with_unsupported_zip_flags_is_a_value_error(tmp_path):
    """An 'encrypted' or 'compressed patched data' member makes zipfile raise RuntimeError /
    NotImplementedError: still a ValueError naming the file."""
    net = _trained_net()
    path = tmp_path / "w.npz"
    W.save_weights(net, path)
    data = bytearray(path.read_bytes())
    cd = data.rfind(b"PK\x01\x02")  # the last central-directory record: its general-purpose flags
    for flag in (0x1, 0x20):
        bad = bytearray(data)
        bad[cd + 8] |= flag
        p = tmp_path / f"flag{flag}.npz"
        p.write_bytes(bytes(bad))
        with pytest.raises(ValueError, match=re.escape(str(p))):
            W.load_weights(_net(), p)


@pytest.mark.parametrize("shape", [[0, 2**63], [0] + [1] * 40, [0, 2**62, 2**62]])
def test_shapes_numpy_cannot_hold_name_the_entry(tmp_path, shape):
    path = _raw(tmp_path / "s.safetensors", {"x": _entry("F32", shape, 0, 0)})
    with pytest.raises(ValueError, match=_msg(path, "x")):
        W.read_safetensors(path)
