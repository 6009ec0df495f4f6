"""A gallery of embeddings to search: ``Index`` (exact k-NN, low-precision storage, files
that are memory-mapped on load).

The index stores its vectors as float32, float16, bfloat16 (the top 16 bits of float32, rounded
to nearest even) or int8 with one float32 scale per vector (``round(x / s)``,
``s = max|x| / 127``). A search reads the stored codes directly (``engine.knn_codes_search``,
``src/engine_c/knn_codes*.c``; no decoded float32 copy): it ranks candidates by float32 scores
over the decoded vectors, or, on CPUs with the instructions, by scores in the codes' own
precision (float16 and bfloat16: query and vectors rounded to bfloat16, ``vdpbf16ps``; int8:
the query quantized to 8 bits per value, ``vpdpbusd``, or 7 bits with AVX2's ``vpmaddubsw``),
then recomputes the candidates' distances in float64 from the query and the decoded vectors and
returns the k best by (distance, order of addition). The low-precision rankings keep
``2 k + 16`` candidates, so a true neighbour is lost only when the reduced precision moves it
past that many others (``engine.knn_codes_mode`` tells which arithmetic a dtype gets).
With ``keep_float32=True`` the index also keeps the float32 vectors, and ``search(...,
rerank=R)`` recomputes the distances of the best ``max(R, k)`` candidates from them.

Files (``Index.save``): a 16-byte preamble (``b"MEINDEX1"``, the header length), a JSON
header, then the raw arrays at 64-byte aligned offsets. No pickle; ``Index.load`` checks the
header against the file size before reading, and with ``mmap=True`` maps the arrays read-only
(a gallery larger than RAM is paged in by the searches).
"""

from __future__ import annotations

import json
import os
import struct
import threading
from typing import Any

import numpy as np

from ._checks.distance import l2_normalize_rows, sq_norms64
from ._index_codes import _decode, _encode, _int_vector, _rank_exact
from ._io import atomic_write
from ._rowbuffer import RowBuffer, append_rows
from ._typing import ArrayLike, Float32Array, Int64Array
from ._validation import check_array, check_bool, check_int
from .engine import all_finite, copy_rows_finite, knn_codes_mode, knn_codes_search

__all__ = ["Index", "DTYPES", "METRICS"]

DTYPES = ("float32", "float16", "bfloat16", "int8")
METRICS = ("euclidean", "cosine")
_MAGIC = b"MEINDEX1"
_FORMAT = "mantissa-embed/index"
_VERSION = 1
_TILE = 0  # stored rows per packed tile of the search kernel (0: the engine's choice, ~256 KB)
_F32_MAX = float(np.finfo(np.float32).max)
_QUERY_BLOCK = 4096  # queries per kernel call
_F4 = np.dtype(np.float32)
_STORE = {"float32": "<f4", "float16": "<f2", "bfloat16": "<u2", "int8": "i1"}


