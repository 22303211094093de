"""Hudi's key generators, column-wise: each record's record key (``_hoodie_record_key``) and
partition path (``_hoodie_partition_path``) from a table's settings and an Arrow batch of data
columns, as Hudi's writers compute them.

Pure (no I/O). The rules are in ``spec/table.md`` ("Record keys and partition paths"), each
with the Hudi source it comes from. In short:

- :meth:`KeyGenSpec.from_properties` reads ``hoodie.properties`` (and writer settings given as
  ``overrides``): the key generator (class, else type, else inferred from the fields), the
  record key and partition fields, Hive-style partitioning, URL-encoding, the timestamp key
  generator's settings and the complex key generator's single-field key encoding. A setting
  morlog cannot honour raises :class:`UnsupportedSettingError` naming it.
- :meth:`KeyGenSpec.record_keys` and :meth:`KeyGenSpec.partition_paths` compute one string per
  row with ``pyarrow.compute``; partition paths of timestamp fields are formatted per distinct
  value. Values Hudi refuses (a null or empty simple key...) raise :class:`KeyGenError`; a
  partition path that is not a safe relative path raises
  :class:`~morlog.logformat.partition_path.UnsafePathError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from enum import Enum
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from morlog.config import (
    COMPLEX_KEYGEN_ENCODING,
    COMPLEX_KEYGEN_NEW_ENCODING,
    CONSISTENT_LOGICAL_TIMESTAMP,
    DROP_PARTITION_COLUMNS,
    HIVE_STYLE_PARTITIONING,
    KEYGEN_CLASS,
    KEYGEN_DATETIME_PARSER,
    KEYGEN_DATETIME_PARSER_OLD,
    KEYGEN_TYPE,
    PARTITION_FIELDS,
    POPULATE_META_FIELDS,
    RECORDKEY_FIELDS,
    SLASH_SEPARATED_DATE,
    TABLE_VERSION,
    TIMESTAMP_KEYGEN_PREFIX,
    TIMESTAMP_KEYGEN_PREFIX_OLD,
    TS_INPUT_DELIMITER,
    TS_INPUT_FORMAT,
    TS_INPUT_TZ,
    TS_OUTPUT_FORMAT,
    TS_OUTPUT_TZ,
    TS_SCALAR_UNIT,
    TS_TYPE,
    TS_TZ,
    URL_ENCODE_PARTITIONING,
    WRITE_KEYGEN_CLASS,
    WRITE_KEYGEN_TYPE,
    WRITE_PARTITIONPATH_FIELD,
    WRITE_RECORDKEY_FIELD,
    WRITE_TABLE_VERSION,
)

from . import joda_time as jt
from .errors import KeyGenError, UnsupportedSettingError
from .partition_path import (
    DEFAULT_PARTITION_PATH,
    check_relative_partition_path,
    escape_partition_value,
)

#: placeholders of a complex record key's null and empty values (Hudi's ``KeyGenerator``)
NULL_PLACEHOLDER = "__null__"
EMPTY_PLACEHOLDER = "__empty__"

# --- setting names (morlog.config; the timestamp settings also read under _TS_OLD) ----------
WRITE_PARTITION_FIELD = WRITE_PARTITIONPATH_FIELD
HIVE_STYLE = HIVE_STYLE_PARTITIONING
URL_ENCODE = URL_ENCODE_PARTITIONING
SLASH_DATE = SLASH_SEPARATED_DATE
CONSISTENT_TIMESTAMP = CONSISTENT_LOGICAL_TIMESTAMP
COMPLEX_ENCODING = COMPLEX_KEYGEN_ENCODING
COMPLEX_NEW_ENCODING = COMPLEX_KEYGEN_NEW_ENCODING
DATE_TIME_PARSER = KEYGEN_DATETIME_PARSER
_TS = TIMESTAMP_KEYGEN_PREFIX
_TS_OLD = TIMESTAMP_KEYGEN_PREFIX_OLD


class KeyGenKind(Enum):
    """Hudi's built-in key generators morlog implements (``KeyGeneratorType``)."""

    SIMPLE = "SIMPLE"
    COMPLEX = "COMPLEX"
    NON_PARTITION = "NON_PARTITION"
    TIMESTAMP = "TIMESTAMP"
    CUSTOM = "CUSTOM"


