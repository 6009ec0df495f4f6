"""Recipe: fine-tune a ResNet-18 loaded from a safetensors file, trunk frozen, on the ORL faces
(run ``python -m docs.recipes.finetune_orl [--data-dir DIR] [--epochs N] [--weights PATH]``).

1. Weights: ``--weights`` names a safetensors (or ``.npz``) file with torchvision's ResNet-18
   names, e.g. torchvision's download converted as in docs/weights.md. Without it, a stand-in is
   written to a temporary folder: a *randomly initialised* ``models.resnet18(embed_dim=None)``
   (no head), saved with ``models.save_weights``. No pretrained file ships with the project, so
   the numbers below measure the pipeline, not what ImageNet features would give.
2. Data: ``datasets.load("orl_faces")`` at full resolution, 112 x 92, grey replicated to RGB.
   Training uses the subjects whose folder is ``s1`` .. ``s30``, evaluation ``s31`` .. ``s40``
   (the loader's label ``k`` is folder ``s{k+1}``).
3. Model: ``models.resnet18(embed_dim=64, weights=path)`` loads the trunk strictly; the file has
   no ``head.*`` entries, so the 64-d head keeps its initialisation. Everything but the head is
   frozen (``freeze`` / ``unfreeze("head")``) and every BatchNorm keeps its loaded running
   statistics (``freeze_batchnorm``). The images go to the Embedder as [0, 1] floats: it
   normalizes them with the trunk's ``input_mean`` / ``input_std`` (ImageNet's, as the
   pretrained weights expect) in ``fit`` and ``embed``. ``Embedder.fit`` then trains the head with the default
   loss (ProxyAnchor, AdamW) on class-balanced batches of 8 subjects x 5 faces, flipped
   horizontally at random. The head is the only trainable group, so ``lr_groups={"head": m}``
   would only scale its lr (with the random stand-in, ``m = 10`` overfitted the 30 training
   subjects faster: AUC 0.872 vs 0.897 after 20 epochs); it pays once ``layer4`` is unfrozen
   too, training at a lower lr than the head.
4. Evaluation on the 100 faces of the 10 unseen subjects: ROC AUC and EER over all 4950 pairs
   (Euclidean distances of the L2-normalised embeddings, ``verification_metrics``), precision@1
   and MAP@R (``retrieval_metrics``, each face querying the other 99), for the untrained head
   (the state from before fit, put back in place for one ``embed``) and the trained one, on
   the same trunk.

:func:`main` returns every number it prints, the Embedder and its net (trained in place), the
weights path and the net's state before fit.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from mantissa_embed import Embedder, datasets, models
from mantissa_embed.evaluation import retrieval_metrics, verification_metrics

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA_DIR = ROOT.parent / "shared" / "data" / "orl_faces"
INPUT_SHAPE = (3, 112, 92)
TRAIN_FOLDERS = tuple(f"s{k}" for k in range(1, 31))
EVAL_FOLDERS = tuple(f"s{k}" for k in range(31, 41))
EMBED_DIM = 64
CONVERT_HINT = (
    "to use torchvision's ImageNet weights, convert resnet18-f37072fd.pth once with torch "
    "(the one-liner in docs/weights.md, 'Converting a torch checkpoint') and pass "
    "--weights resnet18.safetensors"
)


def cpu_model():
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_faces(data_dir):
    """(X (400, 3, 112, 92) float32 in [0, 1], y (400,) int64, folders (400,) str "s1".."s40")."""
    X, y = datasets.load("orl_faces", data_dir=data_dir)
    folders = np.array([f"s{k + 1}" for k in y])  # label k <- folder s{k+1} (datasets/orl_faces.py)
    return np.repeat(X, 3, axis=1), y, folders


def write_standin_weights(path, seed=0):
    """A random ResNet-18 trunk (no head) saved as safetensors, standing in for torchvision's."""
    net = models.resnet18(embed_dim=None, input_shape=INPUT_SHAPE, seed=seed)
    models.save_weights(net, path)
    return Path(path)


def evaluate(E, y):
    """P@1, MAP@R (each face queries the others) and ROC AUC, EER over all pairs of E."""
    m = retrieval_metrics(E, y)
    i, j = np.triu_indices(len(y), 1)
    v = verification_metrics(np.linalg.norm(E[i].astype(np.float64) - E[j], axis=1), y[i] == y[j])
    return {
        "AUC": float(v["roc_auc"]),
        "EER": float(v["eer"]),
        "P@1": float(m["precision_at_1"]),
        "MAP@R": float(m["mean_average_precision_at_r"]),
    }


