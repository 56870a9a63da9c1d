"""Restarting a deflate stream at a block boundary, with Python's own :mod:`zlib`.

A seek point in a deflate stream is a block boundary: the bit where a block
starts, and the 32 KiB of output before it (the *window* that the block's back
references may reach). zlib's C API restarts there with ``inflatePrime`` (the
bits of the boundary's byte that belong to the new block) and
``inflateSetDictionary`` (the window); Python's :mod:`zlib` has the dictionary
(``decompressobj(zdict=...)``) but no ``inflatePrime``.

What this module does instead: it puts in front of the boundary a *primer*,
deflate blocks of its own that produce no output and end exactly ``k`` bits into
a byte (``k``: how many bits of the boundary's byte the block before used). The
primer's last byte is completed with the boundary byte's top ``8 - k`` bits, the
rest of the stream follows unchanged, and the inflater reads the next block as
if it had never been anywhere else. Two kinds of empty block do it:

- a fixed-Huffman block holding only its end code: 10 bits;
- a dynamic-Huffman block whose literal/length code has two 1-bit codes (literal
  0 and the end code) and whose distance code has one: 91 bits with 18
  code-length codes, 94 with 19.

10 is 2 (mod 8), 91 is 3 and 94 is 6, so 0-3 fixed blocks after no dynamic
block, the 91-bit one or the 94-bit one reach every residue. Both kinds are
valid deflate (RFC 1951 allows the one-code distance code), produce nothing, and
leave the window untouched.
"""

from __future__ import annotations

import zlib
from typing import Any

__all__ = ["WINDOW", "primer", "restart"]

#: The most history a deflate back reference reaches.
WINDOW = 32768


class _Bits:
    """Bits written least significant first, as deflate packs them."""

    def __init__(self) -> None:
        self.value = 0
        self.count = 0

    def put(self, value: int, nbits: int) -> None:
        self.value |= (value & ((1 << nbits) - 1)) << self.count
        self.count += nbits


def _fixed_empty(bits: _Bits) -> None:
    bits.put(0, 1)  # BFINAL = 0
    bits.put(1, 2)  # BTYPE = 01, fixed Huffman codes
    bits.put(0, 7)  # the end-of-block code, 256: seven 0 bits


#: The order code-length code lengths are stored in (RFC 1951, 3.2.7).
_CL_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)


def _dynamic_empty(bits: _Bits, ncodes: int) -> None:
    """An empty dynamic block storing ``ncodes`` (18 or 19) code-length code lengths."""
    bits.put(0, 1)  # BFINAL = 0
    bits.put(2, 2)  # BTYPE = 10, dynamic Huffman codes
    bits.put(0, 5)  # HLIT: 257 literal/length codes
    bits.put(0, 5)  # HDIST: 1 distance code
    bits.put(ncodes - 4, 4)  # HCLEN
    # The code-length code: symbols 1 and 18, one bit each (1 -> "0", 18 -> "1").
    for symbol in _CL_ORDER[:ncodes]:
        bits.put(1 if symbol in (1, 18) else 0, 3)
    # 259 code lengths: literal 0 has length 1, literals 1-255 none (symbol 18
    # repeats a zero 11 + 7-bit-extra times: 138 then 117), the end code 256 and
    # distance code 0 length 1.
    bits.put(0, 1)  # length 1 (literal 0)
    bits.put(1, 1)
    bits.put(138 - 11, 7)  # 138 zeros
    bits.put(1, 1)
    bits.put(117 - 11, 7)  # 117 zeros: literals 1-255 done
    bits.put(0, 1)  # length 1 (the end code, 256)
    bits.put(0, 1)  # length 1 (distance code 0)
    bits.put(1, 1)  # the data: the end code (literal 0 is "0", 256 is "1")


_PRIMERS: dict[int, tuple[bytes, int]] = {}


def primer(k: int) -> tuple[bytes, int]:
    """Empty deflate blocks ``8 * q + k`` bits long, as ``q + 1`` bytes (the last
    one's top ``8 - k`` bits zero, to be filled by the caller), and ``q``.

    ``k`` 0 gives ``(b"", 0)``: a byte-aligned boundary needs no primer.
    """
    if not 0 <= k < 8:
        raise ValueError(f"a bit offset within a byte is 0-7, not {k}")
    cached = _PRIMERS.get(k)
    if cached is not None:
        return cached
    if k == 0:
        result = (b"", 0)
    else:
        for dynamic in (0, 91, 94):
            fixed = next((e for e in range(4) if (dynamic + 10 * e) % 8 == k), None)
            if fixed is not None:
                break
        assert fixed is not None
        bits = _Bits()
        if dynamic:
            _dynamic_empty(bits, 18 if dynamic == 91 else 19)
        for _ in range(fixed):
            _fixed_empty(bits)
        assert bits.count % 8 == k
        q = bits.count // 8
        result = (bits.value.to_bytes(q + 1, "little"), q)
    _PRIMERS[k] = result
    return result


def restart(window: bytes, first_byte: int, k: int) -> tuple[Any, bytes]:
    """A raw inflater (stdlib :mod:`zlib`) positioned at a block boundary.

    ``window``: the output before the boundary (its last 32 KiB at most);
    ``first_byte``: the compressed byte the boundary is in; ``k``: how many of its
    low bits belong to the block before. Returns the inflater and the bytes to feed
    it first (the primer, ending with what is left of ``first_byte``); the
    compressed stream then goes on from the byte after ``first_byte`` (or from
    ``first_byte`` itself when ``k`` is 0, with nothing to feed first).
    """
    z = zlib.decompressobj(-15, zdict=window[-WINDOW:]) if window else zlib.decompressobj(-15)
    if k == 0:
        return z, b""
    head, q = primer(k)
    last = head[q] | (first_byte & (0xFF << k) & 0xFF)
    return z, head[:q] + bytes((last,))
