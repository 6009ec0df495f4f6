"""Index.add of zero rows: checked like any add (widths, the labels rule), stores nothing, uses no
ids, and does not commit an empty index to labels or to none; empty Python lists are empty
integer vectors for ids and labels."""

import numpy as np
import pytest

from mantissa_embed.index import Index


def test_zero_rows_with_labels_leave_an_empty_index_uncommitted():
    idx = Index(4).add(np.zeros((0, 4), np.float32), labels=np.array([], np.int64))
    assert len(idx) == 0 and idx.labels is None
    idx.add(np.ones((2, 4), np.float32))  # no labels: allowed, nothing was added with labels
    assert np.array_equal(idx.ids, [0, 1]) and idx.labels is None
    with pytest.raises(ValueError, match="labels given, but earlier additions had none"):
        idx.add(np.ones((1, 4), np.float32), labels=[3])


def test_empty_lists_are_empty_id_and_label_vectors():
    idx = Index(4).add(np.zeros((0, 4), np.float32), ids=[], labels=[])
    assert len(idx) == 0
    idx.add(np.ones((2, 4), np.float32), labels=[5, 6])
    assert np.array_equal(idx.labels, [5, 6]) and np.array_equal(idx.ids, [0, 1])
    with pytest.raises(TypeError, match="ids must be a 1-D integer array"):
        idx.add(np.ones((1, 4), np.float32), ids=[1.5], labels=[1])


def test_zero_rows_are_still_checked():
    labelled = Index(4).add(np.ones((2, 4), np.float32), labels=[1, 2])
    with pytest.raises(ValueError, match="labels missing"):
        labelled.add(np.zeros((0, 4), np.float32))
    with pytest.raises(ValueError, match="must have 4 columns"):
        Index(4).add(np.zeros((0, 3), np.float32))
    with pytest.raises(ValueError, match="ids must have 0 entries"):
        Index(4).add(np.zeros((0, 4), np.float32), ids=[1])
    idx = Index(4).add(np.ones((3, 4), np.float32))
    idx.add(np.zeros((0, 4), np.float32))
    idx.add(np.ones((1, 4), np.float32))
    assert np.array_equal(idx.ids, [0, 1, 2, 3])
