"""morlog: indexable log files for Apache Hudi merge-on-read tables.

The package maps the project's layers under one name (``spec/`` describes the bytes)::

    morlog.logformat   pure codecs: framing, block contents, index trailer, bloom filters, names
    morlog.compat      index recomputation for blocks written without one, Hudi base footers
    morlog.readers     ranged storage, log file reader, tables, merged snapshots, probes, tagging
    morlog.writers     log writers, the write client and its commit protocol
    morlog.spark       Spark: format("morlog"), the distributed upsert and services
    morlog.bench       the measured claims (``morlog bench``; needs the ``bench`` extra)

The names below are the public API; everything else may move between releases.
``import morlog`` never starts a JVM: the Spark entry points live in
:mod:`morlog.spark` (``register``, ``upsert``) and need the ``spark`` extra.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

# name -> module. Loaded on first use, so that ``import morlog.logformat`` stays a pure codec
# import (no table, storage or writer code) and ``import morlog`` costs nothing until used.
_PUBLIC = {
    "MorlogError": "morlog.logformat.errors",
    "MorlogWarning": "morlog.logformat.errors",
    "UsageError": "morlog.logformat.errors",
    "ConcurrentWriterError": "morlog.logformat.errors",
    "LogBlock": "morlog.readers.logfile",
    "LogFileReader": "morlog.readers.logfile",
    "KeyTagger": "morlog.readers.lookup",
    "TagResult": "morlog.readers.lookup",
    "tag_keys": "morlog.readers.lookup",
    "SliceProbe": "morlog.readers.probe",
    "probe_log_file": "morlog.readers.probe",
    "follow": "morlog.readers.follow",
    "FileSlice": "morlog.readers.table",
    "Table": "morlog.readers.table",
    "CommitResult": "morlog.writers.core.commit",
    "MorTable": "morlog.writers.client",
    "WriteConfig": "morlog.writers.options",
    "IndexedLogWriter": "morlog.writers.core.indexed",
    "LogFileWriter": "morlog.writers.core.logwriter",
}

if TYPE_CHECKING:
    from morlog.logformat.errors import (
        ConcurrentWriterError,
        MorlogError,
        MorlogWarning,
        UsageError,
    )
    from morlog.readers.follow import follow
    from morlog.readers.logfile import LogBlock, LogFileReader
    from morlog.readers.lookup import KeyTagger, TagResult, tag_keys
    from morlog.readers.probe import SliceProbe, probe_log_file
    from morlog.readers.table import FileSlice, Table
    from morlog.writers.client import MorTable
    from morlog.writers.core.commit import CommitResult
    from morlog.writers.core.indexed import IndexedLogWriter
    from morlog.writers.core.logwriter import LogFileWriter
    from morlog.writers.options import WriteConfig

try:
    __version__ = version("morlog")
except PackageNotFoundError:  # pragma: no cover - running from a tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "CommitResult", "ConcurrentWriterError", "FileSlice", "IndexedLogWriter", "KeyTagger",
    "LogBlock", "LogFileReader", "LogFileWriter", "MorTable", "MorlogError", "MorlogWarning",
    "SliceProbe", "Table", "TagResult",
    "UsageError", "WriteConfig", "__version__", "follow", "probe_log_file", "tag_keys",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'morlog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
