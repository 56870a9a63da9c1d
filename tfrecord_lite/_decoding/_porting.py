"""TensorFlow's tensor ops this library leaves to NumPy, each with its NumPy one-liner:
what ``tfr.X`` (or ``tfr.io.X``, ``tfr.data.X`` ...) answers for a name TensorFlow
has and this library does not (:func:`missing_name`).

Elements are NumPy values already, so these ops are NumPy calls; the table is
also in ``docs/coming-from-tensorflow.md`` ("Tensor ops: use NumPy"), which a
test keeps in step with :data:`NUMPY_FOR_TF`.
"""

from __future__ import annotations

from typing import Callable, NoReturn

__all__ = ["NUMPY_FOR_TF", "PORTING_DOCS", "missing_attributes", "missing_name"]

#: Where the porting table is.
PORTING_DOCS = "docs/coming-from-tensorflow.md, 'Tensor ops: use NumPy'"

#: TensorFlow name -> what to write instead (elements are NumPy arrays and bytes).
NUMPY_FOR_TF: dict[str, str] = {
    "reshape": "np.reshape(x, shape)",
    "cast": "np.asarray(x).astype(np.float32)",
    "constant": "np.asarray(value, dtype=...)",
    "convert_to_tensor": "np.asarray(value)",
    "stack": "np.stack(values, axis=0)",
    "concat": "np.concatenate(values, axis=0)",
    "shape": "np.shape(x)",
    "squeeze": "np.squeeze(x, axis)",
    "expand_dims": "np.expand_dims(x, axis)",
    "transpose": "np.transpose(x, perm)",
    "one_hot": "np.eye(depth, dtype=np.float32)[indices]",
    "zeros": "np.zeros(shape, dtype)",
    "ones": "np.ones(shape, dtype)",
    "argmax": "np.argmax(x, axis)",
    "reduce_sum": "np.sum(x, axis)",
    "reduce_mean": "np.mean(x, axis)",
    "reduce_max": "np.max(x, axis)",
    "py_function": "call the Python function: .map(fn) runs Python already",
    "numpy_function": "call the function: .map(fn) runs Python already",
}


def missing_name(module: str, name: str) -> NoReturn:
    """Raise the ``AttributeError`` for ``module.name``: pointing to NumPy and the
    porting table when TensorFlow has ``name``, the usual one otherwise."""
    instead = NUMPY_FOR_TF.get(name)
    if instead is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    raise AttributeError(
        f"module {module!r} has no attribute {name!r}: TensorFlow's tf.{name} is a NumPy "
        f"call here, since elements are NumPy values: {instead} (see {PORTING_DOCS})"
    )


def missing_attributes(module: str) -> Callable[[str], NoReturn]:
    """The module ``__getattr__`` of a TensorFlow-named namespace: :func:`missing_name`
    for the names it does not hold (``__getattr__ = missing_attributes(__name__)``)."""

    def __getattr__(name: str) -> NoReturn:
        missing_name(module, name)

    return __getattr__
