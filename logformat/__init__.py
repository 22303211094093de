"""Pure codecs for Hudi's log format: framing, headers, block contents, file names.

Bytes in, values out: nothing here opens a file. See ``spec/format.md`` for the normative
description of every byte these codecs read and write.
"""

from .blocks import (
    META_FIELDS,
    RECORD_KEY_FIELD,
    avro_data_block,
    avro_data_block_from_arrow,
    block_keys,
    cdc_data_block,
    decode_avro_records,
    decode_data_table,
    delete_block,
    parquet_data_block,
    record_count,
    rollback_block,
)
from .constants import (
    MAGIC,
    BlockType,
    CommandType,
    ContentVersion,
    FooterKey,
    HeaderKey,
    LogFormatVersion,
)
from .delete_content import DeleteContent, DeleteRecord, OrderingValue
from .errors import (
    ChecksumError,
    ContentError,
    FormatError,
    HeaderEncodingError,
    InvalidMagicError,
    LengthError,
    LogFileExistsError,
    MorlogError,
    MorlogWarning,
    TruncatedError,
    UnknownBlockTypeError,
    UnknownHeaderKeyError,
    UnknownKeyWarning,
    UnknownSectionWarning,
    UnsupportedFormatError,
    UnsupportedSettingError,
    UnsupportedVersionError,
    UsageError,
    WriteError,
)
from .framing import (
    BlockFrame,
    BlockHead,
    MetadataMap,
    decode_block,
    encode_block,
)
from .naming import BaseFileName, LogFileName

__all__ = [
    "MAGIC", "META_FIELDS", "RECORD_KEY_FIELD",
    "BaseFileName", "BlockFrame", "BlockHead", "BlockType", "ChecksumError", "CommandType",
    "ContentError",
    "ContentVersion", "DeleteContent", "DeleteRecord", "FooterKey", "FormatError",
    "HeaderEncodingError", "HeaderKey", "InvalidMagicError", "LengthError", "LogFileExistsError",
    "LogFileName", "LogFormatVersion", "MetadataMap", "MorlogError", "MorlogWarning",
    "OrderingValue", "TruncatedError", "UnknownBlockTypeError", "UnknownHeaderKeyError",
    "UnknownKeyWarning", "UnknownSectionWarning",
    "UnsupportedFormatError", "UnsupportedSettingError", "UnsupportedVersionError", "UsageError",
    "WriteError",
    "avro_data_block", "avro_data_block_from_arrow", "block_keys", "cdc_data_block",
    "decode_avro_records", "decode_block", "decode_data_table", "delete_block", "encode_block",
    "parquet_data_block", "record_count", "rollback_block",
]
