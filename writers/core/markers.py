"""Hudi's direct write markers (spec/table.md §7.4): before a writer creates a data file of an
instant it creates an empty marker ``.hoodie/.temp/<instant>/<partition>/<file>.marker.<IO>``
(``IO``: ``CREATE`` for a new base file, ``APPEND`` for a log file, ``MERGE`` for a base file
rewritten). Whoever finishes or rolls back the instant lists the markers and so finds every
file any attempt wrote, the attempts that failed or were speculative included, without
listing the partitions (Hudi: ``DirectWriteMarkers``, ``WriteMarkers.getMarkerPath``,
``HoodieTableMetaClient.getMarkerFolderPath``, ``IOType``).

Markers are written by the tasks of a distributed write (``morlog.spark``); a name found in
the markers is checked like any name read from storage (a plain file name under a partition
of the table)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from morlog.logformat.errors import UsageError
from morlog.logformat.partition_path import check_relative_partition_path
from morlog.readers.containment import check_file_name
from morlog.readers.storage import TableLocation
from morlog.writers.core.store import WriteStore

#: the suffix between a data file's name and its IO type (``HoodieTableMetaClient.MARKER_EXTN``)
MARKER_EXTENSION = ".marker."
#: the IO types of Hudi's markers (``org.apache.hudi.common.model.IOType``)
IO_TYPES = ("CREATE", "MERGE", "APPEND")


@dataclass(frozen=True)
class Marker:
    """One marker: the data file it stands for and how the file was written."""

    partition: str
    file_name: str
    io_type: str

    def data_path(self, location: TableLocation) -> str:
        """Where the marked data file is (or would be) under the table root."""
        return location.join(*self.partition.split("/"), self.file_name) if self.partition else (
            location.join(self.file_name))


def marker_dir(location: TableLocation, instant: str) -> str:
    """The marker folder of ``instant``: ``.hoodie/.temp/<instant>``."""
    check_file_name(instant)
    return location.join(".hoodie", ".temp", instant)


def create_marker(store: WriteStore, location: TableLocation, instant: str, partition: str,
                  file_name: str, io_type: str) -> str:
    """Create the marker of data file ``file_name`` in ``partition`` (before the file is);
    its path. A marker that exists already is kept (a retried attempt marks the same name)."""
    if io_type not in IO_TYPES:
        raise UsageError("a marker's IO type", expected=IO_TYPES, actual=io_type)
    check_file_name(file_name)
    directory = marker_dir(location, instant)
    if partition:
        directory = store.join(directory, *check_relative_partition_path(partition).split("/"))
    store.makedirs(directory)
    path = store.join(directory, f"{file_name}{MARKER_EXTENSION}{io_type}")
    store.create(path, b"", sync=False)
    return path


def parse_marker_name(name: str) -> tuple[str, str] | None:
    """(data file name, IO type) of a marker's file name; None for any other name."""
    head, sep, io_type = name.rpartition(MARKER_EXTENSION)
    if not sep or not head or io_type not in IO_TYPES:
        return None
    return head, io_type


def list_markers(store: WriteStore, location: TableLocation, instant: str) -> Iterator[Marker]:
    """Every marker of ``instant`` (none when its folder does not exist); names that are not
    markers are skipped, names that would leave the table raise :class:`UnsafePathError`."""
    root = marker_dir(location, instant)
    yield from _walk(store, root, "")


def _walk(store: WriteStore, directory: str, partition: str) -> Iterator[Marker]:
    for name in sorted(store.listdir(directory)):
        path = store.join(directory, name)
        if store.exists(path):
            parsed = parse_marker_name(name)
            if parsed is not None:
                check_file_name(parsed[0])
                yield Marker(partition, parsed[0], parsed[1])
        else:
            check_file_name(name)
            sub = f"{partition}/{name}" if partition else name
            yield from _walk(store, path, check_relative_partition_path(sub))


def delete_markers(store: WriteStore, location: TableLocation, instant: str) -> None:
    """Remove the marker folder of ``instant`` (its instant completed or was rolled back)."""
    store.remove_tree(marker_dir(location, instant))


__all__ = ["IO_TYPES", "MARKER_EXTENSION", "Marker", "create_marker", "delete_markers",
           "list_markers", "marker_dir", "parse_marker_name"]
