"""The layer classes of pullback.nn, one module per family."""

from .activation import (
    ELU, GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softplus, Tanh,
)
from .attention import MultiHeadAttention, MultiheadAttention
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import Dropout
from .embedding import Embedding
from .fold import Fold, Unfold
from .linear import Bilinear, Linear
from .loss import (
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, GaussianNLLLoss, HuberLoss, KLDivLoss, L1Loss,
    MSELoss, NLLLoss, SmoothL1Loss,
)
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm
from .padding import (
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
    ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
    ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d,
)
from .pixelshuffle import ChannelShuffle, PixelShuffle, PixelUnshuffle
from .pooling import (
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
    AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, LPPool1d, LPPool2d, LPPool3d, MaxPool1d,
    MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .shape import Flatten, Identity, Unflatten
from .transformer import TransformerBlock
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d",
    "BatchNorm2d", "Bilinear", "Conv1d", "Conv2d", "ConvTranspose2d", "CrossEntropyLoss",
    "Dropout", "ELU", "Embedding", "Flatten", "GELU", "GaussianNLLLoss", "GroupNorm",
    "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "LayerNorm", "LeakyReLU", "Linear",
    "LogSoftmax", "MSELoss", "MaxPool2d", "MultiHeadAttention", "MultiheadAttention", "NLLLoss",
    "RMSNorm", "ReLU", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax", "Softplus", "Tanh",
    "TransformerBlock", "Unflatten",
    # convolution, pooling
    "AdaptiveAvgPool1d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool3d", "Conv3d", "ConvTranspose1d", "ConvTranspose3d",
    "LPPool1d", "LPPool2d", "LPPool3d", "MaxPool1d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d",
    "MaxUnpool3d",
    # resampling, padding
    "ChannelShuffle", "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
    "ConstantPad2d", "ConstantPad3d", "Fold", "PixelShuffle", "PixelUnshuffle", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "Unfold", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    # recurrent
    "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase",
]
