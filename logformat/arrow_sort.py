"""Sorts with nulls first on every pyarrow morlog supports (pyproject.toml's floor, 19, and
later): pyarrow 19 takes the null placement as an option of the sort only, pyarrow 20 and later
also per sort key, and from 25 on the option warns (FutureWarning) in favour of the per-key
form. :func:`nulls_first` gives the arguments each version wants, the order the same."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["nulls_first", "rank_nulls_first", "sort_indices_nulls_first"]

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
