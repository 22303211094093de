"""Ordinals, magic numbers and version capabilities of Hudi's log format (spec/format.md §2-3)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

MAGIC = b"#HUDI#"
MAGIC_LEN = len(MAGIC)
#: magic (6) + blockLength (8)
BLOCK_PREFIX_LEN = MAGIC_LEN + 8
#: the reverse pointer after the footer map
TRAILER_LEN = 8
#: smallest possible blockLength of a version-1 block: version, type, empty header (4),
#: content length, empty footer (4), trailer.
MIN_BLOCK_LENGTH_V1 = 4 + 4 + 4 + 8 + 4 + 8
#: Java computes block and content lengths as int: anything at or above 2 GiB is invalid.
MAX_BLOCK_LENGTH = 2**31 - 1


class BlockType(enum.IntEnum):
    """Block type ordinals (``HoodieLogBlockType``); the enum is append-only."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6

    @property
    def is_data(self) -> bool:
        return self in _DATA_TYPES

    @property
    def is_keyed(self) -> bool:
        """A data block whose records' keys the index covers (Avro, Parquet, CDC; not the
        metadata table's HFile blocks)."""
        return self in _KEYED_TYPES

    @property
    def config_id(self) -> str:
        """The string id Hudi configs use (``hoodie.logfile.data.block.format``)."""
        return _CONFIG_IDS[self]


_DATA_TYPES = frozenset(
    {BlockType.AVRO_DATA, BlockType.HFILE_DATA, BlockType.PARQUET_DATA, BlockType.CDC_DATA}
)
_KEYED_TYPES = frozenset({BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.CDC_DATA})
_CONFIG_IDS = {
    BlockType.COMMAND: ":command",
    BlockType.DELETE: ":delete",
    BlockType.CORRUPT: ":corrupted",
    BlockType.AVRO_DATA: "avro",
    BlockType.HFILE_DATA: "hfile",
    BlockType.PARQUET_DATA: "parquet",
    BlockType.CDC_DATA: "cdc",
}


class HeaderKey(enum.IntEnum):
    """Header key ordinals (``HeaderMetadataType``)."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8

    @property
    def min_table_version(self) -> int:
        """The earliest table version whose readers know this key."""
        return _HEADER_MIN_TABLE_VERSION[self]


_HEADER_MIN_TABLE_VERSION = {
    HeaderKey.INSTANT_TIME: 1,
    HeaderKey.TARGET_INSTANT_TIME: 1,
    HeaderKey.SCHEMA: 1,
    HeaderKey.COMMAND_BLOCK_TYPE: 1,
    HeaderKey.COMPACTED_BLOCK_TIMES: 5,
    HeaderKey.RECORD_POSITIONS: 6,
    HeaderKey.BLOCK_IDENTIFIER: 6,
    HeaderKey.IS_PARTIAL: 8,
    HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS: 8,
}


class FooterKey(enum.IntEnum):
    """Footer key ordinals (``FooterMetadataType``): empty in every Hudi release.

    Any footer entry makes stock readers throw, so morlog never writes one.
    """


class CommandType(enum.IntEnum):
    """Command block types (``HoodieCommandBlockTypeEnum``)."""

    ROLLBACK = 0


@dataclass(frozen=True)
class LogFormatVersion:
    """What a log format version's blocks contain: versions as capabilities (spec §2.3)."""

    number: int
    has_block_type: bool
    has_header: bool
    has_content_length: bool
    has_footer: bool
    has_reverse_pointer: bool

    @property
    def supported(self) -> bool:
        return self.number == 1


LOG_FORMAT_VERSIONS = {
    0: LogFormatVersion(0, False, False, False, False, False),
    1: LogFormatVersion(1, True, True, True, True, True),
}
CURRENT_LOG_FORMAT_VERSION = LOG_FORMAT_VERSIONS[1]


@dataclass(frozen=True)
class ContentVersion:
    """Capabilities of an Avro data / delete block content version (spec §5.1)."""

    number: int
    has_record_count: bool
    delete_payload: str  # "avro", "kryo-delete-record" or "kryo-hoodie-key"


CONTENT_VERSIONS = {
    1: ContentVersion(1, True, "kryo-hoodie-key"),
    2: ContentVersion(2, True, "kryo-delete-record"),
    3: ContentVersion(3, True, "avro"),
}
CURRENT_CONTENT_VERSION = CONTENT_VERSIONS[3]
