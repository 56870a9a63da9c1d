"""Batching for a DataLoader: :func:`collate`, :func:`collate_tensors` and :func:`to_tensors`.

:func:`collate` is :meth:`TFRecordDataset.batch`'s stacking (NumPy arrays, ``bytes``,
SparseValue and RaggedValue) with one addition for PyTorch: a field whose values are
``torch.Tensor`` (what a ``transform`` returning tensors gives) is stacked with
``torch.stack``, as torch's ``default_collate`` does, and tensors of different shapes
are refused with the same "cannot batch" error that names the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np
import torch

from .._data import collate as _collate

__all__ = ["collate", "collate_tensors", "to_tensors"]


def to_tensors(value: Any) -> Any:
    """Numeric NumPy arrays (also inside dicts, lists, tuples) -> ``torch.Tensor``.

    ``bytes`` and object arrays of ``bytes`` stay as they are (torch has no string
    tensors), and so do :class:`SparseValue` and :class:`RaggedValue` (use their
    ``to_dense()`` / ``flat_values`` and ``row_splits`` to make tensors).
    """
    if isinstance(value, np.ndarray):
        if value.dtype == object or value.dtype.kind not in "biufc":
            return value
        if not value.flags.writeable:
            value = value.copy()
        return torch.from_numpy(value)
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return torch.from_numpy(np.asarray(value))
    if isinstance(value, dict):
        return {k: to_tensors(v) for k, v in value.items()}
    if type(value) is tuple:
        return tuple(to_tensors(v) for v in value)
    if isinstance(value, list):
        return [to_tensors(v) for v in value]
    return value


def collate(batch: Any) -> Any:
    """A DataLoader ``collate_fn`` that keeps NumPy, ``bytes`` and ragged rows (RaggedValue) and stacks tensors; shapes it cannot stack raise ``ValueError`` naming the key.

    torch's default turns NumPy arrays into tensors and raises on object arrays
    (``bytes`` features) and ragged shapes. With ``batch_size=N``, this stacks the N
    samples as :meth:`TFRecordDataset.batch` does (``ragged="auto"``):
    arrays of one shape into one array, rows that differ in their first dimension
    into a RaggedValue, ``bytes`` into a list. Values that are ``torch.Tensor`` (a
    ``transform`` that returns tensors) are stacked into one tensor with a new leading
    dimension, as torch's ``default_collate`` does; tensors of different shapes raise
    ``ValueError`` naming the key. With ``batch_size=None`` it passes each element
    through unchanged.
    """
    if not isinstance(batch, list):
        return batch
    return _stack_tensor_columns(_collate(batch), "")


def collate_tensors(batch: Any) -> Any:
    """:func:`collate`, then :func:`to_tensors` (numeric arrays become tensors, bytes stay)."""
    return to_tensors(collate(batch))


def _stack_tensor_columns(value: Any, path: str) -> Any:
    """Stack the lists of tensors that batching left in ``value`` (a batched structure).

    Batching keeps values it does not know as a list of the batch's values; a list
    that holds tensors is such a column of tensors.
    """
    if isinstance(value, dict):
        return {k: _stack_tensor_columns(v, f"{path}[{k!r}]") for k, v in value.items()}
    if type(value) is tuple:
        return tuple(_stack_tensor_columns(v, f"{path}[{j}]") for j, v in enumerate(value))
    if type(value) is list and any(isinstance(v, torch.Tensor) for v in value):
        return _stack(value, path)
    return value


def _stack(values: Sequence[Any], path: str) -> torch.Tensor:
    first_is_tensor = isinstance(values[0], torch.Tensor)
    odd = next(
        (j for j, v in enumerate(values) if isinstance(v, torch.Tensor) != first_is_tensor), None
    )
    if odd is not None:  # a mix of tensors and other values
        _refuse(
            path,
            f"element 0 is a {type(values[0]).__name__} and element {odd} a "
            f"{type(values[odd]).__name__}",
        )
    shape = values[0].shape
    odd = next((j for j, v in enumerate(values) if v.shape != shape), None)
    if odd is not None:
        _refuse(
            path,
            f"element 0 has shape {tuple(shape)} and element {odd} has shape "
            f"{tuple(values[odd].shape)}",
        )
    try:
        return torch.stack(list(values))
    except RuntimeError as err:  # tensors on different devices, or of dtypes torch cannot mix
        _refuse(path, str(err).split("\n", 1)[0])


def _refuse(path: str, what: str) -> NoReturn:
    where = f"key {path}" if path.startswith("['") and path.count("[") == 1 else path
    raise ValueError(
        f"cannot batch {where or 'the elements'}: {what}. Make the tensors' shapes equal "
        "in the transform, or return NumPy arrays (rows that differ in their first "
        "dimension then batch into a RaggedValue)"
    )