class Index:
    """An exact k-NN gallery of ``dim``-dimensional embeddings.

    Parameters
    ----------
    dim : int >= 1
    metric : {"euclidean", "cosine"}, default "euclidean"
        ``"euclidean"``: ``||q - x||``; ``"cosine"``: ``1 - cos(q, x)`` (vectors are L2-normalized
        when added and queried; an all-zero vector stays zero).
    dtype : {"float32", "float16", "bfloat16", "int8"}, default "float32"
        Storage of the vectors: 4, 2, 2 or 1 byte per value (int8 adds 4 bytes per vector).
    keep_float32 : bool, default False
        Also keep the float32 vectors, for ``search(..., rerank=R)``.

    Threads: ``add``, ``remove``, ``search`` and ``save`` may be called from several threads;
    they take one lock in turn (a search is parallel inside the engine).

    Raises TypeError / ValueError for bad arguments.
    """

    def __init__(
        self, dim: int, metric: str = "euclidean", dtype: str = "float32", *, keep_float32: bool = False
    ) -> None:
        self.dim = check_int(dim, "dim", minimum=1)
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        self.metric, self.dtype, self.keep_float32 = metric, dtype, check_bool(keep_float32, "keep_float32")
        self._codes = np.empty((0, self.dim), _STORE[dtype])
        self._scales = np.empty(0, np.float32) if dtype == "int8" else None
        self._f32 = np.empty((0, self.dim), np.float32) if self.keep_float32 else None
        self._ids = np.empty(0, np.int64)
        self._labels: np.ndarray | None = None
        self._next_id = 0
        # the largest squared norm of the first _norm_rows stored vectors (search's overflow guard)
        self._max_sq, self._norm_rows = 0.0, 0
        self._lock = threading.RLock()
        # the growth buffers behind the stored arrays (see _append), and the fast path's state
        self._bufs: dict[str, RowBuffer] = {}
        self._fast: tuple | None = None

    # ------------------------------------------------------------------ contents
    @property
    def _plain(self) -> bool:
        """float32 codes are the added vectors themselves and ids the only other array
        (``_append_plain``)."""
        return self.dtype == "float32" and self.metric == "euclidean" and not self.keep_float32

    def __len__(self) -> int:
        return int(self._ids.shape[0])

    @property
    def ids(self) -> Int64Array:
        """int64 (n,): the ids, in the order of addition."""
        return self._ids.copy()

    @property
    def labels(self) -> Int64Array | None:
        """int64 (n,) or None: the labels given to ``add``."""
        return None if self._labels is None else self._labels.copy()

    @property
    def nbytes(self) -> int:
        """Bytes of the stored vectors (codes, scales, kept float32 copies)."""
        return int(sum(a.nbytes for a in (self._codes, self._scales, self._f32) if a is not None))

    def add(
        self, embeddings: ArrayLike, ids: ArrayLike | None = None, labels: ArrayLike | None = None
    ) -> Index:
        """Add ``embeddings`` (n, dim) (finite; converted to float32), with int64 ``ids`` (new,
        distinct; default: consecutive integers after the largest so far) and optional int64
        ``labels`` (all additions with labels, or none; an add of zero rows is checked the
        same way and stores nothing). Returns ``self``."""
        if ids is None and labels is None:
            with self._lock:
                if self._append_plain(embeddings):
                    return self
        x = embeddings
        if type(x) is np.ndarray and x.dtype == _F4 and x.ndim == 2 and x.flags.c_contiguous:
            # check_array would return x itself: only its finiteness check is left
            if x.size and not all_finite(x):
                raise ValueError("embeddings contains NaN or Inf")
        else:
            x = check_array(embeddings, "embeddings", ndim=2)
        if x.shape[1] != self.dim:
            raise ValueError(f"embeddings must have {self.dim} columns, got shape {x.shape}")
        n = x.shape[0]
        with self._lock:
            if ids is None:
                new_ids = np.arange(self._next_id, self._next_id + n, dtype=np.int64)
            else:
                new_ids = _int_vector(ids, "ids", n)
                if np.unique(new_ids).shape[0] != n or np.isin(new_ids, self._ids).any():
                    raise ValueError("ids must be distinct and not already in the index")
            if labels is not None:
                lab = _int_vector(labels, "labels", n)
                if self._labels is None and len(self) > 0:
                    raise ValueError("labels given, but earlier additions had none")
            elif self._labels is not None:
                raise ValueError("labels missing: earlier additions had labels")
            if n == 0:  # checked as any add; stores nothing, so commits the index to no labels
                return self
            if self.metric == "cosine":
                x = l2_normalize_rows(x.astype(np.float64), eps=0.0)[0].astype(np.float32)
            codes, scales = _encode(x, self.dtype)
            self._append(
                {
                    "_codes": codes,
                    "_scales": scales,
                    "_f32": x if self._f32 is not None else None,
                    "_labels": lab if labels is not None else None,
                    "_ids": new_ids,
                }
            )
            if n:
                self._next_id = max(self._next_id, int(new_ids.max()) + 1)
            if ids is None and labels is None and self._plain and self._bufs["_ids"].ahead is None:
                self._bufs["_ids"].write_ahead(len(self), self._next_id)  # once per buffer
        return self

    def _append_plain(self, x) -> bool:
        """``add`` of the float32 rows ``x`` (a C-contiguous (n, dim) array) as they are, with
        the next ``n`` ids, when the last add left its buffers with room in ``_fast`` (else False,
        nothing done): one compiled call copies x into the spare rows and checks it
        (ValueError, nothing stored); the ids are those written ahead (``RowBuffer.ahead``)
        unless another add came between. Many small adds are mostly this path."""
        fast = self._fast
        if fast is None or fast[2] is not self._codes or fast[3] is not self._ids:
            return False  # not plain, or the stored arrays were replaced since (remove, load)
        rows, ib, _, ids = fast
        n0 = ids.shape[0]
        done = copy_rows_finite(x, rows, n0)
        if done < 0:  # another dtype, layout or width, or no room: add's general path
            return False
        if not done:
            raise ValueError("embeddings contains NaN or Inf")
        n1, id0 = n0 + x.shape[0], self._next_id
        if ib.ahead != id0 - n0:
            ib.rows[n0:n1] = np.arange(id0, id0 + n1 - n0, dtype=np.int64)
        self._codes, self._ids, self._next_id = rows[:n1], ib.rows[:n1], id0 + n1 - n0
        self._fast = (rows, ib, self._codes, self._ids)
        return True

    def _append(self, parts: dict[str, np.ndarray | None]) -> None:
        """Append rows to the stored arrays in amortized O(rows) (``append_rows``): each is a
        view of the first ``len(self)`` rows of a ``RowBuffer``, so many small adds cost a small
        multiple of one large add. ``remove``, ``load`` and unpickling replace the views with
        plain arrays; the next add then copies them into a new buffer (a memory-mapped file is
        never written)."""
        n0, ids = self._ids.shape[0], parts["_ids"]
        assert ids is not None  # every add has ids
        self._fast = None  # its view of the codes' rows would stop a growth's remap
        append_rows(self, self._bufs, parts, n0, n0 + ids.shape[0])
        if self._plain and self._labels is None:
            cb, ib = self._bufs["_codes"], self._bufs["_ids"]
            room = min(cb.rows.shape[0], ib.rows.shape[0])
            self._fast = (cb.rows[:room], ib, self._codes, self._ids)

    def remove(self, ids: ArrayLike) -> int:
        """Remove the vectors with these ids (unknown ids are ignored); returns how many went."""
        drop = _int_vector(ids, "ids")
        with self._lock:
            keep = ~np.isin(self._ids, drop)
            gone = int((~keep).sum())
            if gone:
                self._max_sq, self._norm_rows = 0.0, 0
                self._codes = self._codes[keep]
                self._ids = self._ids[keep]
                if self._scales is not None:
                    self._scales = self._scales[keep]
                if self._f32 is not None:
                    self._f32 = self._f32[keep]
                if self._labels is not None:
                    self._labels = self._labels[keep]
            return gone

    # ------------------------------------------------------------------ search
    def search(
        self, queries: ArrayLike, k: int, rerank: int | None = None
    ) -> tuple[Int64Array, Float32Array]:
        """The ``k`` nearest stored vectors of each query row.

        Parameters
        ----------
        queries : array_like, (n, dim) or (dim,), finite
        k : int, 1 <= k <= len(self)
        rerank : int >= 1 or None
            With ``keep_float32``: the best ``max(rerank, k)`` candidates of the stored
            (possibly low-precision) vectors are re-ranked by distances to the float32 ones.

        Returns
        -------
        ids : int64 (n, k), nearest first (ties: earlier added first); (k,) for one query
        distances : float32, same shape, computed in float64 from the vectors ranked last

        Raises ValueError (``k`` too large, wrong width, NaN/Inf, ``rerank`` without
        ``keep_float32``) / TypeError.
        """
        q = np.asarray(queries) if not isinstance(queries, (str, bytes)) else queries
        single = getattr(q, "ndim", None) == 1
        Q = check_array(np.reshape(q, (1, -1)) if single else q, "queries", ndim=2)
        if Q.shape[1] != self.dim:
            raise ValueError(f"queries must have {self.dim} columns, got shape {Q.shape}")
        k = check_int(k, "k", minimum=1)
        if rerank is not None:
            rerank = check_int(rerank, "rerank", minimum=1)
            if self._f32 is None:
                raise ValueError("rerank needs the float32 vectors: build the Index with keep_float32=True")
        metric = "cosine" if self.metric == "cosine" else "euclidean"
        with self._lock:
            n = len(self)
            if k > n:
                raise ValueError(f"k must be <= the number of indexed vectors ({n}), got k={k}")
            kk = min(n, max(k, rerank or 0))
            pos, dist = self._scan(Q, kk, metric)
            if rerank is not None:
                pos, dist = _rank_exact(Q, self._f32, pos, metric)
            pos, dist = pos[:, :k], dist[:, :k]
            ids = self._ids[pos]
        if single:
            return ids[0], dist[0]
        return ids, dist

    def _scan(self, Q, k, metric):
        """Positions (nq, k) and float32 distances of the k best stored vectors: candidates ranked
        by the engine's arithmetic for this dtype, their distances recomputed in float64."""
        n = len(self)
        if metric == "cosine":  # before the range check: a cosine query's scale does not matter
            Q = l2_normalize_rows(Q.astype(np.float64), eps=0.0)[0].astype(np.float32)
        self._check_range(Q)
        mode = knn_codes_mode(self.dtype, self.dim)
        cand = k if mode == "f32" else min(n, 2 * k + 16)
        Q = np.ascontiguousarray(Q, dtype=np.float32)
        pos = np.empty((Q.shape[0], k), np.int64)
        dist = np.empty((Q.shape[0], k), np.float32)
        # blocks of queries bound the kernel's per-thread heaps; each block re-reads the codes
        for q0 in range(0, Q.shape[0], _QUERY_BLOCK):
            p, d = knn_codes_search(
                Q[q0 : q0 + _QUERY_BLOCK],
                self._codes,
                self._scales,
                cand,
                self.dtype,
                metric="cosine" if metric == "cosine" else "euclidean",
                mode=mode,
                tile_r=_TILE,
            )
            pos[q0 : q0 + _QUERY_BLOCK], dist[q0 : q0 + _QUERY_BLOCK] = p[:, :k], d[:, :k]
        return pos, dist

    def _check_range(self, Q):
        """ValueError when |q|^2 + |x|^2 + 2|q||x| could overflow the float32 ranking scores.
        The stored vectors' largest norm is kept up to date for the rows added since the last
        call (rows are only appended; remove starts over)."""
        n = len(self)
        for s0 in range(self._norm_rows, n, 65536):
            scales = None if self._scales is None else self._scales[s0 : s0 + 65536]
            rows = _decode(self._codes[s0 : s0 + 65536], scales, self.dtype)
            self._max_sq = max(self._max_sq, float(sq_norms64(rows, "stored vectors").max()))
        self._norm_rows = n
        qmax = float(np.sqrt(sq_norms64(Q, "queries").max())) if Q.shape[0] else 0.0
        if (qmax + np.sqrt(self._max_sq)) ** 2 > _F32_MAX / 4:
            raise ValueError(
                "queries or stored vectors are too large: their distances overflow float32; rescale them"
            )

    # ------------------------------------------------------------------ files
    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the index to ``path`` atomically (a temporary file renamed onto it). Returns
        ``path`` as a str. Raises TypeError for a non-path; OSError naming ``path`` when its
        directory is missing (FileNotFoundError) or not writable (PermissionError)."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        with self._lock:
            arrays = {"codes": self._codes, "ids": self._ids}
            if self._scales is not None:
                arrays["scales"] = self._scales
            if self._f32 is not None:
                arrays["float32"] = self._f32
            if self._labels is not None:
                arrays["labels"] = self._labels
            header: dict[str, Any] = {
                "format": _FORMAT,
                "version": _VERSION,
                "dim": self.dim,
                "metric": self.metric,
                "dtype": self.dtype,
                "keep_float32": self.keep_float32,
                "n": len(self),
                "next_id": self._next_id,
                "arrays": {},
            }
            offset = 0
            for name, a in arrays.items():
                header["arrays"][name] = {"dtype": a.dtype.str, "shape": list(a.shape), "offset": offset}
                offset += -(-a.nbytes // 64) * 64
            blob = json.dumps(header).encode()
            start = -(-(16 + len(blob)) // 64) * 64

            def write(f) -> None:
                f.write(_MAGIC + struct.pack("<Q", len(blob)) + blob)
                f.write(b"\0" * (start - 16 - len(blob)))
                for name, a in arrays.items():
                    f.write(np.ascontiguousarray(a).tobytes())
                    f.write(b"\0" * (-a.nbytes % 64))

            return atomic_write(path, write, suffix=".meindex.tmp")  # OSError naming path

    @classmethod
    def load(cls, path: str | os.PathLike[str], mmap: bool = True) -> Index:
        """Read an index written by ``save``; ``mmap=True`` maps its arrays read-only (a
        later ``add`` / ``remove`` works on in-memory copies). Raises
        FileNotFoundError, or ValueError naming ``path`` for a foreign, truncated or
        inconsistent file."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        path = os.fspath(path)
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            pre = f.read(16)
            if len(pre) != 16 or pre[:8] != _MAGIC:
                raise ValueError(f"{path!r} is not a mantissa-embed index file")
            (hlen,) = struct.unpack("<Q", pre[8:])
            if hlen > min(size, 1 << 24):
                raise ValueError(f"{path!r}: header length {hlen} is beyond the file")
            try:
                h = json.loads(f.read(hlen).decode())
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise ValueError(f"{path!r}: unreadable header ({e})") from None
        try:
            if h.get("format") != _FORMAT or h.get("version") != _VERSION:
                raise ValueError("unknown format or version")
            idx = cls(h["dim"], h["metric"], h["dtype"], keep_float32=h["keep_float32"])
            n = check_int(h["n"], "n", minimum=0)
            start = -(-(16 + hlen) // 64) * 64
            want = {"codes": (_STORE[idx.dtype], [n, idx.dim]), "ids": ("<i8", [n])}
            if idx.dtype == "int8":
                want["scales"] = ("<f4", [n])
            if idx.keep_float32:
                want["float32"] = ("<f4", [n, idx.dim])
            meta = h["arrays"]
            if "labels" in meta:
                want["labels"] = ("<i8", [n])
            if set(meta) != set(want):
                raise ValueError(f"arrays {sorted(meta)}, expected {sorted(want)}")
            out = {}
            for name, (dt, shape) in want.items():
                m = meta[name]
                if np.dtype(m["dtype"]) != np.dtype(dt) or list(m["shape"]) != shape:
                    raise ValueError(f"array {name!r} must be {dt} {shape}, got {m['dtype']} {m['shape']}")
                off = start + check_int(m["offset"], "offset", minimum=0)
                nbytes = int(np.prod(shape)) * np.dtype(dt).itemsize
                if off + nbytes > size:
                    raise ValueError(f"array {name!r} runs past the end of the file")
                if mmap and nbytes:
                    out[name] = np.memmap(path, dtype=dt, mode="r", offset=off, shape=tuple(shape))
                else:
                    with open(path, "rb") as f:
                        f.seek(off)
                        out[name] = np.frombuffer(f.read(nbytes), dtype=dt).reshape(shape).copy()
            idx._codes, idx._ids = out["codes"], np.asarray(out["ids"])
            idx._scales = out.get("scales")
            idx._f32 = out.get("float32")
            idx._labels = None if "labels" not in out else np.asarray(out["labels"])
            if np.unique(idx._ids).shape[0] != n:
                raise ValueError("ids are not distinct")
            idx._next_id = max(
                check_int(h["next_id"], "next_id", minimum=0), int(idx._ids.max()) + 1 if n else 0
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{path!r} is not a valid mantissa-embed index file ({e})") from None
        return idx

    def __getstate__(self):
        """For Dask moving a shard between processes (not a file format: see ``save``)."""
        with self._lock:
            st = self.__dict__.copy()
        del st["_lock"]
        st["_bufs"], st["_fast"] = {}, None  # the views travel as arrays of their rows only
        for k in ("_codes", "_scales", "_f32", "_ids", "_labels"):
            if isinstance(st[k], np.memmap):
                st[k] = np.array(st[k])
        return st

    def __setstate__(self, st) -> None:
        self.__dict__.update(st)
        self.__dict__.setdefault("_bufs", {})
        self.__dict__.setdefault("_fast", None)
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return (
            f"Index(dim={self.dim}, metric={self.metric!r}, dtype={self.dtype!r}, "
            f"keep_float32={self.keep_float32}, n={len(self)})"
        )
