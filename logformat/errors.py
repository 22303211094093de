"""The exception hierarchy of morlog.

Every error the library raises on bad input or misuse is a :class:`MorlogError`; every
warning it emits is a :class:`MorlogWarning`. Import them from ``morlog.logformat.errors`` (or
``morlog.logformat``). Errors about bytes carry where they happened (``path`` and ``offset``)
and, where it makes sense, what was expected and what was found, so that a message reads
like::

    /t/p/.f1_20250101.log.1_0-1-1@1234: invalid block magic: expected b'#HUDI#', got b'\\x00\\x00'

``path`` is whatever name the caller gave the bytes (a file path, a URI, ``"<bytes>"``); a
URI's credentials (``s3://key:secret@bucket/...``) never reach a message or ``path``.

Branches: :class:`FormatError` (the bytes are wrong: corrupt, truncated or foreign input;
:class:`ChecksumError` a CRC-32 mismatch, with the stored and computed values),
:class:`UnsupportedVersionError` (the bytes are a valid version this reader does not support:
not corruption; :class:`UnsupportedFormatError`: a table's file format setting),
:class:`UsageError`, :class:`LogFileExistsError`, :class:`WriteError`, :class:`StorageError`
(:class:`MissingFileError`). :class:`UsageError` has :class:`UnsupportedSettingError` (a
setting morlog cannot honour).
"""

from __future__ import annotations

import re
from typing import Any

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
#: query parameters whose values are secrets (matched case-insensitively on the name): AWS
#: keys and session tokens, pre-signed URL signatures and credentials, passwords, SAS ``sig``
_SECRET_PARAM = re.compile(
    r"(?i)(?P<name>[?&;][\w.-]*?(?:secret|token|passw(?:or)?d|pwd|signature|credential|"
    r"key|auth)[\w.-]*=|[?&;]sig=)[^&#\s]*")


#: an ``@`` that marks an offset (``path@1234: message``), not the end of a user-info part
_OFFSET_AT = re.compile(r"@\d+(?=[:\s),;]|$)")


def _mask_userinfo(text: str) -> str:
    schemes = list(_SCHEME.finditer(text))
    out: list[str] = []
    pos = 0
    for n, m in enumerate(schemes):
        if m.start() < pos:
            continue  # inside a user-info part masked already
        start = m.end()
        # the user-info is everything up to the LAST "@" of the URI (a raw secret may hold
        # "@", "#", "?", "/" or spaces); the URI is taken to run to the end of the line or
        # the next URI. An "@" followed by digits and ":" marks an offset, not a host.
        stop = min(schemes[n + 1].start() if n + 1 < len(schemes) else len(text),
                   len(text) if (nl := text.find("\n", start)) < 0 else nl)
        at = -1
        for cand in range(stop - 1, start - 1, -1):
            if text[cand] == "@" and not _OFFSET_AT.match(text, cand):
                at = cand
                break
        if at < 0:
            continue
        out.append(text[pos:start])
        out.append("***")
        pos = at
    out.append(text[pos:])
    return "".join(out)


def redact(text: str) -> str:
    """``text`` with the credentials of URIs masked (spec §9): the whole user-info part
    (``scheme://***@host``: up to the last ``@`` of the URI that does not mark an offset,
    so a raw secret holding ``@``, ``#``, ``?``, ``/`` or spaces is masked whole), and the
    values of secret-like query parameters (``secret_key``, ``access_key``,
    ``session_token``, ``X-Amz-Signature``, ``X-Amz-Credential``,
    ``X-Amz-Security-Token``, ``sig``, ``token``, ``password``...). Every error, warning
    and CLI line of morlog goes through it."""
    if "@" in text:
        text = _mask_userinfo(text)
    return _SECRET_PARAM.sub(r"\g<name>***", text)


class MorlogError(Exception):
    """Base class of every error raised by morlog."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        offset: int | None = None,
        expected: Any = None,
        actual: Any = None,
    ) -> None:
        self.message = redact(message)
        self.path = None if path is None else redact(path)
        self.offset = offset
        self.expected = expected
        self.actual = actual
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.path is not None or self.offset is not None:
            where = f"{self.path if self.path is not None else '<bytes>'}"
            if self.offset is not None:
                where += f"@{self.offset}"
            where += ": "
        # what was expected is printed only when there was an expectation: an error that
        # knows only what it found ends in ": got ...", never "expected None"
        detail = ""
        if self.expected is not None:
            detail = f": expected {self.expected!r}, got {self.actual!r}"
        elif self.actual is not None:
            detail = f": got {self.actual!r}"
        return f"{where}{self.message}{detail}"

    def at(self, path: str | None = None, offset_base: int = 0) -> MorlogError:
        """Return this error relocated into a file: ``path`` set, ``offset`` shifted.

        Pure decoders report offsets relative to the buffer they were given; readers call
        this to turn them into absolute file offsets.
        """
        new_offset = None if self.offset is None else self.offset + offset_base
        clone = type(self).__new__(type(self))
        MorlogError.__init__(
            clone,
            self.message,
            path=path if path is not None else self.path,
            offset=new_offset,
            expected=self.expected,
            actual=self.actual,
        )
        return clone


class FormatError(MorlogError):
    """The bytes do not follow the format (corrupt, truncated or foreign input)."""


class InvalidMagicError(FormatError):
    """A block does not start with ``#HUDI#`` (or an index trailer with its own magic)."""


