"""get_config() is JSON-able and transform_from_config rebuilds an equal transform."""

import json

import numpy as np
import pytest

from mantissa_embed import transforms as T

CASES = [
    T.RandomAffine(12, translate=(0.09, 0.09), scale=(0.9, 1.1)),
    T.RandomAffine((-5, 20)),
    T.RandomCrop(24, padding=4),
    T.RandomCrop((3, 5), padding=(1, 2, 3, 4)),
    T.RandomCrop(5),
    T.RandomHorizontalFlip(0.25),
    T.Compose([T.RandomHorizontalFlip(), T.Compose([T.RandomCrop(28, padding=2)]), T.RandomAffine(3)]),
    T.Compose([]),
]


@pytest.mark.parametrize("t", CASES, ids=repr)
def test_config_round_trips_through_json(t):
    cfg = t.get_config()
    back = T.transform_from_config(json.loads(json.dumps(cfg)))
    assert type(back) is type(t) and back.get_config() == cfg
    x = np.random.default_rng(0).standard_normal((3, 2, 28, 28)).astype(np.float32)
    np.testing.assert_array_equal(back(x, np.random.default_rng(1)), t(x, np.random.default_rng(1)))


@pytest.mark.parametrize(
    "cfg,match",
    [
        ([], "must be a dict"),
        ({"p": 0.5}, "must be a dict with a 'type'"),
        ({"type": "Nope"}, "unknown type 'Nope'"),
        ({"type": "RandomHorizontalFlip", "q": 1}, "bad arguments"),
        ({"type": "Compose", "transforms": 3}, "must be a list"),
        ({"type": "Compose", "transforms": [{"type": "X"}]}, r"cfg\['transforms'\]\[0\] has unknown type"),
    ],
)
def test_bad_config(cfg, match):
    with pytest.raises(ValueError, match=match):
        T.transform_from_config(cfg)
