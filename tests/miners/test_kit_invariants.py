"""Every miner's output through the public kit: ``check_miner_invariants`` on hypothesis batches,
with and without a reference set."""

import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import miners
from mantissa_embed.testing import batches, check_miner_invariants

MINERS = {
    "TripletMarginMiner": lambda: miners.TripletMarginMiner(margin=0.5, type_of_triplets="semihard"),
    "TripletMarginMinerAll": lambda: miners.TripletMarginMiner(),
    "BatchHardMiner": lambda: miners.BatchHardMiner(),
    "PairMarginMiner": lambda: miners.PairMarginMiner(),
    "MultiSimilarityMiner": lambda: miners.MultiSimilarityMiner(),
    "HDCMiner": lambda: miners.HDCMiner(),
    "AngularMiner": lambda: miners.AngularMiner(),
    "BatchEasyHardMiner": lambda: miners.BatchEasyHardMiner(),
    "DistanceWeightedMiner": lambda: miners.DistanceWeightedMiner(seed=0),
    "UniformHistogramMiner": lambda: miners.UniformHistogramMiner(
        num_bins=5, pos_per_bin=2, neg_per_bin=2, seed=0
    ),
}
# Not here: MaximumLossMiner returns a subset of the batch's rows (PML's BaseSubsetBatchMiner), not
# tuples; EmbeddingsAlreadyPackagedAsTriplets needs N divisible by 3 (tests/miners cover both).


@pytest.mark.parametrize("name", sorted(MINERS))
@settings(max_examples=10, deadline=None, derandomize=True)
@given(data=st.data())
def test_miner_output_keeps_the_contract(name, data):
    b = data.draw(batches(n=st.integers(1, 8), dim=3, num_classes=3, mined=None))
    check_miner_invariants(MINERS[name](), b.embeddings, b.labels, b.ref_emb, b.ref_labels)
