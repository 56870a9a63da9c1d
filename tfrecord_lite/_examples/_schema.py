"""Feature specs and dtypes: what a parser should pull out of each record.

The constructors and their validation mirror TensorFlow's ``tf.io`` feature
configurations, so a feature dict written for TensorFlow works unchanged once
``tf.io.`` becomes ``tfr.``:

=========================  ====================================================
``FixedLenFeature``        a dense array of a fixed shape (default if missing)
``VarLenFeature``          any number of values -> :class:`SparseValue`
``FixedLenSequenceFeature``  rows of a fixed shape, any number of rows
``SparseFeature``          (index, value) feature pairs -> :class:`SparseValue`
``RaggedFeature``          values with row partitions -> :class:`RaggedValue`
=========================  ====================================================

Only TensorFlow's three record dtypes exist: :data:`int64`, :data:`float32` and
:data:`string` (raw bytes). Anything that names one of them is accepted:
``tfr.int64``, ``np.int64``, ``"int64"``, ``int``, ``float``, ``bytes``, ``str``,
``"string"``, and TensorFlow's own ``tf.int64`` (by its ``.name``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Optional, Union

import numpy as np

__all__ = [
    "DType",
    "FeatureSpec",
    "FeatureSpecBase",
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "RaggedFeature",
    "SparseFeature",
    "VarLenFeature",
    "as_dtype",
    "float32",
    "int64",
    "string",
]


class DType:
    """One of the three dtypes a TFRecord feature can hold."""

    __slots__ = ("kind", "name", "np_dtype")

    def __init__(self, name: str, np_dtype: np.dtype[Any], kind: str) -> None:
        self.name = name
        #: The NumPy dtype of parsed arrays (``object`` holding ``bytes`` for string).
        self.np_dtype = np_dtype
        #: The ``tf.train.Feature`` field that holds it: int64_list, float_list, bytes_list.
        self.kind = kind

    def __repr__(self) -> str:
        return f"tfr.{self.name}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self.name == other.name
        try:
            return as_dtype(other) is self
        except (TypeError, ValueError):
            return False

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (as_dtype, (self.name,))


int64 = DType("int64", np.dtype(np.int64), "int64_list")
float32 = DType("float32", np.dtype(np.float32), "float_list")
string = DType("string", np.dtype(object), "bytes_list")

_BY_NAME = {
    "int64": int64,
    "float32": float32,
    "float": float32,
    "string": string,
    "bytes": string,
    "str": string,
    "object": string,
}
_BY_KIND = {"int64_list": int64, "float_list": float32, "bytes_list": string}

DTypeLike = Union[DType, str, type, np.dtype[Any], Any]


def as_dtype(value: DTypeLike) -> DType:
    """Return the :class:`DType` that ``value`` names; ``ValueError`` if none."""
    if isinstance(value, DType):
        return value
    if value is int:
        return int64
    if value is float:
        return float32
    if value in (bytes, str):
        return string
    if isinstance(value, str):
        key = value.strip().lower()
        if key.startswith("tf."):
            key = key[3:]
        if key in _BY_NAME:
            return _BY_NAME[key]
        name: Any = key
    else:
        name = getattr(value, "name", None)  # tf.DType, np.dtype
    if isinstance(value, type) and issubclass(value, np.generic):
        if issubclass(value, (np.bytes_, np.str_)):
            return string
        name = np.dtype(value).name
    if isinstance(name, str):
        if name in ("int64", "float32", "string", "object"):
            return _BY_NAME[name]
        if isinstance(value, np.dtype) and value.kind in "SUO":
            return string
    hint = ""
    if isinstance(name, str) and name in ("float64", "double", "float16", "half", "bfloat16"):
        hint = "; a FloatList stores float32, so use tfr.float32 (values are rounded to float32)"
    raise ValueError(
        f"unsupported dtype {value!r}: TFRecord features hold int64, float32 or string "
        f"(use tfr.int64, tfr.float32 or tfr.string){hint}"
    )


def dtype_of_kind(kind: str) -> DType:
    """The :class:`DType` stored in a ``Feature`` field (``"int64_list"`` ...)."""
    return _BY_KIND[kind]


def _as_shape(shape: Any, what: str) -> tuple[Optional[int], ...]:
    if shape is None:
        raise ValueError(f"Missing shape for {what}")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"shape of {what} must be a list of ints, got {shape!r}") from None
    out: list[Optional[int]] = []
    for d in dims:
        if d is None:
            out.append(None)
        elif isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0:
            out.append(int(d))
        else:
            raise ValueError(f"shape of {what} must hold non-negative ints, got {shape!r}")
    return tuple(out)


def _default_array(value: Any, dtype: DType, shape: tuple[int, ...], what: str) -> np.ndarray:
    """Convert a default value to an array of ``shape`` (reshaped, never broadcast, as TF)."""
    if dtype is string:
        flat = np.asarray(value, dtype=object).reshape(-1)
        items = [_as_bytes(v, what) for v in flat]
        arr = np.empty(len(items), dtype=object)
        arr[:] = items
    else:
        arr = np.asarray(value, dtype=dtype.np_dtype).reshape(-1)
    expected = math.prod(shape)
    if arr.size != expected:
        raise ValueError(
            f"default_value of {what} has {arr.size} elements but shape {list(shape)} "
            f"needs {expected}; it is reshaped, not broadcast (as in TensorFlow)"
        )
    return arr.reshape(shape)


def _as_bytes(v: Any, what: str) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bytearray, memoryview, np.bytes_)):
        return bytes(v)
    raise TypeError(f"default_value of {what} must hold bytes or str, got {type(v).__name__}")


def _check_dims(shape: Any, spec: str, positive: bool) -> None:
    """Creation-time checks of a spec's ``shape`` (TensorFlow's ``TensorShape`` rules).

    A negative dimension raises TensorFlow's ``Dimension -1 must be >= 0``; with
    ``positive`` (FixedLenSequenceFeature) a 0 dimension raises too: a step of no
    values makes the number of steps undefined (TensorFlow 2.21 crashes the process
    with a division by zero on it). ``None`` (unknown) and malformed shapes are left
    to the parse-time checks, which name the feature key.
    """
    if shape is None or isinstance(shape, (str, bytes)):
        return
    dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
    try:
        dims = tuple(dims)
    except TypeError:
        return
    for d in dims:
        if d is None or isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            continue
        if d < 0:
            raise ValueError(f"Dimension {int(d)} must be >= 0")
        if positive and d == 0:
            raise ValueError(
                f"{spec} shape {list(dims)} has a dimension of size 0: every step would hold "
                "no values, so the number of steps is undefined; dimensions must be positive"
            )


class FeatureSpecBase:
    """Any feature spec: ``tfr.FeatureSpec`` is what a feature dict maps its keys to.

    Annotate a feature dict as ``dict[str, tfr.FeatureSpec]``; at run time every spec
    (``FixedLenFeature``, ``VarLenFeature``, ``FixedLenSequenceFeature``,
    ``SparseFeature``, ``RaggedFeature``) is an instance of it. For a type checker it is
    the union of those classes. The specs are NamedTuples, as in TensorFlow (but
    ``RaggedFeature``), and a type checker joins NamedTuples of different classes to a
    bare ``tuple``: the documented ``{"a": tfr.FixedLenFeature([], tfr.string), "b":
    tfr.VarLenFeature(tfr.float32)}``, with no annotation, would be a ``dict[str,
    tuple[Any, ...]]`` that no function taking features accepts. So type checkers are
    told the NamedTuple specs derive from this class (through ``_SpecTuple``, which has
    the tuple methods), the join of the spec classes is this class, and the union
    includes it.
    """

    __slots__ = ()
    #: What every spec holds: the dtype of its values (``tfr.int64``, ``tfr.float32``...).
    dtype: Any

    def _validated(self, key: str) -> FeatureSpec:
        """The spec checked, with its shape, dtype and default normalised."""
        raise NotImplementedError(f"{type(self).__name__} is not a feature spec class")


if TYPE_CHECKING:
    from typing import Self

    class _SpecTuple(FeatureSpecBase):
        """What type checkers see as the base of the NamedTuple specs (see FeatureSpecBase)."""

        _fields: ClassVar[tuple[str, ...]]

        def __new__(cls, *fields: Any) -> Self:
            raise NotImplementedError

        def __iter__(self) -> Iterator[Any]:
            raise NotImplementedError

        def __len__(self) -> int:
            raise NotImplementedError

        def __getitem__(self, index: int) -> Any:
            raise NotImplementedError

        def _replace(self, **fields: Any) -> Self:
            raise NotImplementedError

        def _asdict(self) -> dict[str, Any]:
            raise NotImplementedError

    _FixedLenFeatureBase = _SpecTuple
    _VarLenFeatureBase = _SpecTuple
    _FixedLenSequenceFeatureBase = _SpecTuple
    _SparseFeatureBase = _SpecTuple
else:

    class _FixedLenFeatureFields(NamedTuple):
        shape: Any
        dtype: Any
        default_value: Any = None

    class _VarLenFeatureFields(NamedTuple):
        dtype: Any

    class _FixedLenSequenceFeatureFields(NamedTuple):
        shape: Any
        dtype: Any
        allow_missing: bool = False
        default_value: Any = None

    class _SparseFeatureFields(NamedTuple):
        index_key: Any
        value_key: str
        dtype: Any
        size: Any
        already_sorted: bool = False

    class _FixedLenFeatureBase(_FixedLenFeatureFields, FeatureSpecBase):
        __slots__ = ()

    class _VarLenFeatureBase(_VarLenFeatureFields, FeatureSpecBase):
        __slots__ = ()

    class _FixedLenSequenceFeatureBase(_FixedLenSequenceFeatureFields, FeatureSpecBase):
        __slots__ = ()

    class _SparseFeatureBase(_SparseFeatureFields, FeatureSpecBase):
        __slots__ = ()


class FixedLenFeature(_FixedLenFeatureBase):
    """A dense feature of fixed ``shape``, as ``tf.io.FixedLenFeature``.

    Parsed to an array of ``shape`` (one record) or ``(batch,) + shape``. A record
    without the feature gets ``default_value`` (reshaped to ``shape``); without a
    default, it is an error. A negative dimension raises ``ValueError`` at creation.
    """

    __slots__ = ()
    shape: Any
    dtype: Any
    default_value: Any

    def __new__(cls, shape: Any, dtype: Any, default_value: Any = None) -> FixedLenFeature:
        _check_dims(shape, "FixedLenFeature", positive=False)
        return super().__new__(cls, shape, dtype, default_value)

    def _validated(self, key: str) -> FixedLenFeature:
        what = f"feature {key}"
        shape = _as_shape(self.shape, what)
        if shape and shape[0] is None:
            raise ValueError(
                f"First dimension of shape for feature {key} unknown. "
                "Consider using FixedLenSequenceFeature."
            )
        if any(d is None for d in shape):
            raise ValueError(f"All dimensions of shape for feature {key} need to be known")
        dtype = as_dtype(self.dtype)
        dims = tuple(int(d) for d in shape)  # type: ignore[arg-type]
        default = (
            None
            if self.default_value is None
            else _default_array(self.default_value, dtype, dims, what)
        )
        return FixedLenFeature(dims, dtype, default)

    def __repr__(self) -> str:
        extra = (
            "" if self.default_value is None else f", default_value={_short(self.default_value)}"
        )
        return f"tfr.FixedLenFeature({_shape_repr(self.shape)}, {_dtype_repr(self.dtype)}{extra})"


class VarLenFeature(_VarLenFeatureBase):
    """Any number of values, as ``tf.io.VarLenFeature``; parsed to :class:`SparseValue`."""

    __slots__ = ()
    dtype: Any

    def __new__(cls, dtype: Any) -> VarLenFeature:
        return super().__new__(cls, dtype)

    def _validated(self, key: str) -> VarLenFeature:
        return VarLenFeature(as_dtype(self.dtype))

    def __repr__(self) -> str:
        return f"tfr.VarLenFeature({_dtype_repr(self.dtype)})"


class FixedLenSequenceFeature(_FixedLenSequenceFeatureBase):
    """Rows of a fixed ``shape``, any number of them, as ``tf.io.FixedLenSequenceFeature``.

    In :func:`parse_example` it needs ``allow_missing=True`` (as in TensorFlow) and
    the batch is padded to the longest record with ``default_value`` (a scalar;
    0 or b"" when ``None``). A dimension that is negative or 0 (e.g. ``shape=[0]``)
    raises ``ValueError`` at creation.
    """

    __slots__ = ()
    shape: Any
    dtype: Any
    allow_missing: bool
    default_value: Any

    def __new__(
        cls, shape: Any, dtype: Any, allow_missing: bool = False, default_value: Any = None
    ) -> FixedLenSequenceFeature:
        _check_dims(shape, "FixedLenSequenceFeature", positive=True)
        return super().__new__(cls, shape, dtype, allow_missing, default_value)

    def _validated(self, key: str) -> FixedLenSequenceFeature:
        what = f"feature {key}"
        shape = _as_shape(self.shape, what)
        if any(d is None for d in shape):
            raise ValueError(f"All dimensions of shape for feature {key} need to be known")
        dtype = as_dtype(self.dtype)
        default = None
        if self.default_value is not None:
            default = _default_array(self.default_value, dtype, (), what)
        dims = tuple(int(d) for d in shape)  # type: ignore[arg-type]
        return FixedLenSequenceFeature(dims, dtype, bool(self.allow_missing), default)

    def __repr__(self) -> str:
        extra = ", allow_missing=True" if self.allow_missing else ""
        if self.default_value is not None:
            extra += f", default_value={_short(self.default_value)}"
        return (
            f"tfr.FixedLenSequenceFeature({_shape_repr(self.shape)}, "
            f"{_dtype_repr(self.dtype)}{extra})"
        )


class SparseFeature(_SparseFeatureBase):
    """A sparse feature from index and value features, as ``tf.io.SparseFeature``.

    ``index_key`` names an int64 feature (or a list of them, one per dimension),
    ``value_key`` the values; ``size`` is the dense size (a list for several
    dimensions). Parsed to :class:`SparseValue` with entries sorted by index.
    """

    __slots__ = ()
    index_key: Any
    value_key: str
    dtype: Any
    size: Any
    already_sorted: bool

    def __new__(
        cls, index_key: Any, value_key: str, dtype: Any, size: Any, already_sorted: bool = False
    ) -> SparseFeature:
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)

    def _validated(self, key: str) -> SparseFeature:
        index_keys = [self.index_key] if isinstance(self.index_key, str) else list(self.index_key)
        sizes = [self.size] if isinstance(self.size, (int, np.integer)) else list(self.size)
        if not index_keys or not all(isinstance(k, str) for k in index_keys):
            raise ValueError(
                f"index_key of SparseFeature {key} must be a string or list of strings"
            )
        if len(sizes) != len(index_keys):
            raise ValueError(
                f"SparseFeature {key}: {len(index_keys)} index keys but {len(sizes)} sizes"
            )
        if not isinstance(self.value_key, str):
            raise ValueError(f"value_key of SparseFeature {key} must be a string")
        for s in sizes:
            if not isinstance(s, (int, np.integer)) or s < 0:
                raise ValueError(
                    f"size of SparseFeature {key} must be non-negative ints, got {self.size!r}"
                )
        return SparseFeature(
            index_keys if len(index_keys) > 1 else index_keys[0],
            self.value_key,
            as_dtype(self.dtype),
            [int(s) for s in sizes] if len(sizes) > 1 else int(sizes[0]),
            bool(self.already_sorted),
        )

    def __repr__(self) -> str:
        return (
            f"tfr.SparseFeature(index_key={self.index_key!r}, value_key={self.value_key!r}, "
            f"dtype={_dtype_repr(self.dtype)}, size={self.size!r})"
        )


class _Partition(NamedTuple):
    key: Any


class RowSplits(_Partition):
    """Row partition read from an int64 feature of row splits."""


class RowLengths(_Partition):
    """Row partition read from an int64 feature of row lengths."""


class RowStarts(_Partition):
    """Row partition read from an int64 feature of row starts."""


class RowLimits(_Partition):
    """Row partition read from an int64 feature of row limits."""


class ValueRowIds(_Partition):
    """Row partition read from an int64 feature of value row ids."""


class UniformRowLength(NamedTuple):
    """Row partition with a constant row length (no feature)."""

    length: int


@dataclass(frozen=True)
class RaggedFeature(FeatureSpecBase):
    """A ragged feature, as ``tf.io.RaggedFeature``; parsed to :class:`RaggedValue`.

    ``value_key`` defaults to the feature's key; ``partitions`` (outermost first)
    are ``RaggedFeature.RowSplits(key)``, ``RowLengths``, ``RowStarts``,
    ``RowLimits``, ``ValueRowIds`` or ``UniformRowLength(n)``.
    """

    dtype: Any
    value_key: Optional[str] = None
    partitions: Sequence[Any] = ()
    row_splits_dtype: Any = np.int32
    validate: bool = False

    RowSplits: ClassVar[type[RowSplits]] = RowSplits
    RowLengths: ClassVar[type[RowLengths]] = RowLengths
    RowStarts: ClassVar[type[RowStarts]] = RowStarts
    RowLimits: ClassVar[type[RowLimits]] = RowLimits
    ValueRowIds: ClassVar[type[ValueRowIds]] = ValueRowIds
    UniformRowLength: ClassVar[type[UniformRowLength]] = UniformRowLength

    def _validated(self, key: str) -> RaggedFeature:
        splits_dtype = np.dtype(
            self.row_splits_dtype.name  # tf.int32 / tf.int64
            if hasattr(self.row_splits_dtype, "name")
            and not isinstance(self.row_splits_dtype, type)
            else self.row_splits_dtype
        )
        if splits_dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise ValueError(f"row_splits_dtype of RaggedFeature {key} must be int32 or int64")
        for p in self.partitions:
            if not isinstance(p, (_Partition, UniformRowLength)):
                raise TypeError(
                    f"partitions of RaggedFeature {key} must be RaggedFeature.RowSplits(...) etc., "
                    f"got {type(p).__name__}"
                )
            if isinstance(p, _Partition) and not isinstance(p.key, str):
                raise TypeError(f"partition keys of RaggedFeature {key} must be strings")
            if isinstance(p, UniformRowLength) and (
                not isinstance(p.length, (int, np.integer)) or p.length < 0
            ):
                raise ValueError(
                    f"UniformRowLength of RaggedFeature {key} must be a non-negative int"
                )
        return RaggedFeature(
            as_dtype(self.dtype),
            self.value_key if self.value_key is not None else key,
            tuple(self.partitions),
            splits_dtype,
            bool(self.validate),
        )

    def __repr__(self) -> str:
        extra = "" if self.value_key is None else f", value_key={self.value_key!r}"
        if self.partitions:
            extra += f", partitions={list(self.partitions)!r}"
        return f"tfr.RaggedFeature({_dtype_repr(self.dtype)}{extra})"


if TYPE_CHECKING:
    #: Any feature spec. ``FeatureSpecBase`` is in the union so that a dict mixing spec
    #: classes, which a type checker infers as ``dict[str, FeatureSpecBase]``, is
    #: accepted wherever a feature dict is (see FeatureSpecBase).
    FeatureSpec = Union[
        FixedLenFeature,
        VarLenFeature,
        FixedLenSequenceFeature,
        SparseFeature,
        RaggedFeature,
        FeatureSpecBase,
    ]
else:
    # At run time the base class itself: ``isinstance(spec, tfr.FeatureSpec)`` holds for
    # every spec, and ``tfr.FeatureSpec`` has a docstring.
    FeatureSpec = FeatureSpecBase
_SPEC_TYPES = (
    FixedLenFeature,
    VarLenFeature,
    FixedLenSequenceFeature,
    SparseFeature,
    RaggedFeature,
)


def validate_features(features: Any, what: str = "features") -> dict[str, FeatureSpec]:
    """Check a feature dict and return it with shapes, dtypes and defaults normalised."""
    if features is None:
        return {}
    if not hasattr(features, "items"):
        raise TypeError(f"{what} must be a dict of feature specs, got {type(features).__name__}")
    out: dict[str, FeatureSpec] = {}
    for key, spec in features.items():
        if not isinstance(key, str):
            raise TypeError(f"feature keys must be str, got {key!r}")
        if not isinstance(spec, _SPEC_TYPES):
            raise TypeError(
                f"feature {key!r}: expected FixedLenFeature, VarLenFeature, "
                "FixedLenSequenceFeature, SparseFeature or RaggedFeature, "
                f"got {type(spec).__name__}"
            )
        out[key] = spec._validated(key)
    return out


def _dtype_repr(d: Any) -> str:
    try:
        return repr(as_dtype(d))
    except (TypeError, ValueError):
        return repr(d)


def _shape_repr(shape: Any) -> str:
    try:
        return repr(list(shape))
    except TypeError:
        return repr(shape)


def _short(value: Any) -> str:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# NumPy dtypes under TensorFlow's names, for decode_raw(..., tfr.uint8) and friends.
# (Features themselves only hold int64, float32 and string, above.)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
float16 = np.dtype(np.float16)
float64 = np.dtype(np.float64)
