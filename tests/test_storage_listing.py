"""Local directory listings while another writer publishes files beside them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from morlog.readers.storage import LocalStorage


def test_a_file_gone_mid_listing_does_not_empty_the_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer's temporary file, published by a link and removed, may vanish between the
    directory read and its stat: the listing leaves it out and keeps every other file (it
    used to return an empty listing, and a reader saw a partition without files)."""
    for name in ("a.parquet", ".tmp-b", "c.log"):
        (tmp_path / name).write_bytes(b"x" * 3)
    real = os.scandir

    class Gone:
        def __init__(self, entry: Any) -> None:
            self._e = entry
            self.name = entry.name

        def is_file(self) -> bool:
            return True

        def stat(self) -> os.stat_result:
            raise FileNotFoundError(self.name)

    class Scan:
        def __init__(self, path: str) -> None:
            self._it = real(path)

        def __enter__(self) -> Any:
            return (Gone(e) if e.name.startswith(".tmp") else e for e in self._it)

        def __exit__(self, *exc: object) -> None:
            self._it.close()

    monkeypatch.setattr(os, "scandir", Scan)
    st = LocalStorage()
    assert st.sizes(str(tmp_path)) == {"a.parquet": 3, "c.log": 3}
    assert set(st.versions(str(tmp_path))) == {"a.parquet", "c.log"}
