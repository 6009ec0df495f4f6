"""Training from image files: decode throughput against torch's DataLoader, the cost of a ``fit``
epoch on files against the same epoch on preloaded arrays, and the peak memory of streaming.

Data (untimed, reported on its own): ``--n-images`` (20,000) seeded 256x256 RGB JPEGs (Pillow,
quality 90; a smooth two-colour gradient, a low-frequency wave, Gaussian noise and a few filled
ellipses / rectangles: compressible like photographs, ~14 kB each) in ``--classes`` (100)
class folders, ``DIR/images/class_XXX/img_NNNNNN.jpg`` (image ``i`` in class ``i % classes``),
written on ``--threads`` threads. ``DIR`` is a temporary folder deleted at exit, or
``--keep-dir DIR``, reused while its ``bench_image_files.json`` matches the arguments.
``DIR/tenth`` holds symbolic links to the first tenth of the class folders (the ``memory``
part's N/10 dataset). Both sides read the files from the page cache (they were just written, and
each part warms up first): the numbers are decode + transform, not disk.

Parts (``--part``, default ``all``):

``throughput``
    Decoding, random-resized-cropping (scale (0.16, 1), ratio (3/4, 4/3)) to 224x224 and flipping
    every image into batches of 64, 2 decode workers (``--workers``) on each side.
    mantissa: ``ImageFolder(root, size=224, num_workers=2)`` (default train transform) driven by
    ``fit``'s own machinery, ``embedder._batch_sources.FileBatches(ds, 64).epoch(index_batches, rng)`` over a
    random permutation (transform parameters drawn in the main thread, images decoded on the
    dataset's thread pool, ``prefetch`` = 2 batches ahead).
    torch: ``DataLoader(TorchStyleFolder(root), batch_size=64, num_workers=2, shuffle=True,
    persistent_workers=True)``; ``TorchStyleFolder`` (below) is torchvision's ``ImageFolder`` +
    ``RandomResizedCrop(224, scale=(0.16, 1))`` + ``RandomHorizontalFlip()`` + ``ToTensor()``
    written with Pillow and torch only (torchvision's ``get_params`` on torch's generator,
    ``Image.resize(..., BILINEAR, box=...)``, HWC uint8 -> CHW float32 / 255).
    ``persistent_workers=True`` keeps the 2 worker processes alive between epochs; without it
    every epoch would fork them again, which a user running many epochs would not pay twice:
    so this setting is the fair one for torch. The DataLoader is built and one untimed
    epoch run before the clock (workers started); the mantissa side also runs one untimed
    epoch. Then ``--repeats`` rounds alternate the sides (torch first in even rounds), each
    epoch after ``--settle`` s of sleep; each batch is consumed by reading one element.
    Reported: images/s (median, min, max) and the ratio mantissa / torch (**above 1: mantissa
    faster**); the dataset build times (mantissa reads every file's header; torch only lists).

``fit``
    One ``fit`` epoch of ``Embedder(models.cnn_embedder(), seed=0)`` (the default recipe, batch
    64) on ``--fit-images`` (4,000; class-balanced subset, the first images of every class) at
    112 px: on the files (``ImageFolder(root, size=112)``: default train transform, decode
    threads = the engine's threads) against the same images preloaded by ``ds.load_all()``
    (eval transform: resize shorter side to 112 + centre crop) and fitted with
    ``fit(X, y, augment=None)``. The array side does no augmentation at all (``--array-augment
    hflip`` adds the library's array flip): it is the compute-only epoch, so the ratio files /
    array charges the whole file pipeline (decode, crop, resize, flip, conversion and any wait
    for a batch) to the files side. Each side's ``Embedder`` is first fitted untimed on one
    batch of the same shape (64 images; the house fit protocol's warm-up: layers built, buffers
    and first-call plans made), then the epoch is timed; rounds alternate the sides. Reported:
    seconds and images/s (medians; an epoch draws ceil(n / 64) * 64 samples, the class-balanced
    sampler filling the last batch), the ratio files / array (target <= 1.25), the last loss of
    each side, and the ``load_all`` time (untimed).

``memory``
    Each measurement in a fresh subprocess: one ``fit`` epoch (``Embedder(models.cnn_embedder(),
    seed=0).fit(ImageFolder(root, size=224))``, default batch 64, no warm-up: a user's first
    epoch) which saves its model, then one ``embed`` of the folder (``Embedder.load`` of that
    model, default batch 256) in another subprocess; over all N images, then over the N/10 of
    ``DIR/tenth``. Reported: samples/s (fit: ceil(N / 64) * 64 samples) and the child's peak
    RSS: ``ru_maxrss`` and ``VmHWM`` (``/proc/self/status``). Linux carries ``ru_maxrss`` over
    ``fork``/``vfork`` + ``execve`` from the parent (a child of a parent that held 500 MB reports
    >= 500 MB), so every child is started by a small launcher process (``python -c
    'subprocess.call(...)'``, ~15 MB) and its ``ru_maxrss`` is its own. Target: peak RSS < 1 GB
    (the network's own training activations at 224 px and batch 64 are several GB, so this is
    reported, not expected; the decode ring alone holds ``prefetch + 1`` = 3 float32 batches:
    110 MiB for fit's 64 images, 441 MiB for embed's 256). With N/10 smaller than a batch (smoke
    sizes) the two peaks are not comparable. ``--repeats`` does not apply.

Every part prints a markdown table; the last line is one JSON object with every number.
Threads: ``--threads`` (2) for the engine (``mantissa_embed.set_num_threads``) and
``torch.set_num_threads``; the children get ``OMP_NUM_THREADS=--threads`` (as
``compare_torch_cnn_fit.py``). The header prints the CPU (``_machine.describe``: model, ISA path,
FMA peak), the ``OPENBLAS_*`` / ``OMP_NUM_THREADS`` variables and numpy's BLAS threads (this script
leaves numpy's BLAS alone; ``bench_sgemm.py`` is the one to run with ``OPENBLAS_CORETYPE`` unset),
and the load average at start and end: run it on an otherwise idle machine.

    python benchmarks/bench_image_files.py                                  # all parts, N = 20,000
    python benchmarks/bench_image_files.py --part throughput --repeats 5 --keep-dir /tmp/imgs
    python benchmarks/bench_image_files.py --part fit --fit-images 4000 --keep-dir /tmp/imgs
    python benchmarks/bench_image_files.py --part memory --keep-dir /tmp/imgs
    python benchmarks/bench_image_files.py --n-images 256 --fit-images 256 --repeats 1   # smoke run

Without torch the throughput part prints ``SKIPPED`` (the other parts need no torch).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _rss import LAUNCHER, peaks_mb  # noqa: E402

PX = 256  # generated images are PX x PX
QUALITY = 90
BATCH = 64
CROP = 224
FIT_SIZE = 112
SCALE = (0.16, 1.0)
RATIO = (3.0 / 4.0, 4.0 / 3.0)
MARKER = "bench_image_files.json"
#: starts a child from a ~15 MB process, so that the child's ru_maxrss is not the parent's


# --------------------------------------------------------------------------- data
def make_image(seed, i, px=PX):
    """Image ``i``: a seeded RGB Pillow image, px x px: a gradient between two random colours in a
    random direction, a low-frequency wave, Gaussian noise (sd 6) and 2-5 filled shapes."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng([seed, i])
    yy, xx = np.mgrid[0:px, 0:px].astype(np.float32) / px
    c0, c1 = rng.uniform(0, 255, (2, 3)).astype(np.float32)
    ang = rng.uniform(0, 2 * np.pi)
    t = np.cos(ang) * xx + np.sin(ang) * yy
    t = (t - t.min()) / max(float(t.max() - t.min()), 1e-6)
    img = c0 + (c1 - c0) * t[..., None]
    fx, fy = rng.uniform(0.5, 3.0, 2)
    wave = np.sin(2 * np.pi * (fx * xx + fy * yy) + rng.uniform(0, 2 * np.pi))
    img += 30.0 * wave[..., None] * rng.uniform(-1, 1, 3).astype(np.float32)
    img += rng.normal(0.0, 6.0, img.shape).astype(np.float32)
    im = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(im)
    for _ in range(int(rng.integers(2, 6))):
        x0, y0 = (int(v) for v in rng.integers(0, px - 16, 2))
        w, h = (int(v) for v in rng.integers(16, px // 2, 2))
        fill = tuple(int(v) for v in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)([x0, y0, x0 + w, y0 + h], fill=fill)
    return im


def prepare_data(args):
    """(data dir, images root, tenth root, generation info dict); generates the JPEGs unless
    ``--keep-dir`` already holds this very set."""
    spec = {
        "n_images": args.n_images,
        "classes": args.classes,
        "px": PX,
        "quality": QUALITY,
        "seed": args.seed,
        "format": 1,
    }
    if args.keep_dir:
        d = os.path.abspath(args.keep_dir)
        os.makedirs(d, exist_ok=True)
    else:
        d = tempfile.mkdtemp(prefix="bench_image_files_")
    images, tenth = os.path.join(d, "images"), os.path.join(d, "tenth")
    marker = os.path.join(d, MARKER)
    info = {"dir": d, "reused": False, "seconds": 0.0}
    if os.path.exists(marker):
        with open(marker) as f:
            old = json.load(f)
        if old.get("spec") == spec:
            info.update(reused=True, bytes=old["bytes"], seconds=old["seconds"])
            return d, images, tenth, info
    ours = {"images", "tenth", MARKER}
    others = set(os.listdir(d)) - ours
    if others:
        sys.exit(
            f"--keep-dir {d} holds files this script did not write ({', '.join(sorted(others)[:5])}); "
            "give an empty or new folder"
        )
    for name in ("images", "tenth"):  # an earlier set of other arguments, or an interrupted run
        p = os.path.join(d, name)
        if os.path.islink(p) or os.path.isfile(p):
            os.remove(p)
        elif os.path.isdir(p):
            shutil.rmtree(p)
    if os.path.exists(marker):
        os.remove(marker)
    names = [f"class_{c:03d}" for c in range(args.classes)]
    for n in names:
        os.makedirs(os.path.join(images, n))

    def write(i):
        path = os.path.join(images, names[i % args.classes], f"img_{i:06d}.jpg")
        make_image(args.seed, i).save(path, "JPEG", quality=QUALITY)
        return os.path.getsize(path)

    t = time.perf_counter()
    with ThreadPoolExecutor(max(1, args.threads)) as pool:
        nbytes = sum(pool.map(write, range(args.n_images), chunksize=64))
    secs = time.perf_counter() - t
    os.makedirs(tenth)
    for n in names[: max(2, math.ceil(args.classes / 10))]:
        os.symlink(os.path.join("..", "images", n), os.path.join(tenth, n))
    with open(marker, "w") as f:
        json.dump({"spec": spec, "bytes": nbytes, "seconds": secs}, f)
    info.update(bytes=nbytes, seconds=secs)
    return d, images, tenth, info


# --------------------------------------------------------------------------- torch side
class TorchStyleFolder:
    """torchvision's ``ImageFolder(root, transform=Compose([RandomResizedCrop(size, scale, ratio),
    RandomHorizontalFlip(), ToTensor()]))`` in Pillow + torch (torchvision is not needed): a
    map-style dataset for ``torch.utils.data.DataLoader``."""

    def __init__(self, root, size=CROP, scale=SCALE, ratio=RATIO):
        classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
        self.samples = [
            (os.path.join(root, c, f), k)
            for k, c in enumerate(classes)
            for f in sorted(os.listdir(os.path.join(root, c)))
        ]
        self.size, self.scale, self.ratio = size, scale, ratio

    def __len__(self):
        return len(self.samples)

    def get_params(self, width, height):
        """torchvision's ``RandomResizedCrop.get_params``: (top, left, h, w)."""
        import torch

        area = height * width
        log_ratio = torch.log(torch.tensor(self.ratio))
        for _ in range(10):
            target_area = area * torch.empty(1).uniform_(self.scale[0], self.scale[1]).item()
            aspect = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
            w = round(math.sqrt(target_area * aspect))
            h = round(math.sqrt(target_area / aspect))
            if 0 < w <= width and 0 < h <= height:
                top = torch.randint(0, height - h + 1, size=(1,)).item()
                left = torch.randint(0, width - w + 1, size=(1,)).item()
                return top, left, h, w
        in_ratio = width / height
        if in_ratio < min(self.ratio):
            w, h = width, round(width / min(self.ratio))
        elif in_ratio > max(self.ratio):
            w, h = round(height * max(self.ratio)), height
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def __getitem__(self, i):
        import torch
        from PIL import Image

        path, label = self.samples[i]
        with open(path, "rb") as f:  # torchvision's pil_loader
            img = Image.open(f).convert("RGB")
        top, left, h, w = self.get_params(*img.size)
        img = img.resize((self.size, self.size), Image.BILINEAR, box=(left, top, left + w, top + h))
        if torch.rand(1) < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        x = torch.from_numpy(np.array(img, np.uint8, copy=True)).view(self.size, self.size, 3)  # ToTensor
        return x.permute(2, 0, 1).contiguous().to(torch.float32).div(255), label


# --------------------------------------------------------------------------- throughput
def mantissa_epoch(ds, seed):
    """(images, seconds) of one pass of ``fit``'s file batches over ``ds`` in a random order."""
    from mantissa_embed.embedder._batch_sources import FileBatches

    t = time.perf_counter()
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(ds))
    batches = (perm[s : s + BATCH] for s in range(0, len(perm), BATCH))
    gen = FileBatches(ds, BATCH).epoch(batches, rng)
    n, sink = 0, 0.0
    try:
        for idx, xb in gen:
            sink += float(xb[0, 0, 0, 0])
            n += idx.shape[0]
    finally:
        gen.close()
    return n, time.perf_counter() - t


def torch_epoch(dl):
    """(images, seconds) of one pass over the DataLoader ``dl``."""
    t = time.perf_counter()
    n, sink = 0, 0.0
    for xb, yb in dl:
        sink += float(xb[0, 0, 0, 0])
        n += int(yb.shape[0])
    return n, time.perf_counter() - t


def part_throughput(args, root):
    try:
        import torch
        from torch.utils.data import DataLoader
    except ImportError:
        print("\n## throughput\n\nSKIPPED: torch is not installed")
        return {"skipped": "torch not installed"}
    from mantissa_embed import datasets

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t = time.perf_counter()
    ds = datasets.ImageFolder(root, size=CROP, num_workers=args.workers)
    build_m = time.perf_counter() - t
    t = time.perf_counter()
    tds = TorchStyleFolder(root)
    build_t = time.perf_counter() - t
    assert len(ds) == len(tds), (len(ds), len(tds))
    dl = DataLoader(tds, batch_size=BATCH, num_workers=args.workers, shuffle=True, persistent_workers=True)
    t = time.perf_counter()
    torch_epoch(dl)  # warm-up: starts the persistent workers
    warm_t = time.perf_counter() - t
    t = time.perf_counter()
    mantissa_epoch(ds, args.seed + 1000)
    warm_m = time.perf_counter() - t
    ips = {"torch": [], "mantissa": []}
    for r in range(args.repeats):
        order = ("torch", "mantissa") if r % 2 == 0 else ("mantissa", "torch")
        for side in order:
            time.sleep(args.settle)
            n, dt = torch_epoch(dl) if side == "torch" else mantissa_epoch(ds, args.seed + r)
            if n != len(ds):
                raise RuntimeError(f"{side} epoch gave {n} images, expected {len(ds)}")
            ips[side].append(n / dt)
        print(
            f"  throughput round {r + 1}/{args.repeats}: torch {ips['torch'][-1]:.0f} img/s, "
            f"mantissa {ips['mantissa'][-1]:.0f} img/s",
            file=sys.stderr,
            flush=True,
        )
    del dl  # shuts the persistent workers down
    gc.collect()
    med = {s: statistics.median(v) for s, v in ips.items()}
    ratio = med["mantissa"] / med["torch"]
    print(
        f"\n## throughput: decode + RandomResizedCrop({CROP}, scale={SCALE}) + flip, batches of {BATCH}, "
        f"{len(ds)} JPEGs {PX}x{PX}, {args.workers} decode workers, {args.repeats} alternated round(s)\n"
    )
    print("| side | images/s median | min | max | untimed warm-up epoch | dataset build |")
    print("|---|---|---|---|---|---|")
    print(
        f"| torch DataLoader (persistent_workers=True, {args.workers} processes) | {med['torch']:.0f} | "
        f"{min(ips['torch']):.0f} | {max(ips['torch']):.0f} | {warm_t:.2f} s | {build_t:.2f} s (listing) |"
    )
    print(
        f"| mantissa FileBatches ({args.workers} threads) | {med['mantissa']:.0f} | {min(ips['mantissa']):.0f} | "
        f"{max(ips['mantissa']):.0f} | {warm_m:.2f} s | {build_m:.2f} s (listing + headers) |"
    )
    print(f"\nratio mantissa / torch images/s: **{ratio:.2f}x** (above 1: mantissa faster)")
    return {
        "images": len(ds),
        "workers": args.workers,
        "torch_ips": ips["torch"],
        "mantissa_ips": ips["mantissa"],
        "torch_ips_median": med["torch"],
        "mantissa_ips_median": med["mantissa"],
        "ratio_mantissa_torch": ratio,
        "build_s": {"torch": build_t, "mantissa": build_m},
        "warmup_s": {"torch": warm_t, "mantissa": warm_m},
    }


# --------------------------------------------------------------------------- fit
def balanced_first(labels, n):
    """Indices (sorted) of ``n`` images: round-robin over the classes, each class's first images."""
    labels = np.asarray(labels)
    rank = np.empty(len(labels), dtype=np.int64)
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        rank[idx] = np.arange(len(idx))
    return np.sort(np.lexsort((labels, rank))[:n])


def part_fit(args, root):
    import mantissa_embed
    from mantissa_embed import Embedder, datasets, models

    mantissa_embed.set_num_threads(args.threads)
    full = datasets.ImageFolder(root, size=FIT_SIZE)
    n = min(args.fit_images, len(full))
    ds = full.subset(balanced_first(full.labels, n))
    y = ds.labels.copy()
    t = time.perf_counter()
    X = ds.load_all()
    load_s = time.perf_counter() - t
    warm = np.arange(min(BATCH, n))  # the subset is class-sorted: a few whole classes, positive pairs
    augment = None if args.array_augment == "none" else args.array_augment

    def run(side):
        emb = Embedder(models.cnn_embedder(), seed=0)
        if side == "files":
            emb.fit(ds.subset(warm), epochs=1, batch_size=BATCH)
            time.sleep(args.settle)
            t = time.perf_counter()
            emb.fit(ds, epochs=1, batch_size=BATCH)
        else:
            emb.fit(X[warm], y[warm], epochs=1, batch_size=BATCH, augment=augment)
            time.sleep(args.settle)
            t = time.perf_counter()
            emb.fit(X, y, epochs=1, batch_size=BATCH, augment=augment)
        return time.perf_counter() - t, float(emb.history_["loss"][-1])

    secs = {"files": [], "array": []}
    loss = {}
    for r in range(args.repeats):
        order = ("files", "array") if r % 2 == 0 else ("array", "files")
        for side in order:
            dt, loss[side] = run(side)
            secs[side].append(dt)
        print(
            f"  fit round {r + 1}/{args.repeats}: files {secs['files'][-1]:.2f} s, array {secs['array'][-1]:.2f} s",
            file=sys.stderr,
            flush=True,
        )
    med = {s: statistics.median(v) for s, v in secs.items()}
    ratio = med["files"] / med["array"]
    samples = math.ceil(n / BATCH) * BATCH  # the sampler fills the last batch
    print(
        f"\n## fit: one epoch of cnn_embedder (default recipe), {n} images at {FIT_SIZE} px, batch {BATCH}, "
        f"{args.threads} threads, {args.repeats} alternated round(s)\n"
    )
    print(f"| side | seconds median | min | images/s ({samples} samples) | last loss |")
    print("|---|---|---|---|---|")
    print(
        f"| files: ImageFolder(size={FIT_SIZE}), RandomResizedCrop + flip, {full.workers()} decode threads | "
        f"{med['files']:.2f} | {min(secs['files']):.2f} | {samples / med['files']:.0f} | {loss['files']:.4f} |"
    )
    print(
        f"| array: load_all() preloaded, augment={augment!r} | {med['array']:.2f} | {min(secs['array']):.2f} | "
        f"{samples / med['array']:.0f} | {loss['array']:.4f} |"
    )
    verdict = "met" if ratio <= 1.25 else "NOT met"
    print(
        f"\nratio files / array seconds: **{ratio:.2f}** (target <= 1.25: {verdict}); "
        f"load_all of the {n} images (untimed): {load_s:.2f} s ({n / load_s:.0f} img/s), "
        f"X {X.nbytes / 2**20:.0f} MB"
    )
    return {
        "images": n,
        "size": FIT_SIZE,
        "files_s": secs["files"],
        "array_s": secs["array"],
        "files_s_median": med["files"],
        "array_s_median": med["array"],
        "ratio_files_array": ratio,
        "samples": samples,
        "files_ips": samples / med["files"],
        "array_ips": samples / med["array"],
        "array_augment": augment,
        "load_all_s": load_s,
        "loss": loss,
    }


# --------------------------------------------------------------------------- memory


def child_memory(args):
    """In a subprocess: one fit epoch (``mem-fit``, saves the model) or one embed (``mem-embed``)
    of ``--root`` at 224 px; prints a JSON line."""
    import mantissa_embed
    from mantissa_embed import Embedder, datasets, models

    mantissa_embed.set_num_threads(args.threads)
    t = time.perf_counter()
    ds = datasets.ImageFolder(args.root, size=CROP)
    build_s = time.perf_counter() - t
    if args.child == "mem-fit":
        emb = Embedder(models.cnn_embedder(), seed=0)
        t = time.perf_counter()
        emb.fit(ds)
        secs = time.perf_counter() - t
        ru, hwm = peaks_mb()
        emb.save(args.model)
    else:
        emb = Embedder.load(args.model)
        t = time.perf_counter()
        Z = emb.embed(ds)
        secs = time.perf_counter() - t
        ru, hwm = peaks_mb()
        assert Z.shape[0] == len(ds) and np.isfinite(Z).all()
    samples = math.ceil(len(ds) / BATCH) * BATCH if args.child == "mem-fit" else len(ds)
    print(
        json.dumps(
            {
                "images": len(ds),
                "samples": samples,
                "seconds": secs,
                "build_s": build_s,
                "ru_maxrss_mb": ru,
                "vmhwm_mb": hwm,
            }
        )
    )


def run_child(args, what, root, model):
    cmd = [
        sys.executable,
        "-c",
        LAUNCHER,
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        what,
        "--root",
        root,
        "--model",
        model,
        "--threads",
        str(args.threads),
    ]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=6 * 3600, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{what} child failed (status {out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def part_memory(args, data_dir, root, tenth):
    rows = []
    for label, r in (("N", root), ("N/10", tenth)):
        model = os.path.join(data_dir, f"memory_model_{label.replace('/', '_')}.npz")
        for what in ("mem-fit", "mem-embed"):
            d = run_child(args, what, r, model)
            d.update(scale=label, job=what[4:])
            rows.append(d)
            print(
                f"  memory {what[4:]} on {d['images']} images: {d['seconds']:.1f} s, "
                f"ru_maxrss {d['ru_maxrss_mb']:.0f} MB",
                file=sys.stderr,
                flush=True,
            )
        if os.path.exists(model):
            os.remove(model)
    print(
        f"\n## memory: cnn_embedder at {CROP} px, default batch sizes (fit 64, embed 256, run in byte-bounded chunks), "
        f"one fresh subprocess per row, {args.threads} threads\n"
    )
    print("| job | images | samples | seconds | samples/s | peak RSS ru_maxrss | VmHWM | < 1 GB |")
    print("|---|---|---|---|---|---|---|---|")
    for d in rows:
        ok = "yes" if d["ru_maxrss_mb"] < 1024 else "no"
        hwm = "n/a" if d["vmhwm_mb"] is None else f"{d['vmhwm_mb']:.0f} MB"
        print(
            f"| {d['job']} ({d['scale']}) | {d['images']} | {d['samples']} | {d['seconds']:.1f} | "
            f"{d['samples'] / d['seconds']:.1f} | "
            f"{d['ru_maxrss_mb']:.0f} MB | {hwm} | {ok} |"
        )
    for job in ("fit", "embed"):
        a, b = (next(d for d in rows if d["job"] == job and d["scale"] == s) for s in ("N", "N/10"))
        small = (
            " (N/10 is below one batch: not comparable)"
            if b["images"] < (BATCH if job == "fit" else 256)
            else ""
        )
        print(
            f"\n{job}: peak at N / peak at N/10 = {a['ru_maxrss_mb'] / b['ru_maxrss_mb']:.2f}{small}", end=""
        )
    from mantissa_embed import models
    from mantissa_embed.embedder._inference import EMBED_BUDGET

    chunk = min(256, models.cnn_embedder().build((3, CROP, CROP)).max_batch_for(EMBED_BUDGET))
    ring = {b: 3 * b * 3 * CROP * CROP * 4 / 2**20 for b in (BATCH, chunk)}
    print(
        f"\n(fit: the class-balanced sampler fills every batch, so an epoch draws ceil(N / 64) * 64 "
        f"samples; samples/s counts them. The decode ring of prefetch + 1 = 3 float32 batches is "
        f"{ring[BATCH]:.0f} MB of the fit's peak, {ring[chunk]:.0f} MB of the embed's, whose chunks are "
        f"min(256, max_batch_for(EMBED_BUDGET)) = {chunk} images)"
    )
    return {"rows": rows, "target_mb": 1024}


# --------------------------------------------------------------------------- main
def blas_line():
    env = (
        ", ".join(
            f"{k}={v}"
            for k, v in sorted(os.environ.items())
            if k.startswith("OPENBLAS") or k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
        )
        or "none set"
    )
    try:
        from threadpoolctl import threadpool_info

        blas = (
            ", ".join(
                f"{i['internal_api']} {i['num_threads']} threads"
                for i in threadpool_info()
                if i.get("user_api") == "blas"
            )
            or "none found"
        )
    except ImportError:
        blas = "unknown (threadpoolctl not installed)"
    return f"environment: {env}; numpy BLAS: {blas}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", choices=("throughput", "fit", "memory", "all"), default="all")
    p.add_argument("--n-images", type=int, default=20000, help="JPEGs to generate (default 20000)")
    p.add_argument("--fit-images", type=int, default=4000, help="images of the fit part (default 4000)")
    p.add_argument("--classes", type=int, default=100, help="class folders (default 100)")
    p.add_argument("--threads", type=int, default=2, help="engine / torch threads (default 2)")
    p.add_argument(
        "--workers", type=int, default=2, help="decode workers of the throughput part, both sides (2)"
    )
    p.add_argument(
        "--repeats", type=int, default=3, help="alternated rounds of throughput and fit (default 3)"
    )
    p.add_argument("--keep-dir", default=None, help="generate the images here and reuse them in later runs")
    p.add_argument(
        "--array-augment",
        choices=("none", "hflip"),
        default="none",
        help="fit part, array side: no augmentation (default) or the library's array flip",
    )
    p.add_argument("--settle", type=float, default=0.2, help="seconds of sleep before each timed run (0.2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-peak", action="store_true", help="do not measure the FMA peak in the CPU line")
    p.add_argument("--child", choices=("mem-fit", "mem-embed"), help=argparse.SUPPRESS)
    p.add_argument("--root", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child_memory(args)
        return 0
    if args.n_images < 2 * args.classes:
        p.error(f"--n-images must be at least 2 per class ({2 * args.classes} for --classes {args.classes})")
    if args.repeats < 1 or args.threads < 1 or args.workers < 1:
        p.error("--repeats, --threads and --workers must be >= 1")

    sys.path.insert(0, HERE)
    import PIL

    import mantissa_embed
    from _machine import cpu_model, describe

    print(
        f"# bench_image_files: mantissa_embed {mantissa_embed.__version__}, numpy {np.__version__}, "
        f"Pillow {PIL.__version__}, python {platform.python_version()}"
    )
    cpu_line = describe(args.threads, peak=float("nan") if args.no_peak else None)
    print(cpu_line.replace("float32 FMA peak nan GFLOP/s", "FMA peak not measured (--no-peak)"))
    print(blas_line())
    print(
        f"threads={args.threads} workers={args.workers} repeats={args.repeats} n_images={args.n_images} "
        f"fit_images={args.fit_images} classes={args.classes}; load average at start {os.getloadavg()[0]:.2f} "
        f"({os.cpu_count()} CPUs)"
    )
    data_dir, root, tenth, gen = prepare_data(args)
    result = {
        "bench": "image_files",
        "cpu": cpu_model(),
        "threads": args.threads,
        "n_images": args.n_images,
        "classes": args.classes,
        "generation": gen,
    }
    how = (
        "reused from --keep-dir (generated earlier in {:.1f} s)" if gen["reused"] else "generated in {:.1f} s"
    )
    print(
        f"data: {args.n_images} JPEGs {PX}x{PX} q{QUALITY}, {gen['bytes'] / 2**20:.0f} MB "
        f"({gen['bytes'] / args.n_images / 1024:.1f} kB each), {how.format(gen['seconds'])}, not timed; {data_dir}"
    )
    try:
        parts = ("throughput", "fit", "memory") if args.part == "all" else (args.part,)
        if "throughput" in parts:
            result["throughput"] = part_throughput(args, root)
        if "fit" in parts:
            result["fit"] = part_fit(args, root)
            gc.collect()
        if "memory" in parts:
            result["memory"] = part_memory(args, data_dir, root, tenth)
    finally:
        if not args.keep_dir:
            shutil.rmtree(data_dir, ignore_errors=True)
    load = os.getloadavg()[0]
    busy = load > (os.cpu_count() or 1)
    print(
        f"\nload average at end {load:.2f} ({'WARNING: busy machine, timings unreliable' if busy else 'ok'})"
    )
    result["load_end"] = load
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
