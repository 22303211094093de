"""Java's ``String.hashCode`` over many strings at once, and Hudi's metadata-table shard hash.

``HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex`` (apache/hudi, ``hudi-common``):
``h = 31*h + charAt(i)`` over the key's UTF-16 code units in 32-bit int arithmetic (Java's
``String.hashCode``, spelled out so it does not depend on the JVM), then
``Math.abs(Math.abs(h) % numFileGroups)``. Used by the metadata-table writers (which file
group an entry goes to) and by the record-index reader (which shard holds a key).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa


def _utf16_units(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-16 code units of UTF-8 strings (``data`` their bytes, ``offsets`` where each
    starts, n + 1 values) and where each string's units start, with numpy: code points from
    the lead bytes (those other than 10xxxxxx) and their continuation bytes, those above
    U+FFFF split into surrogate pairs."""
    nbytes = len(data)
    lead = (data & 0xC0) != 0x80
    starts = np.flatnonzero(lead)
    first = data[starts]
    length = np.where(first < 0x80, 1, np.where(first < 0xE0, 2, np.where(first < 0xF0, 3, 4)))
    char_of_byte = np.cumsum(lead) - 1
    shift = 6 * (length[char_of_byte] - 1 - (np.arange(nbytes) - starts[char_of_byte]))
    lead_mask = np.array([0, 0x7F, 0x1F, 0x0F, 0x07], dtype=np.uint8)[length[char_of_byte]]
    bits = np.where(lead, data & lead_mask, data & 0x3F).astype(np.int64)
    csum = np.zeros(nbytes + 1, dtype=np.int64)
    np.cumsum(bits << shift, out=csum[1:])
    code = csum[np.append(starts[1:], nbytes)] - csum[starts]
    pair = code > 0xFFFF
    unit_start = np.zeros(len(code) + 1, dtype=np.int64)
    np.cumsum(np.where(pair, 2, 1), out=unit_start[1:])
    units = np.empty(int(unit_start[-1]), dtype=np.uint32)
    units[unit_start[:-1]] = np.where(pair, 0xD800 + ((code - 0x10000) >> 10), code)
    units[unit_start[:-1][pair] + 1] = 0xDC00 + ((code[pair] - 0x10000) & 0x3FF)
    # the first character of each string (strings without characters start where the next
    # one does)
    string_of_char = np.searchsorted(offsets, starts, side="right") - 1
    first_char = np.searchsorted(string_of_char, np.arange(len(offsets) - 1), side="left")
    return units, np.append(unit_start[first_char], len(units))


def java_string_hashes(strings: pa.Array) -> np.ndarray:
    """Java's ``String.hashCode`` of every string (``h = 31*h + c`` over its UTF-16 code
    units, 32-bit wrap-around), as int64 holding the signed 32-bit value. numpy throughout:
    Horner's rule one character position at a time over all strings still that long (a
    loop bounded by the longest string, not by the number of strings)."""
    b = strings.cast(pa.large_binary())
    n = len(b)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.frombuffer(b.buffers()[1], dtype=np.int64)[b.offset: b.offset + n + 1]
    data = np.frombuffer(b.buffers()[2], dtype=np.uint8)[offsets[0]: offsets[-1]]
    offsets = offsets - offsets[0]
    if data.size and data.max() >= 0x80:
        units, starts = _utf16_units(data, offsets)
    else:  # ASCII: one byte, one unit
        units, starts = data.astype(np.uint32), offsets
    lengths = np.diff(starts)
    order = np.argsort(-lengths, kind="stable")  # longest first: the active ones a prefix
    start_sorted = starts[:-1][order]
    longer_than = np.searchsorted(-lengths[order], -np.arange(int(lengths.max(initial=0))),
                                  side="left")  # strings longer than j, per position j
    h = np.zeros(n, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for j, active in enumerate(longer_than.tolist()):
            h[:active] = h[:active] * np.uint32(31) + units[start_sorted[:active] + j]
    out = np.empty(n, dtype=np.int64)
    out[order] = h.view(np.int32)
    return out


def file_group_indexes(keys: pa.Array, count: int) -> npt.NDArray[np.int64]:
    """``mapRecordKeyToFileGroupIndex(key, count)`` of every key (``count`` > 0):
    ``abs(abs(h) % count)`` in Java's int arithmetic, ``h`` the key's ``String.hashCode``
    (``abs(Integer.MIN_VALUE)`` stays negative in Java; its remainder's absolute value equals
    the one computed here in 64 bits)."""
    out: npt.NDArray[np.int64] = np.abs(java_string_hashes(keys)) % count
    return out


__all__ = ["file_group_indexes", "java_string_hashes"]
