"""``torch.nn.modules.channelshuffle``'s path: ``ChannelShuffle`` (defined in ``pixelshuffle``)."""

from .pixelshuffle import ChannelShuffle

__all__ = ["ChannelShuffle"]
