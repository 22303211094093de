"""A source that serves reads from ranges fetched earlier, so one ranged read can answer many.

Probes fetch the tail of a log file once (``prefetch``) and then parse framing, trailers and
sections with ordinary ``read`` calls; only requests that fall outside what was fetched reach
the underlying source, and only those are counted in its ``stats``.
"""

from __future__ import annotations

from collections.abc import Iterable

from .storage import COALESCE_MAX, RangedSource, SourceBase


class CachedSource(SourceBase):
    """``inner`` with prefetched ranges; with ``window``, a read smaller than it that
    misses fetches ``window`` bytes from its offset instead, the last ``keep`` such windows
    kept (readers that walk a file's sections in small ranges, one request per window)."""

    def __init__(self, inner: RangedSource, *, window: int = 0, keep: int = 2) -> None:
        self.inner = inner
        self.window = window
        self.keep = keep
        self._windows: list[tuple[int, bytes]] = []
        self.name = inner.name
        self.stats = inner.stats  # the same counters: only real reads count
        self._size = inner.size
        self.coalesce_gap = int(getattr(inner, "coalesce_gap", 0))
        self._ranges: list[tuple[int, bytes]] = []

    def prefetch(self, offset: int, length: int) -> None:
        """Fetch ``[offset, offset + length)`` (clipped to the file) in one read."""
        lo = max(0, offset)
        hi = min(self._size, offset + length)
        if hi > lo and self._find(lo, hi - lo) is None:
            self._ranges.append((lo, self.inner.read(lo, hi - lo)))

    def prefetch_ranges(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Fetch the ranges not cached yet, merged where the gap between neighbours is at most
        ``coalesce_gap`` (and a merged read at most ``COALESCE_MAX`` long): on object stores
        many small index parts cost a few requests instead of one each. Does nothing when
        the source does not coalesce (local files: every range read on its own is cheaper).
        """
        if self.coalesce_gap <= 0:
            return
        todo = sorted((o, n) for o, n in ranges if n > 0 and self._find(o, n) is None)
        merged: list[list[int]] = []
        for o, n in todo:
            if merged and o - merged[-1][1] <= self.coalesce_gap and (
                    max(merged[-1][1], o + n) - merged[-1][0] <= COALESCE_MAX):
                merged[-1][1] = max(merged[-1][1], o + n)
            else:
                merged.append([o, o + n])
        for lo, hi in merged:
            self.prefetch(lo, hi - lo)

    def _find(self, offset: int, length: int) -> bytes | None:
        for start, data in (*self._ranges, *self._windows):
            if start <= offset and offset + length <= start + len(data):
                return data[offset - start : offset - start + length]
        return None

    def read(self, offset: int, length: int) -> bytes:
        self._check(offset, length)
        hit = self._find(offset, length)
        if hit is not None:
            return hit
        if length < self.window:
            data = self.inner.read(offset, min(self.window, self._size - offset))
            self._windows = [(offset, data), *self._windows[:self.keep - 1]]
            return data[:length]
        return self.inner.read(offset, length)  # not kept: memory stays bounded

    def close(self) -> None:
        self.inner.close()