class TruncatedError(FormatError):
    """The input ends before a structure it announced is complete."""


class LengthError(FormatError):
    """A length field is negative or points past the end of its container."""


class UnknownBlockTypeError(FormatError):
    """A block type ordinal this reader does not know."""


class UnknownHeaderKeyError(FormatError):
    """A header or footer key ordinal this reader does not know (strict mode only)."""


class HeaderEncodingError(FormatError):
    """A header or footer value is not valid UTF-8."""


class ContentError(FormatError):
    """A block's content cannot be decoded (bad Avro, bad Parquet, bad delete list...)."""


class ChecksumError(ContentError):
    """Bytes do not match the CRC-32 stored for them; ``expected`` is the stored CRC,
    ``actual`` the CRC of the bytes read (both as ``0x%08x`` text)."""

    def __init__(self, message: str, *, expected: int, actual: int, path: str | None = None,
                 offset: int | None = None) -> None:
        super().__init__(message, path=path, offset=offset, expected=f"0x{expected:08x}",
                         actual=f"0x{actual:08x}")


class UnsupportedVersionError(MorlogError):
    """A valid log format, content or index trailer version that this reader does not
    support. Not corruption: the bytes may well be right, written by a newer (or much older)
    writer. Scans stop on it rather than treating the block as CORRUPT; a stored index of an
    unsupported version is not used (keys are recomputed from the records)."""


class UnsupportedFormatError(UnsupportedVersionError):
    """A table setting names a file format morlog does not read or write (e.g.
    ``hoodie.table.base.file.format=HFILE``, or a value Hudi does not know); ``expected``
    lists the supported values, ``actual`` is the setting's value."""


#: errors meaning "this stored structure cannot be used" (damaged or of a version this reader
#: does not support): readers fall back to recomputing what it would have given
UNUSABLE = (FormatError, UnsupportedVersionError)


class UsageError(MorlogError):
    """The library was called wrongly (invalid arguments, values that cannot be encoded)."""


class UnsupportedSettingError(UsageError):
    """A table or writer setting that morlog cannot honour (a user key generator class, a
    timestamp type or date pattern it does not implement...). ``property`` names the setting,
    ``value`` is its value; the message names both."""

    def __init__(self, message: str, *, property: str, value: str | None,
                 path: str | None = None) -> None:
        self.property = property
        self.value = value
        super().__init__(f"{property}={value!r}: {message}", path=path)


class LogFileExistsError(MorlogError, FileExistsError):
    """A log file that morlog was about to create exists already (another writer's file)."""


class WriteError(MorlogError):
    """A write failed; the file was restored to its state before the write."""


class StorageError(MorlogError, OSError):
    """A path or URI could not be resolved, or its storage could not be reached or read
    (pyarrow's ``ArrowInvalid``/``OSError``, boto3 errors, wrapped; the URI redacted). An
    ``OSError`` as well, so ``except OSError`` keeps catching it."""


class MissingFileError(StorageError, FileNotFoundError):
    """A file the table or the caller names does not exist."""


class StaleIndexError(ContentError):
    """The index does not cover every completed write of the data table."""


class KeyGenError(UsageError):
    """A batch's values cannot be keyed as Hudi would key them: a null or empty simple record
    key, a complex key whose values are all null or empty, a missing field, a column type whose
    string form morlog does not reproduce, a date string no input format reads."""


class UnsafePathError(UsageError):
    """A path taken from data or table files would leave the table, or cannot be a file
    name (empty, ``.``/``..``, absolute, ``.hoodie``, control characters, too long)."""


class CleanPlanError(UnsafePathError):
    """A clean plan names something that is not a data file of its partition under the
    table root (or a partition that is not one of the table's): nothing is deleted."""


class ConcurrentWriterError(MorlogError):
    """Another writer holds the table's writer lock."""


# --- warnings ------------------------------------------------------------------------------


class MorlogWarning(UserWarning):
    """Base class of every warning morlog emits (filter them all with
    ``warnings.simplefilter("ignore", MorlogWarning)``). Its text is redacted like an
    error's: a URI's credentials never reach it."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class UnknownKeyWarning(MorlogWarning):
    """A header or footer key that this version of morlog does not know was skipped."""


class UnknownSectionWarning(MorlogWarning):
    """An index section this version of morlog does not know was skipped."""


class CorruptBlockWarning(MorlogWarning):
    """A log block was skipped as corrupt: its records do not match the checksum its index
    trailer carries (spec/index.md §4.12), as a torn block is skipped."""


class UnusableIndexWarning(MorlogWarning):
    """A block's stored index could not be used; its keys were recomputed from its records."""


class BaseKeysWarning(MorlogWarning):
    """A base-key index was found damaged or stale and is not used."""


class StaleIndexWarning(MorlogWarning):
    """morlog's record index does not cover the table; tagging read the files instead."""


class DamagedIndexWarning(MorlogWarning):
    """A file of morlog's record index does not read (a typed error naming it); tagging
    read the table's files instead. ``morlog rli verify`` reports the damage and ``morlog
    rli build`` rebuilds the index."""


class IndexServiceWarning(MorlogWarning):
    """An inline service of the record index failed after a data commit."""


class HeartbeatWarning(MorlogWarning):
    """A completed instant's heartbeat file could not be removed (harmless: a heartbeat
    beside a completed instant is ignored)."""
