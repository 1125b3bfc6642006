"""PyTorch-style modules: torch.nn's constructor arguments, state_dict names and module API, so a
model written as torch and torchvision write it loads a torch state_dict unchanged (zero-copy).

Parameters and buffers are kiln Tensors held by name; when kiln.compile traces a module, or a
function that calls one, each is read as F.constant_external under a dotted name registered in the
callable's session (shared, not copied; replaced tensors are set again before the next call).
kiln runs inference: modules start in training mode as torch's do, and a forward whose
training mode computes something else (dropout, batch statistics that update running ones) is
refused until .eval() is called. Argument values kiln cannot honour are refused by name."""

from .module import Module, IncompatibleKeys
from .container import Sequential, ModuleList, ModuleDict
from .linear import Identity, Linear
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .upsampling import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d
from .pooling import MaxPool2d, AvgPool2d, AdaptiveAvgPool2d
from .normalization import BatchNorm2d, GroupNorm, InstanceNorm2d, LayerNorm, RMSNorm
from .sparse import Embedding
from .dropout import Dropout
from .transformer import MultiheadAttention, TransformerEncoderLayer, TransformerEncoder
from .activation import (ReLU, ReLU6, GELU, SiLU, Sigmoid, Tanh, Hardsigmoid, Hardswish, LeakyReLU, ELU, Softplus,
                         Softmax, LogSoftmax)
from .flatten import Flatten

__all__ = ["Module", "IncompatibleKeys", "Sequential", "ModuleList", "ModuleDict", "Identity", "Linear", "Conv1d", "Conv2d",
           "ConvTranspose2d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "MaxPool2d", "AvgPool2d",
           "AdaptiveAvgPool2d", "BatchNorm2d", "GroupNorm", "InstanceNorm2d", "LayerNorm", "RMSNorm", "Embedding",
           "Dropout", "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "ReLU", "ReLU6",
           "GELU", "SiLU", "Sigmoid", "Tanh", "Hardsigmoid", "Hardswish", "LeakyReLU", "ELU", "Softplus", "Softmax",
           "LogSoftmax", "Flatten"]
