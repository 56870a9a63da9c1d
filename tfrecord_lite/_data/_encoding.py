"""Elements as bytes without pickle: a JSON description, then the raw buffers of its
arrays. ``cache(filename)`` files hold them, and iterator states the few elements
a stage holds (see ._state)."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

_U32 = struct.Struct("<I")


def _encode_element(x: Any) -> bytes:
    """One element as a record: a JSON description, then its raw buffers (no pickle)."""
    blobs: list[bytes] = []
    meta = _describe_value(x, blobs)
    head = json.dumps({"m": meta, "L": [len(b) for b in blobs]}, separators=(",", ":")).encode()
    return b"".join([_U32.pack(len(head)), head, *blobs])


def _describe_value(x: Any, blobs: list[bytes]) -> Any:
    from .._examples import RaggedValue, SparseValue

    def blob(data: bytes) -> int:
        blobs.append(data)
        return len(blobs) - 1

    if isinstance(x, dict):
        if not all(isinstance(k, str) for k in x):
            raise TypeError("cache(filename) needs dicts with str keys")
        return {"d": [[k, _describe_value(v, blobs)] for k, v in x.items()]}
    if type(x) is tuple:
        return {"t": [_describe_value(v, blobs) for v in x]}
    if isinstance(x, list):
        return {"l": [_describe_value(v, blobs) for v in x]}
    if isinstance(x, SparseValue):
        return {"sp": [_describe_value(np.asarray(v), blobs) for v in x]}
    if isinstance(x, RaggedValue):
        return {
            "r": [_describe_value(x.values, blobs), _describe_value(x.row_splits, blobs)],
            "u": x.uniform_row_length,
        }
    if isinstance(x, (np.ndarray, np.generic)):
        arr = np.asarray(x)
        if arr.dtype.kind == "O":
            return {"o": [_describe_value(v, blobs) for v in arr.ravel()], "s": list(arr.shape)}
        kind = "a" if isinstance(x, np.ndarray) else "g"
        return {
            kind: blob(np.ascontiguousarray(arr).tobytes()),
            "dt": arr.dtype.str,
            "s": list(arr.shape),
        }
    if isinstance(x, (bytes, bytearray, memoryview)):
        return {"b": blob(bytes(x))}
    if isinstance(x, str):
        return {"u": blob(x.encode())}
    if isinstance(x, bool):
        return {"z": x}
    if isinstance(x, int):
        return {"i": str(x)}
    if isinstance(x, float):
        return {"f": x.hex()}
    if x is None:
        return {"n": 0}
    raise TypeError(
        f"cache(filename) cannot store a {type(x).__name__}; use cache() to keep it in memory"
    )


def _decode_element(record: bytes, path: str) -> Any:
    try:
        (n,) = _U32.unpack_from(record, 0)
        head = json.loads(record[4 : 4 + n])
        pos = 4 + n
        blobs = []
        for length in head["L"]:
            if length < 0 or pos + length > len(record):
                raise ValueError("a buffer runs past the end of its record")
            blobs.append(record[pos : pos + length])
            pos += length
        return _rebuild_value(head["m"], blobs)
    except (ValueError, TypeError, KeyError, IndexError, struct.error) as err:
        raise ValueError(
            f"{path!r} is not a cache file this version wrote, or it is damaged ({err}); "
            "delete it to rebuild the cache"
        ) from None


def _rebuild_value(m: Any, blobs: list[bytes]) -> Any:
    from .._examples import RaggedValue, SparseValue

    if "d" in m:
        return {str(k): _rebuild_value(v, blobs) for k, v in m["d"]}
    if "t" in m:
        return tuple(_rebuild_value(v, blobs) for v in m["t"])
    if "l" in m:
        return [_rebuild_value(v, blobs) for v in m["l"]]
    if "sp" in m:
        return SparseValue(*(_rebuild_value(v, blobs) for v in m["sp"]))
    if "r" in m:
        values, splits = (_rebuild_value(v, blobs) for v in m["r"])
        return RaggedValue(values, splits, m["u"])
    if "o" in m:
        out = np.empty(len(m["o"]), dtype=object)
        out[:] = [_rebuild_value(v, blobs) for v in m["o"]]
        return out.reshape([int(d) for d in m["s"]])
    if "a" in m or "g" in m:
        dtype = np.dtype(m["dt"])
        if dtype.kind == "O" or dtype.hasobject:
            raise ValueError("object dtype in a cache file")
        arr = np.frombuffer(blobs[int(m["a"] if "a" in m else m["g"])], dtype=dtype).copy()
        arr = arr.reshape([int(d) for d in m["s"]])
        return arr if "a" in m else arr[()]
    if "b" in m:
        return blobs[int(m["b"])]
    if "u" in m:
        return blobs[int(m["u"])].decode()
    if "z" in m:
        return bool(m["z"])
    if "i" in m:
        return int(m["i"])
    if "f" in m:
        return float.fromhex(m["f"])
    if "n" in m:
        return None
    raise ValueError(f"unknown value kind {sorted(m)}")
