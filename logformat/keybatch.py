"""Batches of record keys as byte matrices grouped by length, for vectorized hashing.

Hashes over variable-length keys vectorize well when keys of equal length sit in one
``(n, length)`` uint8 matrix: every column is a byte position, every row a key. A
:class:`KeyBatch` holds one such matrix per distinct key length, plus the index of each row
in the caller's order, built straight from an Arrow string array's buffers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from .errors import UsageError

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class KeyGroup:
    length: int
    #: positions of these keys in the batch
    index: I64
    #: (len(index), length) uint8, C-contiguous
    matrix: U8


class KeyBatch:
    """Record keys (UTF-8) grouped by byte length; ``len()`` is the number of keys."""

    def __init__(self, groups: list[KeyGroup], size: int) -> None:
        self.groups = groups
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[KeyGroup]:
        return iter(self.groups)

    @classmethod
    def of(cls, keys: pa.Array | pa.ChunkedArray | Sequence[str] | Iterable[str]) -> KeyBatch:
        arr = as_key_array(keys)
        if arr.null_count:
            raise UsageError("record keys must not be null")
        n = len(arr)
        if n == 0:
            return cls([], 0)
        lengths = _offsets(arr)[1:] - _offsets(arr)[:-1]
        if (lengths == lengths[0]).all():
            order = np.arange(n, dtype=np.int64)
        else:
            # sort by length (Arrow's take copies fast), so each length group is one slice
            order = np.argsort(lengths, kind="stable").astype(np.int64)
            arr = arr.take(pa.array(order))
            lengths = lengths[order]
        offsets = _offsets(arr)
        buf = arr.buffers()[2]
        data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(
            0, dtype=np.uint8)
        bounds = np.flatnonzero(np.diff(lengths)) + 1
        groups = []
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, n], strict=True):
            L = int(lengths[lo])
            chunk = data[offsets[lo] : offsets[hi]]
            groups.append(KeyGroup(L, order[lo:hi], chunk.reshape(int(hi - lo), L)))
        return cls(groups, n)


def _offsets(arr: pa.Array) -> I64:
    raw = np.frombuffer(arr.buffers()[1], dtype=np.int64)
    return raw[arr.offset : arr.offset + len(arr) + 1]


def as_key_array(values: object) -> pa.Array:
    """Keys as one Arrow large_string (or large_binary) array: chunks combined, Python
    sequences converted; anything else is a :class:`UsageError`."""
    keys: Any
    if isinstance(values, pa.ChunkedArray):
        keys = values.combine_chunks()
    elif isinstance(values, pa.Array):
        keys = values
    else:
        keys = pa.array(list(values), type=pa.large_string())  # type: ignore[call-overload]
    if pa.types.is_string(keys.type) or pa.types.is_binary(keys.type):
        keys = keys.cast(pa.large_binary() if pa.types.is_binary(keys.type)
                         else pa.large_string())
    elif not (pa.types.is_large_string(keys.type) or pa.types.is_large_binary(keys.type)):
        raise UsageError(f"record keys must be strings, got {keys.type}")
    return keys