_CLASSES = {
    "org.apache.hudi.keygen.SimpleKeyGenerator": KeyGenKind.SIMPLE,
    "org.apache.hudi.keygen.SimpleAvroKeyGenerator": KeyGenKind.SIMPLE,
    "org.apache.hudi.keygen.ComplexKeyGenerator": KeyGenKind.COMPLEX,
    "org.apache.hudi.keygen.ComplexAvroKeyGenerator": KeyGenKind.COMPLEX,
    "org.apache.hudi.keygen.NonpartitionedKeyGenerator": KeyGenKind.NON_PARTITION,
    "org.apache.hudi.keygen.NonpartitionedAvroKeyGenerator": KeyGenKind.NON_PARTITION,
    "org.apache.hudi.keygen.TimestampBasedKeyGenerator": KeyGenKind.TIMESTAMP,
    "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator": KeyGenKind.TIMESTAMP,
    "org.apache.hudi.keygen.CustomKeyGenerator": KeyGenKind.CUSTOM,
    "org.apache.hudi.keygen.CustomAvroKeyGenerator": KeyGenKind.CUSTOM,
}
_TYPES = {"SIMPLE": KeyGenKind.SIMPLE, "SIMPLE_AVRO": KeyGenKind.SIMPLE,
          "COMPLEX": KeyGenKind.COMPLEX, "COMPLEX_AVRO": KeyGenKind.COMPLEX,
          "NON_PARTITION": KeyGenKind.NON_PARTITION,
          "NON_PARTITION_AVRO": KeyGenKind.NON_PARTITION,
          "TIMESTAMP": KeyGenKind.TIMESTAMP, "TIMESTAMP_AVRO": KeyGenKind.TIMESTAMP,
          "CUSTOM": KeyGenKind.CUSTOM, "CUSTOM_AVRO": KeyGenKind.CUSTOM}

#: milliseconds per unit of Java's ``TimeUnit`` (None: finer than a millisecond)
_UNIT_MS = {"MILLISECONDS": 1, "SECONDS": 1000, "MINUTES": 60_000, "HOURS": 3_600_000,
            "DAYS": 86_400_000}
_UNIT_PER_MS = {"MICROSECONDS": 1000, "NANOSECONDS": 1_000_000}
_TS_TYPES = {"UNIX_TIMESTAMP": "SECONDS", "EPOCHMILLISECONDS": "MILLISECONDS",
             "EPOCHMICROSECONDS": "MICROSECONDS", "SCALAR": None, "DATE_STRING": None,
             "MIXED": None}
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
#: how settings are looked up: the value of a setting, or None when it is not set
_Get = Callable[[str], "str | None"]


def _bool(value: str | None) -> bool:
    """Java's ``Boolean.parseBoolean``: ``true`` in any case, anything else false."""
    return value is not None and value.strip().lower() == "true"


def _fields(raw: str | None) -> list[str]:
    return [f.strip() for f in (raw or "").split(",") if f.strip()]


