"""Hudi's direct write markers (spec/table.md §7.4, ``morlog.writers.core.markers``): the
names Hudi gives them, what a listing returns, and names a listing refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morlog.logformat.errors import UnsafePathError, UsageError
from morlog.readers.storage import TableLocation
from morlog.writers.core.markers import (
    Marker,
    create_marker,
    delete_markers,
    list_markers,
    marker_dir,
    parse_marker_name,
)
from morlog.writers.core.store import LocalStore

INSTANT = "20261128093000123"


def test_a_marker_is_named_as_hudi_names_it(tmp_path: Path) -> None:
    loc = TableLocation.of(str(tmp_path))
    store = LocalStore()
    path = create_marker(store, loc, INSTANT, "2026/11/28", "f1_0-1-1_" + INSTANT + ".parquet",
                         "CREATE")
    # DirectWriteMarkers: <base>/.hoodie/.temp/<instant>/<partition>/<file>.marker.<IOType>
    assert Path(path) == (tmp_path / ".hoodie" / ".temp" / INSTANT / "2026" / "11" / "28"
                          / f"f1_0-1-1_{INSTANT}.parquet.marker.CREATE")
    assert Path(path).read_bytes() == b""
    log = f".f2_{INSTANT}.log.1_3-7-0"
    create_marker(store, loc, INSTANT, "", log, "APPEND")
    assert (tmp_path / ".hoodie" / ".temp" / INSTANT / f"{log}.marker.APPEND").is_file()
    got = sorted(list_markers(store, loc, INSTANT), key=lambda m: m.partition)
    assert got == [Marker("", log, "APPEND"),
                   Marker("2026/11/28", f"f1_0-1-1_{INSTANT}.parquet", "CREATE")]
    assert got[1].data_path(loc) == str(tmp_path / "2026" / "11" / "28" / got[1].file_name)
    assert got[0].data_path(loc) == str(tmp_path / log)
    delete_markers(store, loc, INSTANT)
    assert not Path(marker_dir(loc, INSTANT)).exists()
    assert list(list_markers(store, loc, INSTANT)) == []


def test_a_second_marker_of_one_name_is_kept_once(tmp_path: Path) -> None:
    loc, store = TableLocation.of(str(tmp_path)), LocalStore()
    for _ in range(2):  # a retried attempt marks the same file
        create_marker(store, loc, INSTANT, "p", "a.parquet", "CREATE")
    assert list(list_markers(store, loc, INSTANT)) == [Marker("p", "a.parquet", "CREATE")]


@pytest.mark.parametrize("name,expected", [
    ("a.parquet.marker.CREATE", ("a.parquet", "CREATE")),
    (".f_1.log.1_0-1-1.marker.APPEND", (".f_1.log.1_0-1-1", "APPEND")),
    ("x.marker.MERGE", ("x", "MERGE")),
    ("x.marker.DELETE", None),       # not an IO type
    (".marker.CREATE", None),        # no data file
    ("MARKERS0", None),              # a timeline-server marker file: not a direct marker
    ("a.parquet", None),
])
def test_marker_names_parse(name: str, expected: tuple[str, str] | None) -> None:
    assert parse_marker_name(name) == expected


def test_refused_arguments_and_hostile_names(tmp_path: Path) -> None:
    loc, store = TableLocation.of(str(tmp_path)), LocalStore()
    with pytest.raises(UsageError, match="IO type"):
        create_marker(store, loc, INSTANT, "p", "a.parquet", "WRITE")
    with pytest.raises(UnsafePathError):
        create_marker(store, loc, INSTANT, "../p", "a.parquet", "CREATE")
    with pytest.raises(UnsafePathError):
        create_marker(store, loc, INSTANT, "p", "../a.parquet", "CREATE")
    with pytest.raises(UnsafePathError):
        marker_dir(loc, "../../x")
    # a marker whose data name holds a control character (written by someone else)
    d = tmp_path / ".hoodie" / ".temp" / INSTANT / "p"
    d.mkdir(parents=True)
    (d / "a\x01.parquet.marker.CREATE").write_bytes(b"")
    with pytest.raises(UnsafePathError):
        list(list_markers(store, loc, INSTANT))


_segment = st.text(st.characters(min_codepoint=0x30, max_codepoint=0x7A,
                                 blacklist_characters="\\/:;<=>?@[]^`"), min_size=1,
                   max_size=8).filter(lambda s: s not in (".", "..") and
                                      not s.startswith(".hoodie"))


@settings(max_examples=40, deadline=None)
@given(files=st.lists(st.tuples(st.lists(_segment, max_size=3).map("/".join), _segment,
                                st.sampled_from(["CREATE", "MERGE", "APPEND"])),
                      max_size=6, unique_by=lambda f: (f[0], f[1])))
def test_markers_round_trip(files: list[tuple[str, str, str]],
                            tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("m")
    loc, store = TableLocation.of(str(root)), LocalStore()
    for part, name, io in files:
        create_marker(store, loc, INSTANT, part, name + ".parquet", io)
    got = {(m.partition, m.file_name, m.io_type) for m in list_markers(store, loc, INSTANT)}
    assert got == {(p, n + ".parquet", io) for p, n, io in files}
