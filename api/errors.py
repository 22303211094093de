"""Every public error and warning of morlog, in one place::

    from morlog.errors import MorlogError, ConcurrentWriterError, MorlogWarning

Every error the library raises on bad input or misuse is a :class:`MorlogError`, every
warning it emits a :class:`MorlogWarning`; the hierarchy is described in
:mod:`morlog.logformat.errors`, where the classes live (the lowest layer: codecs raise them
too). ``tests/test_layering.py`` checks that this module lists all of them.
"""

from __future__ import annotations

from morlog.logformat.errors import (
    BaseKeysWarning,
    ChecksumError,
    CleanPlanError,
    ConcurrentWriterError,
    ContentError,
    CorruptBlockWarning,
    DamagedIndexWarning,
    FormatError,
    HeaderEncodingError,
    HeartbeatWarning,
    IndexServiceWarning,
    InvalidMagicError,
    KeyGenError,
    LengthError,
    LogFileExistsError,
    MissingFileError,
    MorlogError,
    MorlogWarning,
    StaleIndexError,
    StaleIndexWarning,
    StorageError,
    TruncatedError,
    UnknownBlockTypeError,
    UnknownHeaderKeyError,
    UnknownKeyWarning,
    UnknownSectionWarning,
    UnsafePathError,
    UnsupportedFormatError,
    UnsupportedSettingError,
    UnsupportedVersionError,
    UnusableIndexWarning,
    UsageError,
    WriteError,
)

__all__ = [
    "BaseKeysWarning",
    "ChecksumError",
    "CleanPlanError",
    "ConcurrentWriterError",
    "ContentError",
    "CorruptBlockWarning",
    "DamagedIndexWarning",
    "FormatError",
    "HeartbeatWarning",
    "HeaderEncodingError",
    "IndexServiceWarning",
    "InvalidMagicError",
    "KeyGenError",
    "LengthError",
    "LogFileExistsError",
    "MissingFileError",
    "MorlogError",
    "MorlogWarning",
    "StaleIndexError",
    "StaleIndexWarning",
    "StorageError",
    "TruncatedError",
    "UnknownBlockTypeError",
    "UnknownHeaderKeyError",
    "UnknownKeyWarning",
    "UnknownSectionWarning",
    "UnsafePathError",
    "UnsupportedFormatError",
    "UnsupportedSettingError",
    "UnsupportedVersionError",
    "UnusableIndexWarning",
    "UsageError",
    "WriteError",
]