@dataclass(frozen=True)
class TimestampConfig:
    """The timestamp key generator's settings (``hoodie.keygen.timebased.*``)."""

    timestamp_type: str
    #: Java ``TimeUnit`` name of numeric values (None for DATE_STRING and MIXED)
    time_unit: str | None
    output_pattern: str
    output_tokens: tuple[jt.Token, ...]
    output_zone: Any  # tzinfo | None: None means the zone of the parsed date string
    input_patterns: tuple[str, ...]
    input_zone: Any  # tzinfo | None
    parsers: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_settings(cls, get: _Get) -> TimestampConfig:
        def setting(key: str) -> tuple[str, str | None]:
            for k in (key, key.replace(_TS, _TS_OLD)):
                v = get(k)
                if v is not None:
                    return k, v
            return key, None

        parser_class = get(DATE_TIME_PARSER) or get(
            KEYGEN_DATETIME_PARSER_OLD)
        if parser_class not in (None, "", "org.apache.hudi.keygen.parser.HoodieDateTimeParser"):
            raise UnsupportedSettingError("only Hudi's own date-time parser is implemented",
                                          property=DATE_TIME_PARSER, value=parser_class)
        k, ttype = setting(TS_TYPE)
        if ttype is None or ttype.strip() not in _TS_TYPES:
            raise UnsupportedSettingError(
                f"the timestamp key generator needs one of {sorted(_TS_TYPES)}",
                property=k, value=ttype)
        ttype = ttype.strip()
        unit = _TS_TYPES[ttype]
        if ttype == "SCALAR":
            k, raw = setting(TS_SCALAR_UNIT)
            unit = (raw or "SECONDS").strip().upper()
            if unit not in _UNIT_MS and unit not in _UNIT_PER_MS:
                raise UnsupportedSettingError("not a Java TimeUnit", property=k, value=raw)
        k, out_pattern = setting(TS_OUTPUT_FORMAT)
        try:
            out_tokens = jt.parse_pattern(out_pattern or "")
        except jt.UnsupportedPatternError as e:
            raise UnsupportedSettingError(str(e), property=k, value=out_pattern) from None

        def zone(key: str, raw: str | None) -> Any:
            if raw is None or not raw.strip():
                return None
            try:
                return jt.java_zone(raw)
            except jt.UnsupportedPatternError as e:
                raise UnsupportedSettingError(str(e), property=key, value=raw) from None

        # the deprecated "timezone" setting, when present, is both zones (HoodieDateTimeParser)
        k_tz, tz = setting(TS_TZ)
        if tz is not None:
            in_zone = out_zone = zone(k_tz, tz or "GMT")
        else:
            in_zone = zone(*setting(TS_INPUT_TZ))
            out_zone = zone(*setting(TS_OUTPUT_TZ))
        inputs: tuple[str, ...] = ()
        parsers: tuple[Any, ...] = ()
        if ttype in ("DATE_STRING", "MIXED"):
            k, raw = setting(TS_INPUT_FORMAT)
            kd, delim = setting(TS_INPUT_DELIMITER)
            if delim not in (None, ","):
                raise UnsupportedSettingError("only ',' separates input date formats",
                                              property=kd, value=delim)
            inputs = tuple(p.strip() for p in (raw or "").split(","))
            try:
                parsers = tuple(jt.compile_parser(jt.parse_pattern(p)) for p in inputs)
            except jt.UnsupportedPatternError as e:
                raise UnsupportedSettingError(str(e), property=k, value=raw) from None
        elif out_zone is None:
            raise UnsupportedSettingError(
                "no output time zone: Hudi would format in the JVM's default time zone; set "
                f"{TS_OUTPUT_TZ} (or {TS_TZ})", property=TS_OUTPUT_TZ, value=None)
        return cls(ttype, unit, out_pattern or "", out_tokens, out_zone, inputs, in_zone,
                   parsers)


@dataclass(frozen=True)
class PartitionField:
    """One partition field: its (possibly dotted) name and whether it is formatted as a
    timestamp (the custom key generator's ``field:timestamp``) or taken as it is."""

    name: str
    timestamp: bool = False


