"""PyTorch's sparse COO calls, computed densely: ``torch.sparse_coo_tensor``, ``torch.spmm``,
``Tensor.to_sparse()`` and ``Tensor.to_dense()``.

pullback has no sparse layout. Graph programs (pytorch/examples' GCN and GAT) build their
normalized adjacency matrices with these calls; here they give the dense tensors of the same
values, so the programs run and compute the same numbers (duplicate coordinates are summed, as
coalescing does), with the memory of a dense matrix. ``is_sparse`` stays False: the tensors
are dense.
"""

from __future__ import annotations

from typing import Any

from . import _ops
from .creation import as_tensor, zeros
from .errors import ShapeError
from .tensor import Tensor


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None,
                      device: Any = None, requires_grad: bool = False,
                      check_invariants: bool | None = None, is_coalesced: bool | None = None) \
        -> Tensor:
    """The dense tensor that PyTorch's sparse COO tensor of these ``indices`` (ndim x nnz) and
    ``values`` (nnz, ...) stands for; ``size`` defaults to the smallest that holds them.

    Example:
        >>> import pullback
        >>> pullback.sparse_coo_tensor([[0, 1, 1], [2, 0, 0]], [3.0, 4.0, 5.0], (2, 3))
        tensor([[0., 0., 3.],
                [9., 0., 0.]])
    """
    index = as_tensor(indices).long()
    values = as_tensor(values, dtype=dtype, device=device)
    if index.ndim != 2 or index.shape[1] != values.shape[0]:
        raise ShapeError(f"sparse_coo_tensor: indices of shape {index.shape} do not match "
                         f"values of shape {values.shape} (indices are ndim x nnz)")
    sparse_dims = index.shape[0]
    if size is None:
        size = tuple(int(n) + 1 for n in index.amax(1).tolist()) + tuple(values.shape[1:])
    size = tuple(size)
    flat = zeros(index.shape[1], dtype="int64")
    for dim in range(sparse_dims):  # row-major position of each coordinate
        flat = flat * size[dim] + index[dim]
    cells = 1
    for n in size[:sparse_dims]:
        cells *= n
    dense = zeros((cells, *size[sparse_dims:]), dtype=values.dtype, device=values.device)
    out = _ops.index_add(dense, 0, flat, values).reshape(size)
    if requires_grad:
        out.requires_grad_(True)
    return out


def spmm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """``torch.spmm``: the matrix product of a (sparse, here dense) matrix and a dense one."""
    return _ops.mm(mat1, mat2)


def to_sparse(tensor: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``Tensor.to_sparse()``: a copy (differentiable) of the same values, dense here."""
    return _ops.clone(tensor)


def to_dense(tensor: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``Tensor.to_dense()``: the tensor itself (it is dense already), as PyTorch for a
    strided tensor."""
    return tensor
