"""Log and base file names (spec §8).

Log file::   "." fileId "_" instant "." ext "." version [ "_" writeToken [ ".cdc" ] ]
Base file::  fileId "_" writeToken "_" instant "." ext

The grammar is the same for table versions 6 and 8+; what the log name's instant means is
not: in table version <= 6 it is the base instant of the file slice the log belongs to, in 8+
it is the delta commit that wrote the file (see :meth:`LogFileName.names_base_instant`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import UsageError

#: ``taskPartitionId-stageId-taskAttemptId`` when a writer has no task context
UNKNOWN_WRITE_TOKEN = "1-0-1"
#: used by metadata-table file group initialisation
DEFAULT_WRITE_TOKEN = "0-0-0"
LOGFILE_BASE_VERSION = 1

_LOG_RE = re.compile(
    r"^\.(?P<file_id>[^._]+)_(?P<instant>[^.]*)\.(?P<ext>log|archive)\.(?P<version>\d+)"
    r"(?:_(?P<token>\d+-\d+-\d+)(?P<cdc>\.cdc)?)?$"
)
_BASE_RE = re.compile(
    r"^(?P<file_id>[^_/]+)_(?P<token>\d+-\d+-\d+)_(?P<instant>[^._]+)\.(?P<ext>[A-Za-z0-9]+)$"
)
_TOKEN_RE = re.compile(r"^\d+-\d+-\d+$")
_FILE_ID_RE = re.compile(r"^[^._/]+$")
_INSTANT_RE = re.compile(r"^[^./]*$")


@dataclass(frozen=True, order=False)
class LogFileName:
    file_id: str
    instant: str
    version: int = LOGFILE_BASE_VERSION
    write_token: str | None = UNKNOWN_WRITE_TOKEN
    ext: str = "log"
    cdc: bool = False

    def __post_init__(self) -> None:
        if not _FILE_ID_RE.match(self.file_id):
            raise UsageError("invalid file id for a log file name", actual=self.file_id)
        if not _INSTANT_RE.match(self.instant):
            raise UsageError("invalid instant for a log file name", actual=self.instant)
        if self.version < 0:
            raise UsageError("log version must be >= 0", actual=self.version)
        if self.write_token is not None and not _TOKEN_RE.match(self.write_token):
            raise UsageError("invalid write token", expected="<int>-<int>-<int>",
                             actual=self.write_token)
        if self.ext not in ("log", "archive"):
            raise UsageError("invalid log file extension", expected=["log", "archive"],
                             actual=self.ext)
        if self.cdc and self.write_token is None:
            raise UsageError("a .cdc log file name needs a write token")

    @classmethod
    def parse(cls, name: str) -> LogFileName:
        """Parse a file name (no directory part)."""
        m = _LOG_RE.match(name)
        if m is None:
            raise UsageError("not a Hudi log file name", actual=name)
        return cls(m["file_id"], m["instant"], int(m["version"]), m["token"], m["ext"],
                   bool(m["cdc"]))

    @classmethod
    def matches(cls, name: str) -> bool:
        return _LOG_RE.match(name) is not None

    def __str__(self) -> str:
        s = f".{self.file_id}_{self.instant}.{self.ext}.{self.version}"
        if self.write_token is not None:
            s += f"_{self.write_token}"
            if self.cdc:
                s += ".cdc"
        return s

    def with_version(self, version: int, write_token: str | None = None) -> LogFileName:
        return LogFileName(self.file_id, self.instant, version,
                           self.write_token if write_token is None else write_token, self.ext,
                           self.cdc)

    def sort_key(self) -> tuple[str, int, tuple[int, str], str]:
        """Hudi Java's log file order: instant, version (int), token (nulls first), suffix."""
        token = (0, "") if self.write_token is None else (1, self.write_token)
        return (self.instant, self.version, token, ".cdc" if self.cdc else "")

    @staticmethod
    def names_base_instant(table_version: int) -> bool:
        """True when the name's instant is the file slice's base instant (table v <= 6)."""
        return table_version <= 6