@dataclass(frozen=True)
class KeyGenSpec:
    """How a table keys its records: build it with :meth:`from_properties`."""

    kind: KeyGenKind
    #: record key fields (dotted names for nested fields), in key order
    key_fields: tuple[str, ...]
    partition_spec: tuple[PartitionField, ...]
    hive_style: bool = False
    urlencode: bool = False
    #: ``f:v`` (True) or bare ``v`` (False) for a key of one field (complex key generator)
    single_key_field_prefixed: bool = False
    slash_separated_date: bool = False
    consistent_logical_timestamp: bool = False
    timestamp: TimestampConfig | None = None
    populate_meta_fields: bool = True
    drop_partition_columns: bool = False

    # --- construction ------------------------------------------------------------------------

    @classmethod
    def from_properties(cls, props: dict[str, str],
                        overrides: dict[str, str] | None = None) -> KeyGenSpec:
        """The key generator of a table with ``hoodie.properties`` ``props``; ``overrides``
        (writer settings such as ``hoodie.datasource.write.partitionpath.field`` or
        ``hoodie.write.complex.keygen.new.encoding``) win over the table's."""
        merged = dict(props)
        merged.update(overrides or {})

        def get(key: str) -> str | None:
            return merged.get(key)

        key_fields = _fields(get(WRITE_RECORDKEY_FIELD) if get(WRITE_RECORDKEY_FIELD)
                             is not None else get(RECORDKEY_FIELDS))
        part_key = WRITE_PARTITION_FIELD if get(WRITE_PARTITION_FIELD) is not None \
            else PARTITION_FIELDS
        part_raw = _fields(get(part_key))
        kind = cls._kind(get, len(key_fields), get(part_key) or "")
        if not key_fields:
            raise UnsupportedSettingError(
                "no record key fields: auto-generated record keys are not supported",
                property=RECORDKEY_FIELDS, value=get(RECORDKEY_FIELDS))

        partition: list[PartitionField] = []
        for item in part_raw:
            name, sep, ptype = item.partition(":")
            if kind is KeyGenKind.CUSTOM:
                if not sep or ptype.strip().upper() not in ("SIMPLE", "TIMESTAMP"):
                    raise UnsupportedSettingError(
                        "the custom key generator needs 'field:simple' or 'field:timestamp' "
                        "for every partition field (tables before version 8 do not store the "
                        f"types: give {WRITE_PARTITION_FIELD} in the overrides)",
                        property=part_key, value=get(part_key))
                partition.append(PartitionField(name.strip(),
                                                ptype.strip().upper() == "TIMESTAMP"))
            else:
                partition.append(PartitionField(name.strip()))
        if kind is KeyGenKind.NON_PARTITION:
            partition = []
        if kind in (KeyGenKind.SIMPLE, KeyGenKind.TIMESTAMP):
            if len(key_fields) != 1:
                raise UnsupportedSettingError(
                    f"the {kind.value.lower()} key generator takes one record key field",
                    property=RECORDKEY_FIELDS, value=",".join(key_fields))
            if len(partition) > 1 or (kind is KeyGenKind.TIMESTAMP and not partition):
                raise UnsupportedSettingError(
                    f"the {kind.value.lower()} key generator takes one partition field",
                    property=part_key, value=get(part_key))
            if kind is KeyGenKind.TIMESTAMP:
                partition = [PartitionField(partition[0].name, True)]
        ts = None
        if any(p.timestamp for p in partition):
            ts = TimestampConfig.from_settings(get)
        slash = _bool(get(SLASH_DATE))
        if slash and _bool(get(HIVE_STYLE)):
            raise UnsupportedSettingError(
                f"slash-separated date partitioning with {HIVE_STYLE}=true is not supported "
                "(Hudi refuses the combination too)", property=SLASH_DATE, value=get(SLASH_DATE))
        if slash and kind in (KeyGenKind.CUSTOM, KeyGenKind.TIMESTAMP):
            raise UnsupportedSettingError(
                f"slash-separated date partitioning with the {kind.value.lower()} key "
                "generator is not implemented", property=SLASH_DATE, value=get(SLASH_DATE))
        return cls(
            kind=kind,
            key_fields=tuple(key_fields),
            partition_spec=tuple(partition),
            hive_style=_bool(get(HIVE_STYLE)),
            urlencode=_bool(get(URL_ENCODE)),
            single_key_field_prefixed=cls._prefixed(get, kind, len(key_fields)),
            slash_separated_date=slash,
            consistent_logical_timestamp=_bool(get(CONSISTENT_TIMESTAMP)),
            timestamp=ts,
            populate_meta_fields=(get(POPULATE_META_FIELDS) or "true").strip().lower()
            != "false",
            drop_partition_columns=_bool(get(DROP_PARTITION_COLUMNS)),
        )

    @staticmethod
    def _kind(get: _Get, n_keys: int, partition_raw: str) -> KeyGenKind:
        for key, table in ((WRITE_KEYGEN_CLASS, _CLASSES), (KEYGEN_CLASS, _CLASSES),
                           (WRITE_KEYGEN_TYPE, _TYPES), (KEYGEN_TYPE, _TYPES)):
            value = get(key)
            if value is None or not value.strip():
                continue
            kind = table.get(value.strip())
            if kind is None:
                raise UnsupportedSettingError(
                    "not a key generator morlog implements (Hudi's simple, complex, "
                    "non-partitioned, timestamp-based and custom ones)", property=key,
                    value=value)
            return kind
        # nothing set: Hudi infers the type from the fields (KeyGenUtils.inferKeyGeneratorType)
        parts = [p for p in partition_raw.split(",")] if partition_raw.strip() else []
        if not parts:
            return KeyGenKind.NON_PARTITION
        if ":" in parts[0]:
            return KeyGenKind.CUSTOM
        if len(parts) == 1 and n_keys <= 1:
            return KeyGenKind.SIMPLE
        return KeyGenKind.COMPLEX

    @staticmethod
    def _prefixed(get: _Get, kind: KeyGenKind, n_keys: int) -> bool:
        if kind is not KeyGenKind.COMPLEX or n_keys != 1:
            return n_keys > 1
        recorded = get(COMPLEX_ENCODING)
        if recorded is not None:
            r = recorded.strip().upper()
            if r not in ("FIELD_PREFIXED", "VALUE_ONLY"):
                raise UnsupportedSettingError("expected FIELD_PREFIXED or VALUE_ONLY",
                                              property=COMPLEX_ENCODING, value=recorded)
            return r == "FIELD_PREFIXED"
        version_key = WRITE_TABLE_VERSION if get(WRITE_TABLE_VERSION) else TABLE_VERSION
        raw = (get(version_key) or "0").strip()
        if not raw.isdigit():
            raise UnsupportedSettingError("not a table version number", property=version_key,
                                          value=raw)
        if int(raw) >= 9:
            return True
        return not _bool(get(COMPLEX_NEW_ENCODING))

    # --- the fields ------------------------------------------------------------------------------

    @property
    def partition_fields(self) -> tuple[str, ...]:
        """The partition fields (dotted names for nested fields), in path order."""
        return tuple(p.name for p in self.partition_spec)

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_spec)

    @property
    def required_columns(self) -> tuple[str, ...]:
        """The top-level columns a batch must carry."""
        out: list[str] = []
        for name in self.key_fields + self.partition_fields:
            top = name.split(".")[0]
            if top not in out:
                out.append(top)
        return tuple(out)

    # --- record keys -----------------------------------------------------------------------------

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.StringArray:
        """``_hoodie_record_key`` of every row of ``batch``."""
        values = [_as_string(_column(batch, f), f, self.consistent_logical_timestamp)
                  for f in self.key_fields]
        if len(values) == 1 and not self.single_key_field_prefixed:
            v = values[0]
            _refuse_rows(pc.or_kleene(pc.is_null(v), pc.equal(v, "")),
                         f"record key field {self.key_fields[0]!r} is null or empty")
            return v
        parts: list[Any] = []
        blank = None
        for i, (name, v) in enumerate(zip(self.key_fields, values, strict=True)):
            is_empty = pc.equal(v, "")
            filled = pc.if_else(pc.is_null(v), NULL_PLACEHOLDER,
                                pc.if_else(is_empty, EMPTY_PLACEHOLDER, v))
            parts += [f"{',' if i else ''}{name}:", filled]
            b = pc.or_kleene(pc.is_null(v), is_empty)
            blank = b if blank is None else pc.and_(blank, b)
        _refuse_rows(blank, f"record key fields {list(self.key_fields)} are all null or empty")
        return pc.binary_join_element_wise(*parts, "")

    # --- partition paths -------------------------------------------------------------------------

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.StringArray:
        """``_hoodie_partition_path`` of every row of ``batch`` (``""`` when not
        partitioned); every distinct path is checked with
        :func:`~morlog.logformat.partition_path.check_relative_partition_path`."""
        n = batch.num_rows
        if not self.partition_spec:
            return pa.array([""] * n, pa.string())
        parts = [self._partition_part(batch, p) for p in self.partition_spec]
        if len(parts) == 1:
            out = parts[0]
        else:
            joined: list[Any] = []
            for i, part in enumerate(parts):
                if i:
                    joined.append("/")
                joined.append(part)
            out = pc.binary_join_element_wise(*joined, "")
        # check each distinct path once (Hudi refuses '..' too; morlog refuses more)
        for path in pc.unique(out).to_pylist():
            check_relative_partition_path(path)
        return out

    def _partition_part(self, batch: pa.Table | pa.RecordBatch, p: PartitionField) -> pa.Array:
        col = _column(batch, p.name)
        if p.timestamp:
            assert self.timestamp is not None
            text = _timestamp_partition(col, p.name, self.timestamp,
                                        self.consistent_logical_timestamp)
            # no default partition for timestamps: a null is the instant 1 (see TimestampConfig)
        else:
            v = _as_string(col, p.name, self.consistent_logical_timestamp)
            blank = pc.or_kleene(pc.is_null(v), pc.equal(v, ""))
            text = pc.if_else(blank, DEFAULT_PARTITION_PATH, v)
            if self.urlencode:
                text = _per_distinct(text, escape_partition_value)
            if self.hive_style:
                text = pc.binary_join_element_wise(f"{p.name}=", text, "")
            if self.slash_separated_date and len(self.partition_spec) == 1:
                # the complex key generator skips null values; their default partition has no '-'
                text = _per_distinct(text, lambda s: s if s.startswith("-")
                                     else s.replace("-", "/"))
            return text
        if self.urlencode:
            text = _per_distinct(text, escape_partition_value)
        if self.hive_style:
            text = pc.binary_join_element_wise(f"{p.name}=", text, "")
        return text


