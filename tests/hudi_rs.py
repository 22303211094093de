"""hudi-rs (the ``hudi`` package from PyPI) as the reference reader of the conformance tests.

Helpers to build throw-away Hudi tables that hudi-rs accepts, read log files through its file
group reader, and turn what it returns into comparable Python rows. Nothing here knows about
morlog's own reader: the point is an independent second opinion.

What hudi-rs 0.5 needs to read log files (checked by hand): ``.hoodie/hoodie.properties`` with
the table type, version, name, key fields and, when the table has no completed commit to take
the schema from, ``hoodie.table.create.schema``. For a table version 6 table without any
timeline it reads every block it is given; with a timeline it drops data blocks whose instant
is not a completed instant.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

# ---------------------------------------------------------------------------------------------
# Java properties files (hoodie.properties)


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            if n == "u" and i + 5 < len(text):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def read_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Parse a Java properties file (one ``key=value`` per line, ``\\`` escapes)."""
    props: dict[str, str] = {}
    for line in Path(path).read_text(encoding="latin-1").splitlines():
        s = line.lstrip()
        if not s or s[0] in "#!":
            continue
        m = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:\s]\s*(.*)$", s)
        if m is None:
            props[_unescape(s)] = ""
            continue
        props[_unescape(m.group(1))] = _unescape(m.group(2))
    return props


def _escape(value: str) -> str:
    if not value.isascii():
        raise ValueError("test tables keep hoodie.properties ASCII")
    return value.replace("\\", "\\\\").replace(":", "\\:").replace("=", "\\=")


def write_properties(path: str | os.PathLike[str], props: Mapping[str, str]) -> None:
    lines = [f"{_escape(k)}={_escape(v)}" for k, v in props.items()]
    Path(path).write_text("\n".join(lines) + "\n", encoding="latin-1")


# ---------------------------------------------------------------------------------------------
# Tables


def table_properties(schema: str | Mapping[str, Any], *, record_key: str,
                     ordering_field: str | None = None, name: str = "morlog_conformance",
                     extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Minimal properties of a non-partitioned table version 6 MOR table."""
    text = schema if isinstance(schema, str) else json.dumps(schema, separators=(",", ":"))
    props = {
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": "6",
        "hoodie.table.name": name,
        "hoodie.table.recordkey.fields": record_key,
        "hoodie.table.partition.fields": "",
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.timeline.layout.version": "1",
        "hoodie.table.create.schema": text,
    }
    if ordering_field is not None:
        props["hoodie.table.precombine.field"] = ordering_field
    props.update(extra or {})
    return props


def make_table(base: str | os.PathLike[str], schema: str | Mapping[str, Any], *,
               record_key: str, ordering_field: str | None = None,
               extra: Mapping[str, str] | None = None) -> Path:
    """Create ``base/.hoodie/hoodie.properties`` (no timeline) and return ``base``."""
    root = Path(base)
    (root / ".hoodie").mkdir(parents=True, exist_ok=True)
    write_properties(root / ".hoodie" / "hoodie.properties",
                     table_properties(schema, record_key=record_key,
                                      ordering_field=ordering_field, extra=extra))
    return root


def read_log_files(table: str | os.PathLike[str], rel_paths: Sequence[str]) -> pa.RecordBatch:
    """Merged records of ``rel_paths`` (log files relative to ``table``) read by hudi-rs."""
    import hudi

    t = hudi.HudiTableBuilder.from_base_uri(str(Path(table).resolve())).build()
    reader = t.create_file_group_reader_with_options()
    return reader.read_file_slice_from_paths("", [str(p) for p in rel_paths])


def log_paths(table: str | os.PathLike[str]) -> list[str]:
    """Log files under ``table`` (relative paths) in Hudi's order for one file group."""
    from morlog.logformat.naming import LogFileName

    root = Path(table)
    names = [p for p in root.rglob("*") if p.is_file() and LogFileName.matches(p.name)]
    names.sort(key=lambda p: LogFileName.parse(p.name).sort_key())
    return [str(p.relative_to(root)) for p in names]


_V1_COMPLETED = re.compile(r"^(\d+)\.([a-z_]+)$")
_V2_COMPLETED = re.compile(r"^(\d+)_(\d+)\.([a-z_]+)$")


def completed_instants(table: str | os.PathLike[str]) -> set[str]:
    """Requested instants of every completed action on the table's active timeline.

    Timeline layout 1 (table version <= 6): ``.hoodie/<instant>.<action>``; layout 2 (table
    version 8+): ``.hoodie/timeline/<requested>_<completed>.<action>``. Pending instants carry
    ``.requested`` / ``.inflight`` suffixes and match neither pattern.
    """
    root = Path(table) / ".hoodie"
    out: set[str] = set()
    for d, pattern in ((root, _V1_COMPLETED), (root / "timeline", _V2_COMPLETED)):
        if not d.is_dir():
            continue
        for f in d.iterdir():
            m = pattern.match(f.name)
            if m is not None:
                out.add(m.group(1))
    return out


# ---------------------------------------------------------------------------------------------
# Comparable rows


def canonical_type(t: pa.DataType) -> pa.DataType:
    """``t`` with what is only representational erased.

    - nullability flags of nested fields (hudi-rs marks meta fields and map keys ``not null``
      where the Avro schema says ``["null", "string"]``; nullability is a schema annotation,
      the values are compared separately),
    - the name of a map's entries field (``entries`` vs the field's own name), which Arrow
      writers choose freely and which carries no data.
    Everything else (integer widths, decimal precision and scale, timestamp unit and zone,
    nesting) must match exactly.
    """
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, canonical_type(f.type)) for f in t])
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(pa.field("element", canonical_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(canonical_type(t.key_type), canonical_type(t.item_type))
    return t


def canonical_schema(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    return [(f.name, canonical_type(f.type)) for f in schema]


def rows(data: pa.Table | pa.RecordBatch | Iterable[Mapping[str, Any]],
         key: str, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Rows as plain dicts (only ``columns`` when given), sorted by ``key``."""
    pylist = data.to_pylist() if isinstance(data, pa.Table | pa.RecordBatch) else list(data)
    out = [dict(r) if columns is None else {c: r[c] for c in columns} for r in pylist]
    out.sort(key=lambda r: r[key])
    return out