def main(data_dir=DEFAULT_DATA_DIR, epochs=20, weights=None, seed=0, work_dir=None, verbose=True):
    t0 = time.perf_counter()
    say = print if verbose else (lambda *a, **k: None)
    with tempfile.TemporaryDirectory() as tmp:
        if weights is None:
            weights = write_standin_weights(Path(work_dir or tmp) / "resnet18.safetensors", seed=seed)
            say(
                f"weights: {weights} holds RANDOM weights (models.resnet18 seed={seed}) standing in "
                f"for torchvision's pretrained ones;\n  {CONVERT_HINT}"
            )
            standin = True
        else:
            weights, standin = Path(weights), False
            say(f"weights: {weights}")

        X, y, folders = load_faces(data_dir)
        train, test = np.isin(folders, TRAIN_FOLDERS), np.isin(folders, EVAL_FOLDERS)
        say(
            f"ORL faces {X.shape[2]}x{X.shape[3]}, grey -> RGB: train {int(train.sum())} images "
            f"(s1-s30), eval {int(test.sum())} images (s31-s40)"
        )

        net = models.resnet18(embed_dim=EMBED_DIM, weights=weights, input_shape=INPUT_SHAPE, seed=seed)
        net.freeze()
        net.unfreeze("head")
        net.freeze_batchnorm()
        trainable = sum(p.size for p in net.parameters() if p.requires_grad)
        say(f"ResNet-18 + head({EMBED_DIM}): {trainable:,} trainable of {net.num_parameters():,} parameters")
        emb = Embedder(net, m_per_class=5, seed=seed)
        state_before = {k: np.array(v) for k, v in net.state_arrays().items()}

        t_fit = time.perf_counter()
        emb.fit(X[train], y[train], epochs=epochs, batch_size=40, augment="hflip")
        fit_seconds = time.perf_counter() - t_fit
        trained = evaluate(emb.embed(X[test]), y[test])
        # The untrained baseline goes through the same embed (its preprocessing included): the
        # state from before fit (the loaded trunk, the initial head) in place, then back.
        state_after = net.state_arrays()
        net.load_state_arrays(state_before)
        untrained = evaluate(emb.embed(X[test]), y[test])
        net.load_state_arrays(state_after)

    results = {
        "untrained_head": untrained,
        "trained_head": trained,
        "epochs": epochs,
        "fit_seconds": fit_seconds,
        "seconds_per_epoch": fit_seconds / epochs,
        "cpu": cpu_model(),
        "standin_weights": standin,
        "weights": Path(weights),
        "embedder": emb,
        "net": net,
        "state_before": state_before,
        "seconds": time.perf_counter() - t0,
    }
    say(f"unseen subjects s31-s40 (100 faces, 4950 pairs), {epochs} epochs on s1-s30:")
    for name in ("untrained_head", "trained_head"):
        say(f"  {name:15s} " + "  ".join(f"{k}={v:.3f}" for k, v in results[name].items()))
    say(
        f"fit {fit_seconds:.1f} s ({results['seconds_per_epoch']:.2f} s/epoch) on {results['cpu']}; "
        f"done in {results['seconds']:.1f} s"
    )
    if standin:
        say("(random stand-in trunk: these figures are not what pretrained weights would give)")
    return results


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m docs.recipes.finetune_orl", description=__doc__.split("\n")[0]
    )
    p.add_argument(
        "--data-dir", default=str(DEFAULT_DATA_DIR), help="folder holding s1/ .. s40/ (default: %(default)s)"
    )
    p.add_argument("--epochs", type=int, default=20, help="default: %(default)s")
    p.add_argument(
        "--weights",
        default=None,
        help="ResNet-18 trunk weights (.safetensors / .npz, torchvision names); default: a random stand-in",
    )
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    if a.weights is not None and not Path(a.weights).is_file():
        raise SystemExit(
            f"--weights {a.weights}: no such file; {CONVERT_HINT} (or leave --weights off for a "
            "random stand-in)"
        )
    main(data_dir=a.data_dir, epochs=a.epochs, weights=a.weights)