# --- column access and string forms ----------------------------------------------------------


def _column(batch: pa.Table | pa.RecordBatch, name: str) -> pa.Array:
    parts = name.split(".")
    if parts[0] not in batch.schema.names:
        raise KeyGenError(f"field {name!r} is not a column of the batch",
                          actual=batch.schema.names)
    col = batch.column(parts[0])
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    for i, part in enumerate(parts[1:], 1):
        if not pa.types.is_struct(col.type) or col.type.get_field_index(part) < 0:
            raise KeyGenError(f"field {name!r}: {'.'.join(parts[:i])!r} has no field {part!r}")
        # a null parent makes the nested value null (HoodieAvroUtils.getNestedFieldVal)
        col = pc.struct_field(col, part)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    return col


def _as_string(col: pa.Array, name: str, consistent: bool) -> pa.Array:
    """Each value as Hudi's ``HoodieAvroUtils.getNestedFieldValAsString`` writes it (Java's
    ``toString`` of the Avro value after its logical-type conversion); nulls stay null."""
    t = col.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return col.cast(pa.string())
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return col.cast(pa.string())
    if pa.types.is_date32(t):
        ints = col.cast(pa.int32())
        lo, hi = -719528, 2932896  # 0000-01-01 and 9999-12-31: LocalDate adds a sign outside
        bad = pc.or_kleene(pc.less(ints, lo), pc.greater(ints, hi))
        _refuse_rows(bad, f"date field {name!r}: years outside 0000..9999 are not supported")
        return col.cast(pa.string())
    if pa.types.is_decimal(t):
        # BigDecimal.toString and Python's Decimal str both follow the to-scientific-string
        # rule of the General Decimal Arithmetic specification
        return _per_distinct(col, lambda d: str(d), source_py=True)
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            raise KeyGenError(f"field {name!r}: nanosecond timestamps have no Avro type")
        if consistent and t.tz is not None:
            raise KeyGenError(
                f"field {name!r}: with {CONSISTENT_TIMESTAMP}=true Hudi writes a timestamp key "
                "in the JVM's default time zone, which morlog cannot know")
        return _avro_long(col).cast(pa.string())
    raise KeyGenError(f"field {name!r}: values of type {t} as record key or partition "
                      "values are not supported (their Java string form is not reproduced)")


