"""Timeline metadata morlog writes (spec/table.md §4, §8): the conformance vectors of
``spec/vectors/timeline/`` and the schemas checked against the ones Hudi wrote into the
fixture tables' timeline files."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from morlog.logformat import timeline_meta as tm

from .hudi_fixtures import SKIP_REASON, tables

VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors" / "timeline"
CASES = sorted(p for p in VECTORS.iterdir() if (p / "case.json").is_file())


@pytest.mark.parametrize("case", CASES, ids=[p.name for p in CASES])
def test_timeline_vector(case: Path) -> None:
    spec = json.loads((case / "case.json").read_text())
    expected = bytes.fromhex((case / "expected.hex").read_text().strip())
    schema = getattr(tm, spec["schema"])
    data = tm.encode_avro(schema, spec["record"], bytes.fromhex(spec["sync_marker"]))
    assert data == expected
    assert data[:4] == b"Obj\x01" and data.endswith(bytes.fromhex(spec["sync_marker"]))
    assert tm.decode_avro(expected) == spec["record"]


def _shape(t: Any) -> Any:
    """A schema reduced to what a reader resolves: names, order, types, defaults."""
    if isinstance(t, list):
        return [_shape(x) for x in t]
    if isinstance(t, dict):
        kind = t.get("type")
        if kind == "record":
            return ("record", t["name"].rsplit(".", 1)[-1],
                    [(f["name"], _shape(f["type"]), f.get("default", "<none>"))
                     for f in t["fields"]])
        if kind == "array":
            return ("array", _shape(t["items"]))
        if kind == "map":
            return ("map", _shape(t["values"]))
        return _shape(kind)
    return t.rsplit(".", 1)[-1] if isinstance(t, str) else t


def _named(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every named type defined inline (as fastavro's parsed form)."""
    parsed: dict[str, Any] = fastavro.parse_schema(schema)
    return parsed


@pytest.mark.skipif(not tables(), reason=SKIP_REASON)
@pytest.mark.parametrize("suffix, schema", [
    (".deltacommit", tm.COMMIT_METADATA_SCHEMA),
    (".replacecommit", tm.REPLACE_COMMIT_METADATA_SCHEMA),
    (".rollback", tm.ROLLBACK_METADATA_SCHEMA),
    (".rollback.requested", tm.ROLLBACK_PLAN_SCHEMA),
])
def test_schemas_match_what_hudi_wrote(suffix: str, schema: dict[str, Any]) -> None:
    """Every Avro timeline file of that kind in the fixtures was written with a schema whose
    names, order, types and defaults equal morlog's."""
    found = 0
    for t in tables():
        for p in sorted((t / ".hoodie").rglob(f"*{suffix}")):
            if "metadata" in p.parts or not p.read_bytes()[:4] == b"Obj\x01":
                continue
            hudi = fastavro.reader(io.BytesIO(p.read_bytes())).writer_schema
            assert _shape(_named(hudi)) == _shape(_named(schema)), p.name
            found += 1
    if found == 0:
        pytest.skip(f"no Avro {suffix} file among the fixture tables")
