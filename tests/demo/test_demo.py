"""The main job: ``python -m mantissa_embed demo`` runs and writes both PNGs."""

import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from mantissa_embed.__main__ import build_parser, load_demo_data, main, run_demo  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
METRICS = re.compile(r"precision@1 (\d\.\d{3})\s+R-precision (\d\.\d{3})\s+MAP@R (\d\.\d{3})")


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """One in-process run with the default --out (demo_out/ under the working directory)."""
    cwd = tmp_path_factory.mktemp("demo")
    old = os.getcwd()
    os.chdir(cwd)
    try:
        out = io.StringIO()
        code = run_demo(build_parser().parse_args(["demo", "--epochs", "2"]), out=out)
    finally:
        os.chdir(old)
    return code, out.getvalue(), cwd / "demo_out"


def _metric_rows(text, section="unseen classes 5-9"):
    """The three metric rows of one protocol's section of the demo output."""
    rows = {}
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(section))
    for line in lines[start + 1 : start + 4]:
        for name in ("trained embedding", "untrained network", "raw pixels"):
            if name in line and "precision@1" in line:
                rows[name] = METRICS.search(line)
    return rows


def test_demo_writes_both_pngs_and_prints_metrics(demo_run):
    code, text, out_dir = demo_run
    assert code == 0, text
    assert "epoch  1/2  loss" in text and "epoch  2/2  loss" in text
    for section in ("unseen classes 5-9", "held-out images of the training classes 0-4"):
        rows = _metric_rows(text, section)
        assert len(rows) == 3 and all(rows.values()), text
        for m in rows.values():
            assert all(0.0 <= float(v) <= 1.0 for v in m.groups())
    assert sorted(os.listdir(out_dir)) == ["embedding_manifold.png", "retrieval_gallery.png"]
    for name in ("embedding_manifold.png", "retrieval_gallery.png"):
        p = out_dir / name
        assert p.read_bytes()[:8] == PNG_MAGIC and p.stat().st_size > 1000


def test_demo_raw_pixel_line_is_the_independent_figure(demo_run):
    """The printed raw-pixel metrics equal a brute-force numpy 1-NN / MAP@R on the pixels."""
    _, text, _ = demo_run
    m = _metric_rows(text)["raw pixels"]
    _, _, X, y = load_demo_data("digits")
    F = X.reshape(len(X), -1).astype(np.float64)
    D = (F**2).sum(1)[:, None] + (F**2).sum(1)[None] - 2 * F @ F.T
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1, kind="stable")[:, :-1]
    p1 = float(np.mean(y[order[:, 0]] == y))
    R = np.bincount(y)[y] - 1
    rel = y[order] == y[:, None]
    ranks = np.arange(1, len(y))
    ap = [(np.cumsum(rel[i, : R[i]]) / ranks[: R[i]] * rel[i, : R[i]]).sum() / R[i] for i in range(len(y))]
    assert float(m.group(1)) == pytest.approx(p1, abs=1.5e-3)
    assert float(m.group(3)) == pytest.approx(np.mean(ap), abs=1.5e-3)


def test_demo_command_line(tmp_path):
    """The exact command a newcomer types, as a subprocess (small epochs)."""
    env = dict(os.environ, MANTISSA_EMBED_NUM_THREADS="2")
    r = subprocess.run(
        [sys.executable, "-m", "mantissa_embed", "demo", "--epochs", "1", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "unseen classes 5-9" in r.stdout and "wrote" in r.stdout
    assert sorted(os.listdir(tmp_path)) == ["embedding_manifold.png", "retrieval_gallery.png"]


def test_demo_missing_mnist_says_how_to_fetch(tmp_path, capsys):
    code = main(["demo", "--dataset", "mnist", "--data-dir", str(tmp_path / "empty"), "--out", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert "python -m mantissa_embed.datasets download mnist" in err
    assert not (tmp_path / "embedding_manifold.png").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--epochs", "0"],
        ["demo", "--lr", "-1"],
        ["demo", "--dataset", "cifar"],
        ["demo", "--batch-size", "x"],
        [],
    ],
)
def test_demo_bad_arguments(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2


def test_demo_batch_size_one_is_a_clear_error(tmp_path, capsys):
    assert main(["demo", "--batch-size", "1", "--out", str(tmp_path)]) == 2
    assert "batch_size must be >= 2" in capsys.readouterr().err


def test_demo_out_is_an_existing_file(tmp_path, capsys):
    # refused before training, not with a FileExistsError traceback after the whole demo
    f = tmp_path / "afile"
    f.write_text("x")
    assert main(["demo", "--out", str(f)]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_demo_too_many_threads(capsys):
    with pytest.raises(SystemExit) as e:  # was a ValueError traceback from set_num_threads
        main(["demo", "--threads", "100000"])
    assert e.value.code == 2
    assert "must be <= 4096" in capsys.readouterr().err


def test_demo_without_matplotlib_fails_fast(tmp_path, capsys, monkeypatch):
    """Missing matplotlib: exit code 2 with the install command, before training, no --out created."""
    import mantissa_embed.embedder as embedder_mod

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setattr(embedder_mod.Embedder, "fit", lambda *a, **k: pytest.fail("trained before checking"))
    out = tmp_path / "out"
    code = main(["demo", "--epochs", "1", "--out", str(out)])
    assert code == 2
    assert 'pip install "mantissa-embed[viz]"' in capsys.readouterr().err
    assert not out.exists()


def test_demo_orl_faces_protocol(tmp_path):
    """--dataset orl_faces: subjects 1-30 train, 31-40 unseen, with verification metrics."""
    from pathlib import Path

    orl = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "orl_faces"
    if not orl.is_dir():
        pytest.skip(f"ORL faces not found at {orl} (clone the repository next to shared/)")
    out = io.StringIO()
    code = run_demo(
        build_parser().parse_args(
            [
                "demo",
                "--dataset",
                "orl_faces",
                "--data-dir",
                str(orl),
                "--epochs",
                "2",
                "--out",
                str(tmp_path),
            ]
        ),
        out=out,
    )
    text = out.getvalue()
    assert code == 0, text
    assert (
        "unseen subjects 31-40 (100 images" in text
        and "held-out images of the training subjects 1-30" in text
    )
    assert text.count("ROC AUC") == 6 and "epoch  2/2" in text
    assert sorted(os.listdir(tmp_path)) == ["embedding_manifold.png", "retrieval_gallery.png"]
