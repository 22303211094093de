"""The table's metadata table (MDT, ``.hoodie/metadata``): kept true, or dropped as Hudi does.

Readers that list a table's files through its metadata table (Hudi by default since 0.11,
hudi-rs for every table of version 8+ whose ``hoodie.table.metadata.partitions`` lists
``files``) see only what it lists, so a writer either keeps every MDT partition the table
lists true in the same instant, or does what Hudi's own writer does when the metadata table
(or one of its indexes) is turned off: it deletes that partition's directory, or the whole
``.hoodie/metadata``, and removes it from ``hoodie.table.metadata.partitions``
(``HoodieTableMetadataUtil.deleteMetadataTable`` / ``deleteMetadataTablePartition``, and
``HoodieTableConfig.setMetadataPartitionState``). Readers then list the file system again.

morlog keeps the ``files``, ``record_index``, ``column_stats``, ``partition_stats``,
``bloom_filters`` and every ``secondary_index_<name>`` partition true in every commit
(``morlog.writers.mdt.writer``, ``morlog.writers.mdt.colstats``,
``morlog.writers.mdt.secondary``; spec/mdt.md §6-§13) and drops any of them (and the
others, which it cannot keep) only when the writer opts in with Hudi's own switches (write
options of
``WriteConfig.hoodie_options``):

- ``hoodie.metadata.enable=false``: the whole metadata table;
- ``hoodie.metadata.index.column.stats.enable=false``: ``column_stats``;
- ``hoodie.metadata.index.partition.stats.enable=false``: ``partition_stats``;
- ``hoodie.metadata.record.index.enable=false``: ``record_index``;
- ``hoodie.metadata.index.bloom.filter.enable=false``: ``bloom_filters``;
- ``hoodie.metadata.index.secondary.enable=false``: every ``secondary_index_*``;
- ``hoodie.metadata.index.expression.enable=false``: every ``expr_index_*``.

A listed partition morlog can neither keep nor was allowed to drop is refused with an
:class:`UnsupportedSettingError` naming ``hoodie.table.metadata.partitions``, its value and
the switch, before anything is written. So is a kept partition whose keeper finds the table
outside what it keeps true (``PartitionKeeper.check``, asked here: e.g. a secondary index
whose definition in ``hoodie.table.index.defs.path`` is missing, of another layout version
than the table's, or on a column whose key text Hudi's writers do not settle, such as a
double).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import morlog.config as conf
from morlog.logformat.errors import UnsupportedSettingError, UsageError
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.logformat.table_files import (
    PROPERTIES_FILE,
)
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table
from morlog.writers.core.commit import CommitHooks, HookChain
from morlog.writers.core.logwriter import Mode
from morlog.writers.core.properties import update_properties
from morlog.writers.core.store import WriteStore
from morlog.writers.mdt.keeper import FILES
from morlog.writers.mdt.writer import (
    KEEPERS,
    METADATA_DIR,
    MetadataWriter,
    create_metadata_table,
    keeper_for,
)

PARTITIONS_PROPERTY = conf.METADATA_PARTITIONS
INFLIGHT_PROPERTY = conf.METADATA_PARTITIONS_INFLIGHT
ENABLE = conf.METADATA_ENABLE
#: MDT partitions (or name prefixes ending in ``_``) morlog keeps true on every commit
KEPT: frozenset[str] = frozenset(KEEPERS)
#: the switch that turns each MDT partition (by name or name prefix) off
_SWITCHES = {
    "files": ENABLE,
    "column_stats": conf.METADATA_COLUMN_STATS_ENABLE,
    "partition_stats": conf.METADATA_PARTITION_STATS_ENABLE,
    "record_index": conf.METADATA_RECORD_INDEX_ENABLE,
    "bloom_filters": conf.METADATA_BLOOM_FILTER_ENABLE,
    "secondary_index_": conf.METADATA_SECONDARY_ENABLE,
    "expr_index_": conf.METADATA_EXPRESSION_ENABLE,
}


#: every write option that turns a metadata-table partition (or the whole table) off
METADATA_SWITCHES = frozenset(_SWITCHES.values())


def switch_of(partition: str) -> str:
    """Hudi's write option that turns MDT partition ``partition`` off."""
    for name, key in _SWITCHES.items():
        if partition == name or (name.endswith("_") and partition.startswith(name)):
            return key
    return ENABLE


def listed_partitions(table: Table) -> list[str]:
    """The MDT partitions ``hoodie.properties`` lists (built or being built)."""
    out: list[str] = []
    for key in (PARTITIONS_PROPERTY, INFLIGHT_PROPERTY):
        for p in (table.config.get(key) or "").split(","):
            if p.strip() and p.strip() not in out:
                out.append(p.strip())
    return out


def _off(options: dict[str, str], key: str) -> bool:
    return (options.get(key) or "").strip().lower() == "false"


