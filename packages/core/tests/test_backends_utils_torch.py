"""``pullback.backends``' switch modules, ``pullback.utils.checkpoint``, ``pullback.random`` and
the data-loading module paths, used as ported scripts use torch's."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import pullback as pb

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of these behaviours")


def test_backend_switch_modules_import_and_keep_what_is_set_as_torch_s():
    for lib in (torch, pb):
        cudnn = importlib.import_module(f"{lib.__name__}.backends.cudnn")
        assert cudnn is lib.backends.cudnn
        with cudnn.flags(enabled=True, benchmark=True, deterministic=True):
            assert cudnn.benchmark and cudnn.deterministic
        assert not cudnn.benchmark and not cudnn.deterministic
        lib.backends.cuda.matmul.allow_tf32 = True
        assert lib.backends.cuda.matmul.allow_tf32
        lib.backends.cuda.matmul.allow_tf32 = False
        lib.backends.cuda.enable_flash_sdp(False)
        assert not lib.backends.cuda.flash_sdp_enabled()
        lib.backends.cuda.enable_flash_sdp(True)
        lib.backends.mha.set_fastpath_enabled(False)
        assert not lib.backends.mha.get_fastpath_enabled()
        lib.backends.mha.set_fastpath_enabled(True)
    for name in ("cudnn.enabled", "cudnn.allow_tf32", "mkldnn.enabled", "opt_einsum.enabled",
                 "cuda.matmul.allow_tf32", "cuda.matmul.allow_fp16_reduced_precision_reduction"):
        first, *rest = name.split(".")
        ours, theirs = getattr(pb.backends, first), getattr(torch.backends, first)
        for part in rest:
            ours, theirs = getattr(ours, part), getattr(theirs, part)
        assert ours == theirs, name
    assert pb.backends.cudnn.is_available() is False and pb.backends.cudnn.version() is None
    assert pb.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert pb.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")


def test_the_device_registry_is_still_pullback_backends():
    from pullback.backends import Device, get_backend

    assert get_backend("cpu").name == "cpu" and Device("cpu") is pb.device("cpu")


class _Block(torch.nn.Module):
    pass


def test_utils_checkpoint_takes_pytorch_s_keywords_and_gives_the_same_gradients():
    from pullback.utils.checkpoint import checkpoint, checkpoint_sequential

    def f(x, scale=1.0):
        return (x * x).tanh() * scale

    grads = []
    for wrap in (lambda x: f(x, scale=2.0),
                 lambda x: checkpoint(f, x, use_reentrant=False, scale=2.0)):
        x = pb.tensor([0.5, -1.0, 2.0], requires_grad=True)
        wrap(x).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0])
    import pullback.nn as nn

    pb.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2), nn.ReLU())
    x = pb.randn(5, 3)
    np.testing.assert_allclose(checkpoint_sequential(model, 2, x).detach().numpy(),
                               model(x).detach().numpy())


def test_fork_rng_restores_the_generator_as_torch_s():
    for lib in (torch, pb):
        lib.manual_seed(3)
        with lib.random.fork_rng():
            lib.rand(4)
        after = lib.rand(2)
        lib.manual_seed(3)
        np.testing.assert_array_equal(lib.rand(2).numpy(), after.numpy())


@pytest.mark.parametrize("path, names", [
    ("utils.data.dataloader", ["DataLoader", "default_collate", "default_convert",
                               "get_worker_info"]),
    ("utils.data.sampler", ["RandomSampler", "BatchSampler", "SequentialSampler"]),
    ("utils.data.dataset", ["Dataset", "TensorDataset", "Subset", "random_split"]),
    ("utils.data._utils.collate", ["default_collate", "default_convert"]),
    ("utils.data.distributed", ["DistributedSampler"]),
    ("utils.data", ["DistributedSampler"]),
    ("utils.dlpack", ["from_dlpack"]),
])
def test_data_loading_names_import_from_pytorch_s_paths(path, names):
    for name in names:
        ours = getattr(importlib.import_module(f"pullback.{path}"), name)
        theirs = getattr(importlib.import_module(f"torch.{path}"), name)
        assert callable(ours) and callable(theirs)
        assert ours.__name__ == theirs.__name__