def _avro_long(col: pa.Array) -> pa.Array:
    """The long an Arrow timestamp becomes in Avro (morlog's mapping: seconds and
    milliseconds as timestamp-millis, microseconds as timestamp-micros)."""
    ints = col.cast(pa.int64())
    if col.type.unit == "s":
        ints = pc.multiply_checked(ints, 1000)
    return ints


def _per_distinct(col: pa.Array, fn: Any, source_py: bool = False) -> pa.Array:
    """``fn`` applied to each distinct non-null value of ``col`` (strings, or Python values
    with ``source_py``), taken back to every row; nulls stay null."""
    uniques = pc.unique(col)
    values = uniques.to_pylist()
    mapped = pa.array([None if v is None else fn(v) for v in values], pa.string())
    if not source_py and mapped.equals(uniques.cast(pa.string())):
        return col
    return pc.take(mapped, pc.index_in(col, value_set=uniques))


def _refuse_rows(mask: Any, message: str) -> None:
    if mask is None or len(mask) == 0:
        return
    hits = pc.fill_null(mask, False)
    if pc.any(hits).as_py():
        row = pc.index(hits, True).as_py()
        raise KeyGenError(f"row {row}: {message}")


# --- timestamp partition values ----------------------------------------------------------------


def _java_long_of(v: Any) -> int:
    """Java's ``longValue()``: truncation toward zero, the low 64 bits on overflow."""
    n = int(v)
    return ((n - _LONG_MIN) % 2**64) + _LONG_MIN