@dataclass
class MetadataPlan:
    """What a commit does with the metadata table."""

    #: drop the whole metadata table
    drop_all: bool = False
    #: MDT partitions to drop (their switch is off)
    drop: list[str] = field(default_factory=list)
    #: MDT partitions to keep true in every commit
    keep: list[str] = field(default_factory=list)

    @property
    def changes_table(self) -> bool:
        return self.drop_all or bool(self.drop)


def plan_metadata(table: Table, store: WriteStore, options: dict[str, str]) -> MetadataPlan:
    """Decide, before anything is written, what the commit does with each MDT partition;
    :class:`UnsupportedSettingError` for a partition morlog can neither keep nor drop."""
    listed = listed_partitions(table)
    mdt_dir = store.join(table.path, ".hoodie", METADATA_DIR)
    exists = bool(store.listdir(mdt_dir)) or bool(store.storage.subdirs(mdt_dir))
    if not listed and not exists:
        return MetadataPlan()
    if _off(options, ENABLE):
        return MetadataPlan(drop_all=True)
    plan = MetadataPlan()
    for p in listed:
        if _off(options, switch_of(p)):
            plan.drop.append(p)
        elif keeper_for(p) is not None:
            plan.keep.append(p)
        else:
            raise UnsupportedSettingError(
                f"morlog cannot keep the metadata table's {p!r} partition true (it keeps "
                f"{sorted(KEPT)}); set {switch_of(p)}=false to drop it as Hudi's writer "
                "does (readers then list files directly)",
                property=PARTITIONS_PROPERTY, value=table.config.get(PARTITIONS_PROPERTY),
                path=table.config.path)
    if "files" in plan.drop or (not plan.keep and exists):
        # without ``files`` the metadata table is off altogether (Hudi's rule: every other
        # partition needs it)
        return MetadataPlan(drop_all=True)
    for p in plan.keep:
        _check_keepable(table, store, mdt_dir, p, file_id_prefix(p))
        keeper = keeper_for(p)
        if keeper is not None:
            keeper.check(table)
    return plan


def file_id_prefix(partition: str) -> str:
    """The file id prefix of MDT partition ``partition``'s file groups
    (``MetadataPartitionType.getFileIdPrefix``: ``col-stats-``, ``record-index-``,
    ``secondary-index-<name>-``; the partition name with ``_`` as ``-`` otherwise)."""
    if partition == "column_stats":
        return "col-stats-"
    return partition.replace("_", "-") + "-"


def _check_keepable(table: Table, store: WriteStore, mdt_dir: str, partition: str = FILES,
                    prefix: str = f"{FILES}-") -> None:
    """An :class:`UnsupportedSettingError` (before anything is written) unless the metadata
    table that ``partition`` is listed for exists: its ``hoodie.properties`` and the
    partition holding a file group (file ids starting with ``prefix``)."""
    props = store.join(mdt_dir, ".hoodie", PROPERTIES_FILE)
    files = store.join(mdt_dir, partition)
    if not store.exists(props) or not any(
            n.startswith(prefix) or n.startswith(f".{prefix}")
            for n in store.listdir(files)):
        raise UnsupportedSettingError(
            f"lists the metadata table's {partition!r} partition, but .hoodie/metadata holds "
            f"no such table or partition (no {PROPERTIES_FILE} or no file group under "
            f"{partition}/); set {switch_of(partition)}=false to drop the listing as Hudi's "
            "writer does",
            property=PARTITIONS_PROPERTY, value=table.config.get(PARTITIONS_PROPERTY),
            path=table.config.path)


def metadata_hooks(store: WriteStore, location: TableLocation, plan: MetadataPlan, *,
                   fsync: bool = True, mode: Mode | None = None,
                   also: Sequence[CommitHooks] = ()) -> CommitHooks | None:
    """What keeps the kept MDT partitions true in a commit, chained with the hooks ``also``
    (morlog's record index: the write client's ``MorTable.commit_hooks``); None: nothing to
    keep. ``mode``: how a table version 6 MDT log is written (default: append where the
    storage can)."""
    mode = mode or ("append" if store.can_append else "rollover")
    hooks: list[CommitHooks] = []
    if FILES in plan.keep:
        hooks.append(MetadataWriter(store, location, fsync=fsync, mode=mode,
                                    partitions=plan.keep))
    hooks.extend(also)
    if len(hooks) > 1:
        return HookChain(hooks)
    return hooks[0] if hooks else None


def record_index_enabled(store: WriteStore, location: TableLocation) -> bool:
    """Whether the data table's ``hoodie.properties`` enables morlog's record index
    (``morlog.readers.record_index``)."""
    from morlog.readers.properties import read_properties
    from morlog.readers.record_index import ENABLE_PROPERTY

    try:
        props, _ = read_properties(store.storage, location.path)
    except UsageError:
        return False
    return (props.get(ENABLE_PROPERTY) or "").strip().lower() == "true"


