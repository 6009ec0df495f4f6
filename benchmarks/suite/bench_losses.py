"""Every loss (forward + backward: one call returns the loss and dL/d embeddings) and every miner
that ``mantissa_embed.losses`` / ``mantissa_embed.miners`` export, at N = 256 and 1024, D = 128,
16 classes, default constructor arguments.

The lists are read from the packages' ``__all__`` when asv imports this module, so a loss added
to the package is benchmarked without editing this file. A class whose constructor needs an
argument ``common.construct`` does not know, or which cannot be called as
``loss(x, labels)`` / ``loss(x, ref_emb=...)`` / ``loss(x)`` / ``miner(x, labels)``, is reported as skipped.
"""

from __future__ import annotations

from .common import construct, discover, embeddings

D = 128
SIZES = [256, 1024]

LOSSES = discover("mantissa_embed.losses", "BaseMetricLossFunction") or ["TripletMarginLoss"]
MINERS = discover("mantissa_embed.miners", "BaseMiner") or ["TripletMarginMiner"]


def _loss_call(obj, x, y, xr):
    """The first call form the loss accepts: ``(x, labels)``, then ``(x, ref_emb=xr)`` /
    ``(x, xr)`` (VICReg, SelfSupervisedLoss), then ``(x)`` (label-free losses such as
    ManifoldLoss). Raises NotImplementedError (asv skip) when none works."""
    forms = [lambda: obj(x, y), lambda: obj(x, ref_emb=xr), lambda: obj(x, xr), lambda: obj(x)]
    errors = []
    for f in forms:
        try:
            f()
            return f
        except (TypeError, ValueError, NotImplementedError) as e:
            errors.append(f"{type(e).__name__}: {e}")
    raise NotImplementedError(f"{type(obj).__name__}: no call form works ({'; '.join(errors)})")


class Losses:
    params = (LOSSES, SIZES)
    param_names = ["loss", "N"]
    timeout = 180

    def setup(self, loss, N):
        from mantissa_embed import losses

        x, y = embeddings(N, D)
        xr, _ = embeddings(N, D, seed=1)
        self.call = _loss_call(construct(getattr(losses, loss), d=D), x, y, xr)

    def time_forward_backward(self, loss, N):
        self.call()

    def peakmem_forward_backward(self, loss, N):
        self.call()


class Miners:
    params = (MINERS, SIZES)
    param_names = ["miner", "N"]
    timeout = 180

    def setup(self, miner, N):
        from mantissa_embed import miners

        if miner == "EmbeddingsAlreadyPackagedAsTriplets":
            N -= N % 3  # needs (anchor, positive, negative) rows
        x, y = embeddings(N, D)
        obj = construct(getattr(miners, miner), d=D)
        self.call = lambda: obj(x, y)
        try:
            self.call()
        except (TypeError, ValueError) as e:
            raise NotImplementedError(f"{miner}: {type(e).__name__}: {e}") from None

    def time_mine(self, miner, N):
        self.call()

    def peakmem_mine(self, miner, N):
        self.call()
