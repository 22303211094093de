"""Where the real Hudi fixtures live, and the lists of files tests iterate over.

The fixtures are read-only inputs written by Apache Hudi itself; they are never copied into
this repository. They are found at ``$MORLOG_HUDI_FIXTURES`` if set, else at
``shared/fixtures/hudi`` in the nearest ancestor directory of this checkout that has one.
Tests that need them skip with a clear reason when they are absent, except under CI
(``CI=true``), where their absence stops the run before any test (``tests/conftest.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parent.parent


def fixtures_root() -> Path | None:
    env = os.environ.get("MORLOG_HUDI_FIXTURES")
    if env:
        p = Path(env)
        return p if p.is_dir() else None
    for parent in [_REPO, *_REPO.parents]:
        candidate = parent / "shared" / "fixtures" / "hudi"
        if candidate.is_dir():
            return candidate
    return None


ROOT = fixtures_root()
SKIP_REASON = (
    "real Hudi fixtures not found: set MORLOG_HUDI_FIXTURES or place them at "
    "../shared/fixtures/hudi next to the checkout"
)
requires_fixtures = pytest.mark.skipif(ROOT is None, reason=SKIP_REASON)


def _walk(sub: str) -> list[Path]:
    if ROOT is None:
        return []
    base = ROOT / sub
    out = []
    for dirpath, _dirs, files in os.walk(base):
        for f in files:
            if "__MACOSX" in dirpath or f.startswith("._"):
                continue
            if ".log." in f:
                out.append(Path(dirpath) / f)
    return sorted(out)


def log_files() -> list[Path]:
    """Every fixture log file: standalone ones and those inside tables (incl. metadata)."""
    return _walk("log_files") + _walk("tables")


def standalone_log_files() -> list[Path]:
    return _walk("log_files")


def tables() -> list[Path]:
    """Base paths of the fixture tables (directories holding ``.hoodie``)."""
    if ROOT is None:
        return []
    out = []
    for d in sorted((ROOT / "tables").iterdir()):
        if not d.is_dir():
            continue
        for inner in [d, *d.iterdir()]:
            if inner.is_dir() and (inner / ".hoodie" / "hoodie.properties").is_file():
                out.append(inner)
                break
    return out


def table_of(log: Path) -> Path | None:
    """The table (or metadata table) a fixture log file belongs to, if any."""
    for parent in log.parents:
        if (parent / ".hoodie" / "hoodie.properties").is_file():
            return parent
        if ROOT is not None and parent == ROOT:
            break
    return None


def fixture_id(p: Path) -> str:
    return str(p.relative_to(ROOT)) if ROOT is not None else str(p)


#: the fixture tables that carry a metadata table (relative to ``tables/``)
MDT_TABLES = ["v8_trips_8i3u1d/v8_trips_8i3u1d", "v9_txns_simple_meta/v9_txns_simple_meta"]


def fixture_table(name: str) -> Path:
    """The fixture table ``tables/<name>``; the test is skipped with the reason when absent."""
    import pytest

    if ROOT is None or not (ROOT / "tables" / name).is_dir():
        pytest.skip(SKIP_REASON if ROOT is None else f"fixture {name} is absent")
    return ROOT / "tables" / name
