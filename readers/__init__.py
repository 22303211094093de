"""Reading Hudi log files (and, in later layers, tables) over ranged-read sources."""

from .logfile import LogBlock, LogFileReader
from .storage import (
    ArrowFileSource,
    BytesSource,
    LocalFileSource,
    RangedSource,
    ReadStats,
    open_source,
)

__all__ = [
    "ArrowFileSource", "BytesSource", "LocalFileSource", "LogBlock", "LogFileReader",
    "RangedSource", "ReadStats", "open_source",
]