@dataclass(frozen=True)
class BaseFileName:
    file_id: str
    write_token: str
    instant: str
    ext: str = "parquet"

    @classmethod
    def parse(cls, name: str) -> BaseFileName:
        m = _BASE_RE.match(name)
        if m is None:
            raise UsageError("not a Hudi base file name", actual=name)
        return cls(m["file_id"], m["token"], m["instant"], m["ext"])

    @classmethod
    def matches(cls, name: str) -> bool:
        return _BASE_RE.match(name) is not None

    def __str__(self) -> str:
        return f"{self.file_id}_{self.write_token}_{self.instant}.{self.ext}"


# --- timeline files -------------------------------------------------------------------------

REQUESTED, INFLIGHT, COMPLETED = "REQUESTED", "INFLIGHT", "COMPLETED"
#: the state of an instant as its file name's suffix says it
_STATE_SUFFIX = {REQUESTED: "requested", INFLIGHT: "inflight"}

_TL_PENDING = re.compile(r"^(\d+)\.([a-z_]+)\.(requested|inflight)$")
_TL_COMPLETED_V2 = re.compile(r"^(\d+)_(\d+)\.([a-z_]+)$")
_TL_COMPLETED_V1 = re.compile(r"^(\d+)\.([a-z_]+)$")
_TL_COMMIT_INFLIGHT_V1 = re.compile(r"^(\d+)\.inflight$")


@dataclass(frozen=True)
class TimelineFileName:
    """The name of a timeline file (``.hoodie/`` in layout 1, ``.hoodie/timeline/`` in 2).

    Layout 1 (table version <= 6): ``<instant>.<action>`` when completed, else
    ``<instant>.<action>.requested`` / ``.inflight`` (a ``commit`` in flight is
    ``<instant>.inflight``). Layout 2 (table version 8+): pending instants the same, completed
    ones ``<requested>_<completed>.<action>``.
    """

    requested: str
    action: str
    state: str = COMPLETED
    #: completion time (layout 2 completed instants only)
    completed: str | None = None
    layout: int = 1

    def __post_init__(self) -> None:
        if not self.requested.isdigit():
            raise UsageError("an instant is a string of digits", actual=self.requested)
        if self.state not in (REQUESTED, INFLIGHT, COMPLETED):
            raise UsageError("invalid instant state", expected=[REQUESTED, INFLIGHT, COMPLETED],
                             actual=self.state)
        if self.layout not in (1, 2):
            raise UsageError("invalid timeline layout", expected=[1, 2], actual=self.layout)
        if self.layout == 2 and self.state == COMPLETED and not self.completed:
            raise UsageError("a completed instant of layout 2 needs its completion time")

    @classmethod
    def parse(cls, name: str, layout: int = 1) -> TimelineFileName | None:
        """The timeline file a name denotes, or None when it is not one (of ``layout``)."""
        m = _TL_PENDING.match(name)
        if m:
            return cls(m[1], m[2], REQUESTED if m[3] == "requested" else INFLIGHT, None, layout)
        if layout == 2:
            m = _TL_COMPLETED_V2.match(name)
            return cls(m[1], m[3], COMPLETED, m[2], 2) if m else None
        m = _TL_COMMIT_INFLIGHT_V1.match(name)
        if m:
            return cls(m[1], "commit", INFLIGHT, None, 1)
        m = _TL_COMPLETED_V1.match(name)
        if m:
            return cls(m[1], m[2], COMPLETED, None, 1)
        return None

    def __str__(self) -> str:
        if self.state != COMPLETED:
            if self.layout == 1 and self.action == "commit" and self.state == INFLIGHT:
                return f"{self.requested}.inflight"
            return f"{self.requested}.{self.action}.{_STATE_SUFFIX[self.state]}"
        if self.layout == 2:
            return f"{self.requested}_{self.completed}.{self.action}"
        return f"{self.requested}.{self.action}"
