"""Exception classes against PyTorch beyond the op database (core's ``test_error_classes.py``
runs every error case of the op database): tensor conversions, creation, padding and
interpolation modes, layers, losses, autograd and state dicts. Where PyTorch raises
RuntimeError, ValueError, TypeError, IndexError or NotImplementedError, pullback's typed error
is catchable as the same built-in class."""

from __future__ import annotations

from typing import Any, Callable

import pytest

import pullback

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")


def _backward_twice(lib: Any) -> None:
    y = (lib.ones(2, requires_grad=True) * 2).sum()
    y.backward()
    y.backward()


CASES: dict[str, Callable[[Any, Any], Any]] = {
    "item_of_two": lambda L, F: L.ones(2).item(),
    "bool_of_two": lambda L, F: bool(L.ones(2)),
    "float_of_two": lambda L, F: float(L.ones(2)),
    "int_of_two": lambda L, F: int(L.ones(2)),
    "linspace_negative_steps": lambda L, F: L.linspace(0, 1, -1),
    "linspace_float_steps": lambda L, F: L.linspace(0, 1, 2.5),
    "zeros_negative": lambda L, F: L.zeros(-1),
    "ones_negative": lambda L, F: L.ones(2, -3),
    "randn_negative": lambda L, F: L.randn(-2),
    "arange_wrong_direction": lambda L, F: L.arange(0, 5, -1),
    "randint_empty_range": lambda L, F: L.randint(5, 2, (3,)),
    "pad_unknown_mode": lambda L, F: F.pad(L.ones(1, 1, 3), (1, 1), mode="nope"),
    "interpolate_unknown_mode": lambda L, F: F.interpolate(L.ones(1, 1, 4), scale_factor=2,
                                                           mode="nope"),
    "conv_unknown_padding_mode": lambda L, F: L.nn.Conv2d(1, 1, 3, padding_mode="nope"),
    "view_wrong_size": lambda L, F: L.ones(6).view(4),
    "index_out_of_range": lambda L, F: L.ones(3)[5],
    "cat_nothing": lambda L, F: L.cat([]),
    "stack_mismatch": lambda L, F: L.stack([L.ones(2), L.ones(3)]),
    "matmul_mismatch": lambda L, F: L.ones(2, 3) @ L.ones(2, 3),
    "dim_out_of_range": lambda L, F: L.ones(2).sum(3),
    "in_place_float_into_long": lambda L, F: L.ones(2, dtype=L.long).mul_(1.5),
    "softmax_dim_out_of_range": lambda L, F: F.softmax(L.ones(2, 2), dim=5),
    "cross_entropy_class_out_of_range": lambda L, F: F.cross_entropy(L.ones(2, 3),
                                                                     L.tensor([0, 5])),
    "embedding_out_of_range": lambda L, F: F.embedding(L.tensor([5]), L.ones(3, 2)),
    "one_hot_negative": lambda L, F: F.one_hot(L.tensor([-1]), 3),
    "unknown_reduction": lambda L, F: F.mse_loss(L.ones(2), L.ones(2), reduction="nope"),
    "dropout_p_above_one": lambda L, F: F.dropout(L.ones(2), p=1.5),
    "ragged_data": lambda L, F: L.tensor([[1, 2], [3]]),
    "string_data": lambda L, F: L.tensor("a"),
    "expand_wrong_size": lambda L, F: L.ones(2, 3).expand(4, 3),
    "permute_repeated_dim": lambda L, F: L.ones(2, 3).permute(0, 0),
    "multinomial_negative_weight": lambda L, F: L.multinomial(L.tensor([-1.0, 1.0]), 1),
    "backward_twice": lambda L, F: _backward_twice(L),
    "backward_of_non_scalar": lambda L, F: (L.ones(2, requires_grad=True) * 2).backward(),
    "integer_requires_grad": lambda L, F: L.ones(2, dtype=L.long, requires_grad=True),
    "load_state_dict_missing_keys": lambda L, F: L.nn.Linear(2, 2).load_state_dict({}),
    "load_state_dict_wrong_shape": lambda L, F: L.nn.Linear(2, 2).load_state_dict(
        {"weight": L.ones(3, 3), "bias": L.ones(2)}),
    "linear_wrong_features": lambda L, F: L.nn.Linear(2, 2)(L.ones(3)),
    "max_pool_window_too_big": lambda L, F: F.max_pool2d(L.ones(1, 1, 2, 2), 3),
    "layer_norm_wrong_shape": lambda L, F: F.layer_norm(L.ones(2, 3), (4,)),
    "batch_norm_one_value": lambda L, F: F.batch_norm(L.ones(1, 3), None, None, training=True),
    "conv_wrong_channels": lambda L, F: F.conv2d(L.ones(1, 2, 4, 4), L.ones(1, 3, 3, 3)),
    "attention_wrong_shapes": lambda L, F: F.scaled_dot_product_attention(
        L.ones(1, 2, 3), L.ones(1, 2, 4), L.ones(1, 2, 4)),
    "module_assign_wrong_type": lambda L, F: setattr(L.nn.Linear(2, 2), "weight", L.ones(2)),
    "sequential_index_out_of_range": lambda L, F: L.nn.Sequential(L.nn.ReLU())[3],
}
BUILTINS = (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError, KeyError,
            AttributeError)


def _raised(lib: Any, name: str) -> BaseException | None:
    try:
        CASES[name](lib, lib.nn.functional)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return exc
    return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_pullback_raises_what_pytorch_raises(name):
    theirs, ours = _raised(torch, name), _raised(pullback, name)
    assert theirs is not None, f"PyTorch accepts {name}: the case is wrong"
    expected = next(c for c in type(theirs).__mro__ if c in BUILTINS)
    assert isinstance(ours, expected), (
        f"{name}: PyTorch raises {type(theirs).__name__} ({theirs}), pullback "
        f"{type(ours).__name__} ({ours})")
