"""``nn.DataParallel``/``nn.parallel.data_parallel`` on a machine without GPUs, and the helper
paths custom layers import (``nn.modules.utils._pair``, ``consume_prefix_in_state_dict_if_present``,
``nn.attention.sdpa_kernel``, ``nn.utils.clip_grad``), against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
import pullback.nn as pnn

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")


def _twins():
    torch.manual_seed(0)  # unseeded, the weights followed the test order: an output near 0
    theirs = torch.nn.Linear(3, 2)
    ours = pnn.Linear(3, 2)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def test_data_parallel_without_gpus_is_the_module_as_pytorch_s():
    ours, theirs = _twins()
    wrapped = {"pullback": pnn.DataParallel(ours), "torch": torch.nn.DataParallel(theirs)}
    assert wrapped["pullback"].module is ours and wrapped["torch"].module is theirs
    assert wrapped["pullback"].device_ids == wrapped["torch"].device_ids == []
    assert list(wrapped["pullback"].state_dict()) == list(wrapped["torch"].state_dict())
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(wrapped["pullback"](pullback.tensor(x)).detach().numpy(),
                               wrapped["torch"](torch.tensor(x)).detach().numpy(), rtol=1e-6,
                               atol=1e-7)
    for lib, module in ((torch, theirs), (pullback, ours)):  # refused without GPUs, as torch
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            lib.nn.parallel.data_parallel(module, lib.tensor(x))
    from pullback.nn.modules.utils import consume_prefix_in_state_dict_if_present as ours_strip
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present as torch_strip

    states = {"pullback": wrapped["pullback"].state_dict(), "torch": wrapped["torch"].state_dict()}
    ours_strip(states["pullback"], "module.")
    torch_strip(states["torch"], "module.")
    assert list(states["pullback"]) == list(states["torch"]) == ["weight", "bias"]
    ours.load_state_dict(states["pullback"])


def test_distributed_data_parallel_is_reached_at_pytorch_s_paths():
    pytest.importorskip("pullback.distributed", reason="pullback-distributed is not installed")
    from pullback.distributed import DistributedDataParallel
    from pullback.nn.parallel import DistributedDataParallel as at_parallel
    from pullback.nn.parallel.distributed import DistributedDataParallel as at_module

    assert at_parallel is at_module is DistributedDataParallel


@pytest.mark.parametrize("value", [3, (2, 5), [1, 2, 3]])
def test_ntuple_helpers_as_pytorch_s(value):
    from pullback.nn.modules import utils as ours
    from torch.nn.modules import utils as theirs

    for name in ("_single", "_pair", "_triple", "_quadruple"):
        assert getattr(ours, name)(value) == getattr(theirs, name)(value)


def test_sdpa_kernel_and_backends_are_accepted():
    from pullback.nn.attention import SDPBackend, sdpa_kernel

    theirs = torch.nn.attention.SDPBackend.__members__
    assert {b.name: b.value for b in SDPBackend} == {n: int(v) for n, v in theirs.items()}
    q = pullback.ones(1, 2, 4)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        out = pnn.functional.scaled_dot_product_attention(q, q, q)
    assert tuple(out.shape) == (1, 2, 4)
    with pytest.raises(ValueError), sdpa_kernel(["flash"]):
        pass


def test_clip_grad_module_path():
    pytest.importorskip("pullback.optim", reason="clipping is pullback-optim's")
    from pullback.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_

    p = pnn.Parameter(pullback.ones(4))
    p.grad = pullback.full((4,), 3.0)
    assert abs(float(clip_grad_norm_([p], 1.0)) - 6.0) < 1e-6
    clip_grad_value_([p], 0.1)
    assert float(p.grad.abs().max()) <= 0.1 + 1e-7
