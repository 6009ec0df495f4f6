"""docs/recipes/finetune_orl.py: a ResNet-18 loaded from a safetensors file, trunk frozen, head
fine-tuned on the ORL faces s1-s30 and evaluated on s31-s40.

Skipped when the ORL data folder ``<repo>/../shared/data/orl_faces`` is absent (the data is not
shipped with the repository). No quality target is asserted: without a pretrained file the
trunk is random. What is asserted: the trunk after fit is bitwise the file's, the frozen
parameters and the BatchNorm statistics did not move, the head did, the metrics are finite
and in range.
"""

import math
from pathlib import Path

import numpy as np
import pytest
from docs.recipes import finetune_orl

from mantissa_embed.datasets.orl_faces import read_pgm
from mantissa_embed.models.weights import read_safetensors

REPO = Path(__file__).resolve().parents[2]
ORL_DIR = REPO.parent / "shared" / "data" / "orl_faces"

pytestmark = pytest.mark.skipif(
    not (ORL_DIR / "s1").is_dir(),
    reason=f"ORL faces not found: checked {ORL_DIR} (expected s1/ ... s40/ there, i.e. the repository "
    "cloned next to shared/); the recipe's steps are tested without data in "
    "tests/models/ and tests/embedder/",
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("finetune_orl")
    return finetune_orl.main(data_dir=ORL_DIR, epochs=2, work_dir=work, verbose=False)


def test_the_split_is_by_folder_name():
    X, y, folders = finetune_orl.load_faces(ORL_DIR)
    assert X.shape == (400, 3, 112, 92) and X.dtype == np.float32
    assert np.array_equal(X[:, 0], X[:, 1]) and np.array_equal(X[:, 0], X[:, 2])
    train = np.isin(folders, finetune_orl.TRAIN_FOLDERS)
    test = np.isin(folders, finetune_orl.EVAL_FOLDERS)
    assert train.sum() == 300 and test.sum() == 100 and not (train & test).any()
    # the first image of subject s31 is the file s31/1.pgm
    first_eval = np.flatnonzero(folders == "s31")[0]
    assert np.array_equal(X[first_eval, 0], read_pgm(ORL_DIR / "s31" / "1.pgm"))


def test_trunk_is_the_file_and_frozen(run):
    assert run["standin_weights"] and run["weights"].is_file()
    file = read_safetensors(run["weights"])
    assert run["embedder"].net is run["net"]
    after = run["net"].state_arrays()
    trunk = [k for k in after if not k.startswith("head.")]
    assert trunk and set(trunk) <= set(file)
    for k in trunk:  # loaded, then unchanged by fit: bitwise the file's arrays
        assert np.array_equal(after[k], np.asarray(file[k], dtype=np.float32)), k
        assert np.array_equal(after[k], run["state_before"][k]), k
    assert not any(k.startswith("head.") for k in file)
    assert {"bn1.running_mean", "layer4.1.bn2.running_var"} <= set(trunk)


def test_head_moved_and_metrics_in_range(run):
    net_after = run["net"].state_arrays()
    for k in ("head.weight", "head.bias"):
        assert not np.array_equal(net_after[k], run["state_before"][k]), k
    for which in ("untrained_head", "trained_head"):
        m = run[which]
        for name in ("AUC", "EER", "P@1", "MAP@R"):
            assert math.isfinite(m[name]) and 0.0 <= m[name] <= 1.0, (which, name, m[name])
    assert run["fit_seconds"] > 0 and run["epochs"] == 2
