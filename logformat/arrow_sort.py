"""Sorts with nulls first on every pyarrow morlog supports (pyproject.toml's floor, 19, and
later): pyarrow 19 takes the null placement as an option of the sort only, pyarrow 20 and later
also per sort key, and from 25 on the option warns (FutureWarning) in favour of the per-key
form. :func:`nulls_first` gives the arguments each version wants, the order the same."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["from_numpy", "nulls_first", "rank_nulls_first", "sort_indices_nulls_first", "to_numpy"]

_PER_KEY = int(pa.__version__.split(".")[0]) >= 20


def nulls_first(keys: list[tuple[str, str]]) -> dict[str, Any]:
    """Keyword arguments of ``pc.sort_indices``/``pc.rank`` ordering ``keys`` ((name,
    order) pairs) with nulls first."""
    if _PER_KEY:
        return {"sort_keys": [(name, order, "at_start") for name, order in keys]}
    return {"sort_keys": keys, "null_placement": "at_start"}


def sort_indices_nulls_first(data: Any, keys: list[tuple[str, str]]) -> pa.Array:
    """``pc.sort_indices(data)`` by ``keys``, nulls first."""
    return pc.sort_indices(data, **nulls_first(keys))


def rank_nulls_first(arr: pa.Array, tiebreaker: str = "dense") -> pa.Array:
    """Ascending ranks of ``arr``, nulls first (smallest)."""
    if _PER_KEY:
        return pc.rank(arr, sort_keys=[("", "ascending", "at_start")], tiebreaker=tiebreaker)
    return pc.rank(arr, sort_keys="ascending", null_placement="at_start", tiebreaker=tiebreaker)


def from_numpy(values: Any) -> pa.Array:
    """A 1-d numpy array of numbers or booleans (no nulls) as an Arrow array, zero-copy for
    numbers. ``pa.array`` of a numpy array gives the same array but first imports pandas
    when it is installed (pyarrow's check for pandas objects: 0.3 s, on the first call in a
    process)."""
    arr = np.ascontiguousarray(values)
    if arr.ndim != 1 or arr.dtype.kind not in "biuf":
        return pa.array(arr)
    n = int(arr.size)
    if arr.dtype.kind == "b":
        bits = np.packbits(arr, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])
    return pa.Array.from_buffers(pa.from_numpy_dtype(arr.dtype), n,
                                 [None, pa.py_buffer(arr)])


#: numpy's type of each Arrow integer and floating-point type (``DataType.to_pandas_dtype``
#: gives the same but needs pandas on pyarrow 19, which morlog does not require)
_NUMPY_TYPES = {t: np.dtype(d) for t, d in (
    (pa.int8(), np.int8), (pa.int16(), np.int16), (pa.int32(), np.int32),
    (pa.int64(), np.int64), (pa.uint8(), np.uint8), (pa.uint16(), np.uint16),
    (pa.uint32(), np.uint32), (pa.uint64(), np.uint64), (pa.float16(), np.float16),
    (pa.float32(), np.float32), (pa.float64(), np.float64))}


def to_numpy(values: pa.Array | pa.ChunkedArray) -> Any:
    """``values.to_numpy()`` of integer, floating-point or boolean values without nulls,
    without the pandas import of ``to_numpy`` (see :func:`from_numpy`); other arrays
    through ``to_numpy``."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    t = values.type
    dtype = _NUMPY_TYPES.get(t)
    if values.null_count == 0 and dtype is not None:
        if len(values) == 0:
            return np.zeros(0, dtype=dtype)
        data = values.buffers()[1]
        out = np.frombuffer(data, dtype=dtype, count=len(values),
                            offset=values.offset * dtype.itemsize)
        out.flags.writeable = False  # Arrow's memory, as ``to_numpy`` gives it
        return out
    if values.null_count == 0 and pa.types.is_boolean(t):
        if len(values) == 0:
            return np.zeros(0, dtype=bool)
        bits = np.frombuffer(values.buffers()[1], dtype=np.uint8)
        return np.unpackbits(bits, bitorder="little", count=values.offset + len(values)
                             )[values.offset:].astype(bool)
    return values.to_numpy(zero_copy_only=False)