def apply_drops(store: WriteStore, location: TableLocation, table: Table,
                plan: MetadataPlan, *, fsync: bool = True) -> None:
    """Delete what ``plan`` drops and update ``hoodie.properties`` as Hudi does (the caller
    holds the writer lock). ``hoodie.properties`` is replaced through
    ``hoodie.properties.backup``, which Hudi's readers fall back to meanwhile."""
    if not plan.changes_table:
        return
    mdt = store.join(location.path, ".hoodie", METADATA_DIR)
    props = dict(table.config.props)
    if plan.drop_all:
        # the properties first: a reader never sees listed partitions without their files
        props[PARTITIONS_PROPERTY] = ""
        if INFLIGHT_PROPERTY in props:
            props[INFLIGHT_PROPERTY] = ""
        update_properties(store, location, props, fsync=fsync)
        store.remove_tree(mdt)
        return
    for key in (PARTITIONS_PROPERTY, INFLIGHT_PROPERTY):
        if key in props:
            props[key] = ",".join(p for p in (props[key] or "").split(",")
                                  if p.strip() and p.strip() not in plan.drop)
    update_properties(store, location, props, fsync=fsync)
    for p in plan.drop:
        store.remove_tree(store.join(mdt, p))


# --- rebuilding a damaged metadata table -----------------------------------------------------


def data_files(store: WriteStore, table: Table) -> Iterator[tuple[str, str, str, str]]:
    """(partition, directory, file name, instant) of every base and log file in the table's
    partitions, whatever the state of the instant it is named after."""
    for part in table.partitions():
        directory = table.slice_dir(part)
        for name in store.listdir(directory):
            if LogFileName.matches(name):
                yield part, directory, name, LogFileName.parse(name).instant
            elif BaseFileName.matches(name):
                yield part, directory, name, BaseFileName.parse(name).instant


def live_data_files(store: WriteStore, table: Table) -> dict[str, dict[str, int]]:
    """Data partition -> {file name: size} of the base and log files that committed
    instants wrote (what ``HoodieBackedTableMetadataWriter.initializeFromFilesystem`` lists:
    the data files of each partition, files of pending or failed instants left out); the
    names the ``files`` partition of a true MDT lists."""
    tl = table.timeline
    out: dict[str, dict[str, int]] = {}
    for part, directory, name, inst in data_files(store, table):
        if tl.is_committed(inst):
            size = store.size(store.join(directory, name))
            if size > 0:
                out.setdefault(part, {})[name] = size
    return out


def rebuild_metadata_table(store: WriteStore, location: TableLocation, table: Table, *,
                           fsync: bool = True) -> str:
    """Replace a damaged metadata table (spec/mdt.md §15) as Hudi's re-bootstrap does when
    ``hoodie.metadata.enable`` goes off and on again (``deleteMetadataTable``, then
    ``initializeFromFilesystem``): the MDT is unlisted from ``hoodie.properties`` (readers
    list the file system meanwhile), ``.hoodie/metadata`` deleted, and, for table versions 8
    and 9, created again with a ``files`` partition whose base file lists the live data
    files (:func:`live_data_files`), then listed (``files`` only: the index partitions are
    not rebuilt; Hudi builds them again when its writer enables them). Table version 6: the
    MDT is dropped, as Hudi's writer with the metadata table off drops it. The caller holds
    the writer lock. ``"rebuilt"`` or ``"dropped"``."""
    mdt = store.join(location.path, ".hoodie", METADATA_DIR)
    props = dict(table.config.props)
    props[PARTITIONS_PROPERTY] = ""
    if INFLIGHT_PROPERTY in props:
        props[INFLIGHT_PROPERTY] = ""
    # unlisted first: a crash from here leaves an unlisted MDT, which the next commit drops
    update_properties(store, location, props, fsync=fsync)
    store.remove_tree(mdt)
    if table.version < 8:
        return "dropped"
    name = (props.get(conf.TABLE_NAME) or "").strip() or "morlog_table"
    create_metadata_table(store, location, name=name, version=table.version, fsync=fsync,
                          files=live_data_files(store, table))
    update_properties(store, location, {**props, PARTITIONS_PROPERTY: FILES}, fsync=fsync)
    return "rebuilt"


__all__ = ["ENABLE", "INFLIGHT_PROPERTY", "KEPT", "METADATA_DIR", "METADATA_SWITCHES",
           "MetadataPlan", "PARTITIONS_PROPERTY", "apply_drops", "data_files", "file_id_prefix",
           "listed_partitions", "live_data_files", "metadata_hooks", "plan_metadata",
           "rebuild_metadata_table", "record_index_enabled", "switch_of"]