def _to_millis(value: int, unit: str | None, name: str) -> int:
    """Java's ``TimeUnit.MILLISECONDS.convert``: truncation toward zero for finer units,
    saturation for coarser ones."""
    if unit is None:
        raise KeyGenError(f"field {name!r}: a number needs a numeric timestamp type "
                          f"(UNIX_TIMESTAMP, EPOCHMILLISECONDS, EPOCHMICROSECONDS, SCALAR)")
    if unit in _UNIT_PER_MS:
        q = abs(value) // _UNIT_PER_MS[unit]
        return q if value >= 0 else -q
    return max(_LONG_MIN, min(_LONG_MAX, value * _UNIT_MS[unit]))


def _timestamp_partition(col: pa.Array, name: str, cfg: TimestampConfig,
                         consistent: bool) -> pa.Array:
    """The formatted partition value of each row (TimestampBasedAvroKeyGenerator), per
    distinct value."""
    t = col.type
    string_input = pa.types.is_string(t) or pa.types.is_large_string(t)
    if string_input:
        col = col.cast(pa.string())
        if cfg.timestamp_type not in ("DATE_STRING", "MIXED"):
            raise KeyGenError(f"field {name!r}: date strings need timestamp type DATE_STRING "
                              f"or MIXED (have {cfg.timestamp_type})")

        def default() -> Any:
            # a null becomes the instant 1 ms written with the first input format
            zone = cfg.input_zone or cfg.output_zone or UTC
            return jt.format_instant(jt.parse_pattern(cfg.input_patterns[0]), 1, zone)

        def convert(v: Any) -> str:
            try:
                ms, zone = jt.parse_instant(cfg.parsers, v, cfg.input_zone)
            except jt.ParseFailure as e:
                raise KeyGenError(f"field {name!r}: {e}") from None
            return _format(cfg, ms, cfg.output_zone or zone, name)

        return _map_with_default(col, convert, default())
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            raise KeyGenError(f"field {name!r}: nanosecond timestamps have no Avro type")
        if consistent and t.tz is not None:
            # java.sql.Timestamp.getTime(): the instant in milliseconds
            ints = col.cast(pa.int64())
            if t.unit == "us":
                ms = pc.divide(ints, 1000)  # integer division truncates toward zero, as Java
            elif t.unit == "s":
                ms = pc.multiply_checked(ints, 1000)
            else:
                ms = ints
            return _map_with_default(ms, lambda v: _format(cfg, v, cfg.output_zone, name),
                                     _format(cfg, 1, cfg.output_zone, name), fast=cfg)
        col = _avro_long(col)
    elif pa.types.is_date32(t):
        col = col.cast(pa.int32()).cast(pa.int64())  # LocalDate.toEpochDay(), then the unit
    elif pa.types.is_integer(t):
        pass
    elif pa.types.is_floating(t):
        if pc.any(pc.invert(pc.is_finite(col))).as_py():
            raise KeyGenError(f"field {name!r}: NaN or infinite timestamp value")
    elif pa.types.is_decimal(t):
        pass
    else:
        raise KeyGenError(f"field {name!r}: values of type {t} are not timestamps")
    if cfg.time_unit is None:
        raise KeyGenError(f"field {name!r}: numbers need a numeric timestamp type "
                          f"(have {cfg.timestamp_type})")
    unit = cfg.time_unit
    if pa.types.is_integer(col.type) and unit in _UNIT_MS:
        # column-wise when every value's milliseconds fit in a long (else Java saturates:
        # per distinct value below)
        try:
            ms = pc.multiply_checked(col.cast(pa.int64()), _UNIT_MS[unit])
        except (pa.ArrowInvalid, OverflowError):
            ms = None
        if ms is not None:
            return _map_with_default(ms, lambda v: _format(cfg, v, cfg.output_zone, name),
                                     _format(cfg, _UNIT_MS[unit], cfg.output_zone, name),
                                     fast=cfg)
    return _map_with_default(
        col, lambda v: _format(cfg, _to_millis(_java_long_of(v), unit, name), cfg.output_zone,
                               name),
        _format(cfg, _to_millis(1, unit, name), cfg.output_zone, name))


