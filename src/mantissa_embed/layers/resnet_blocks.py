"""torchvision's ResNet blocks with torchvision's names: ``BasicBlock`` and ``Bottleneck``."""

from __future__ import annotations

from .._validation import check_int
from .base_layer import Layer
from .batch_norm import BatchNorm2D
from .conv2d import Conv2D
from .residual import Residual

__all__ = ["BasicBlock", "Bottleneck"]


class _TorchvisionBlock(Residual):
    """A ``Residual`` whose children carry torchvision's names: the block's layers ``conv1``,
    ``bn1``, ... and the projection shortcut ``downsample.0`` (Conv2D 1x1, stride ``stride``,
    no bias) and ``downsample.1`` (BatchNorm2D), created at build when ``stride != 1`` or the
    channels change (torchvision's rule)."""

    expansion = 1
    _names: tuple[str, ...] = ()

    def __init__(self, planes, stride=1) -> None:
        self.planes = check_int(planes, "planes", minimum=1)
        self.stride = check_int(stride, "stride", minimum=1)
        super().__init__(self._block_layers())

    def _block_layers(self) -> list[Layer]:
        raise NotImplementedError

    @classmethod
    def from_config(cls, kwargs, where: str = "cfg"):
        return cls(**kwargs)

    def _config(self):
        return {"planes": self.planes, "stride": self.stride}

    def _describe(self) -> str:
        extra = f", stride={self.stride}" if self.stride != 1 else ""
        return f"{type(self).__name__}({self.planes}{extra})"

    def _child_name(self, branch, i):
        return self._names[i] if branch == "block" else f"downsample.{i}"

    def _shortcut_for(self, shape, out):
        if self._proj is not None:
            return self._proj
        if self.stride == 1 and shape[0] == out[0]:
            return []
        return [Conv2D(out[0], 1, stride=self.stride, bias=False), BatchNorm2D()]

    @property
    def downsample(self) -> list[Layer] | None:
        """The projection shortcut ``[Conv2D, BatchNorm2D]`` once built (None: the identity, or
        not built yet)."""
        return self._proj


class BasicBlock(_TorchvisionBlock):
    """torchvision's ResNet basic block (ResNet-18/34; He et al. 2016, "Deep Residual Learning
    for Image Recognition", CVPR): ``y = relu(bn2(conv2(relu(bn1(conv1(x))))) + identity(x))``.

    Parameters
    ----------
    planes : int >= 1
        Output channels (``expansion = 1``).
    stride : int >= 1, default 1
        Stride of ``conv1`` (and of the projection shortcut).

    Children, named as torchvision's (``named_parameters`` gives ``conv1.weight``,
    ``bn1.running_mean``, ``downsample.0.weight``, ``downsample.1.running_var``, ...):
    ``conv1`` = Conv2D(planes, 3, stride, pad=1, bias=False), ``bn1`` = BatchNorm2D(act="relu")
    (torchvision's separate ``relu`` has no parameters), ``conv2`` = Conv2D(planes, 3, pad=1,
    bias=False), ``bn2`` = BatchNorm2D(); ``downsample`` = [Conv2D(planes, 1, stride,
    bias=False), BatchNorm2D()] (``downsample.0``, ``downsample.1``), created at build when
    ``stride != 1`` or the input channels differ from ``planes`` (otherwise the identity).
    Input (N, C, H, W) float32 -> (N, planes, (H - 1)//stride + 1, (W - 1)//stride + 1).
    Forward, backward and inference fusion are ``Residual``'s. Raises TypeError/ValueError for
    bad ``planes`` / ``stride`` or a non (C, H, W) input.
    """

    expansion = 1
    _names = ("conv1", "bn1", "conv2", "bn2")

    def _block_layers(self) -> list[Layer]:
        p = self.planes
        return [
            Conv2D(p, 3, stride=self.stride, pad=1, bias=False),
            BatchNorm2D(act="relu"),
            Conv2D(p, 3, pad=1, bias=False),
            BatchNorm2D(),
        ]


class Bottleneck(_TorchvisionBlock):
    """torchvision's ResNet bottleneck block, v1.5 (ResNet-50; He et al. 2016, "Deep Residual
    Learning for Image Recognition", CVPR): ``y = relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1(x))))))))
    + identity(x))``, the stride on the 3x3 ``conv2`` (torchvision's placement, "ResNet v1.5";
    the paper strides the first 1x1).

    Parameters
    ----------
    planes : int >= 1
        Width of the 1x1 and 3x3 convolutions; the block outputs ``4 * planes`` channels
        (``expansion = 4``).
    stride : int >= 1, default 1
        Stride of ``conv2`` (and of the projection shortcut).

    Children, named as torchvision's: ``conv1`` = Conv2D(planes, 1, bias=False), ``bn1`` =
    BatchNorm2D(act="relu"), ``conv2`` = Conv2D(planes, 3, stride, pad=1, bias=False), ``bn2`` =
    BatchNorm2D(act="relu"), ``conv3`` = Conv2D(4 * planes, 1, bias=False), ``bn3`` =
    BatchNorm2D(); ``downsample`` = [Conv2D(4 * planes, 1, stride, bias=False), BatchNorm2D()],
    created at build when ``stride != 1`` or the input channels differ from ``4 * planes``.
    Input (N, C, H, W) float32 -> (N, 4 * planes, (H - 1)//stride + 1, (W - 1)//stride + 1).
    Raises TypeError/ValueError for bad ``planes`` / ``stride`` or a non (C, H, W) input.
    """

    expansion = 4
    _names = ("conv1", "bn1", "conv2", "bn2", "conv3", "bn3")

    def _block_layers(self) -> list[Layer]:
        p = self.planes
        return [
            Conv2D(p, 1, bias=False),
            BatchNorm2D(act="relu"),
            Conv2D(p, 3, stride=self.stride, pad=1, bias=False),
            BatchNorm2D(act="relu"),
            Conv2D(p * self.expansion, 1, bias=False),
            BatchNorm2D(),
        ]
