"""``pullback.nn.functional``: the stateless functions behind the layers (PyTorch's
``torch.nn.functional``). Import it as ``import pullback.nn.functional as F``."""

from .activation import (
    celu, elu, gelu, glu, gumbel_softmax, hardshrink, hardsigmoid, hardswish, hardtanh,
    leaky_relu, log_softmax, logsigmoid, mish, prelu, relu, relu6, rrelu, selu, sigmoid, silu,
    softmax, softmin, softplus, softshrink, softsign, tanh, tanhshrink, threshold,
)
from .adaptive import (
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d,
    adaptive_max_pool2d, adaptive_max_pool3d,
)
from .attention import scaled_dot_product_attention
from .conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from .ctc import ctc_loss
from .distance import cosine_similarity, one_hot, pairwise_distance, pdist
from .dropout import (
    alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout,
)
from .embedding import embedding, embedding_bag
from .fold import channel_shuffle, fold, pixel_shuffle, pixel_unshuffle, unfold
from .interpolate import interpolate, upsample, upsample_bilinear, upsample_nearest
from .linear import bilinear, linear
from .loss_margin import (
    cosine_embedding_loss, hinge_embedding_loss, margin_ranking_loss, multi_margin_loss,
    multilabel_margin_loss, multilabel_soft_margin_loss, poisson_nll_loss, soft_margin_loss,
    triplet_margin_loss, triplet_margin_with_distance_loss,
)
from .loss import (
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, gaussian_nll_loss,
    huber_loss, kl_div, l1_loss, mse_loss, nll_loss, smooth_l1_loss,
)
from .normalization import (
    batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, normalize, rms_norm,
)
from .padding import pad
from .pooling import (
    avg_pool1d, avg_pool2d, avg_pool3d, lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d, max_pool2d,
    max_pool3d, max_unpool1d, max_unpool2d, max_unpool3d,
)
from .sampling import affine_grid, grid_sample
from .with_indices import (
    adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d_with_indices, max_pool1d_with_indices, max_pool2d_with_indices,
    max_pool3d_with_indices,
)

__all__ = [
    "adaptive_avg_pool2d", "avg_pool2d", "batch_norm", "bilinear", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "conv1d", "conv2d", "conv_transpose2d", "cross_entropy",
    "dropout", "elu", "embedding", "embedding_bag", "gaussian_nll_loss", "gelu", "group_norm",
    "hardtanh", "huber_loss",
    "kl_div", "l1_loss", "layer_norm", "leaky_relu", "linear", "log_softmax", "max_pool2d",
    "mse_loss", "nll_loss", "relu", "rms_norm", "scaled_dot_product_attention", "sigmoid",
    "silu", "smooth_l1_loss", "softmax", "softplus", "tanh",
    # convolution, pooling, padding
    "adaptive_avg_pool1d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "avg_pool1d", "avg_pool3d", "conv3d", "conv_transpose1d",
    "conv_transpose3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d", "max_pool3d",
    "max_unpool1d", "max_unpool2d", "max_unpool3d", "pad",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    # resampling
    "affine_grid", "channel_shuffle", "fold", "grid_sample", "interpolate", "pixel_shuffle",
    "pixel_unshuffle", "unfold", "upsample", "upsample_bilinear", "upsample_nearest",
    # activations
    "celu", "glu", "gumbel_softmax", "hardshrink", "hardsigmoid", "hardswish", "logsigmoid",
    "mish", "prelu", "relu6", "rrelu", "selu", "softmin", "softshrink", "softsign", "tanhshrink",
    "threshold",
    # dropout, normalization, distances
    "alpha_dropout", "cosine_similarity", "dropout1d", "dropout2d", "dropout3d",
    "feature_alpha_dropout", "instance_norm", "local_response_norm", "normalize", "one_hot",
    "pairwise_distance", "pdist",
    # losses
    "cosine_embedding_loss", "ctc_loss", "hinge_embedding_loss", "margin_ranking_loss",
    "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
    "poisson_nll_loss", "soft_margin_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]