def _format(cfg: TimestampConfig, ms: int, zone: Any, name: str) -> str:
    try:
        return jt.format_instant(cfg.output_tokens, ms, zone)
    except (OverflowError, ValueError):
        raise KeyGenError(f"field {name!r}: instant {ms} ms is out of range") from None


_YEAR_1000_MS = -30610224000000
_YEAR_10000_MS = 253402300800000


def _map_with_default(col: pa.Array, fn: Any, default: Any,
                      fast: TimestampConfig | None = None) -> pa.Array:
    """``fn`` of every value of ``col``, nulls replaced by ``default`` (Hudi's value for a
    null timestamp): column-wise with Arrow's strftime when ``fast`` allows it, else per
    distinct value."""
    if fast is not None and pa.types.is_int64(col.type):
        fmt = jt.strftime_format(fast.output_tokens)
        zone = fast.output_zone
        tzname = _arrow_tz(zone)
        if fmt is not None and tzname is not None and len(col):
            lo = pc.min(col).as_py()
            hi = pc.max(col).as_py()
            if lo is not None and lo >= _YEAR_1000_MS + 86_400_000 and \
                    hi < _YEAR_10000_MS - 86_400_000:
                secs = pc.subtract(col, _floor_mod(col, 1000))
                stamps = secs.cast(pa.timestamp("ms", tz=tzname)).cast(
                    pa.timestamp("s", tz=tzname))
                out = pc.strftime(stamps, format=fmt, locale="C")
                return pc.fill_null(out, default) if out.null_count else out
    uniques = pc.unique(col)
    mapped = pa.array([default if v is None else fn(v) for v in uniques.to_pylist()],
                      pa.string())
    return pc.take(mapped, pc.index_in(col, value_set=uniques, skip_nulls=False))


def _floor_mod(col: pa.Array, m: int) -> pa.Array:
    r = pc.subtract(col, pc.multiply(pc.divide(col, m), m))  # truncated remainder
    return pc.if_else(pc.less(r, 0), pc.add(r, m), r)


def _arrow_tz(zone: Any) -> str | None:
    """The Arrow time-zone name of ``zone``, or None when Arrow cannot name it."""
    if zone is UTC:
        return "UTC"
    key = getattr(zone, "key", None)
    if key:
        return str(key)
    off = zone.utcoffset(None) if zone is not None else None
    if off is None:
        return None
    secs = int(off.total_seconds())
    if secs % 60:
        return None
    sign = "-" if secs < 0 else "+"
    secs = abs(secs)
    return f"{sign}{secs // 3600:02d}:{(secs % 3600) // 60:02d}"


__all__ = ["EMPTY_PLACEHOLDER", "NULL_PLACEHOLDER", "KeyGenError", "KeyGenKind", "KeyGenSpec",
           "PartitionField", "TimestampConfig"]
