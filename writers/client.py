"""The write client: upserts, inserts and deletes into a merge-on-read table (table version 6).

One commit, step by step (each step leaves a table that reads exactly as before it; steps 2,
3 and 7 are the commit protocol of ``morlog.writers.core.commit``, shared with Spark):

1. Validate the batch before anything is written: key field present and non-null, schema
   compatible with the table's, duplicate keys combined by the ordering field.
2. Take the table's writer lock (``.hoodie/morlog.lock``: an exclusive ``flock`` locally, a
   lock object created by a conditional PUT on S3, see ``morlog.writers.core.store``): a second
   concurrent writer gets :class:`ConcurrentWriterError` and writes nothing.
3. Roll back instants that a dead writer left pending: a ROLLBACK command block in every log
   it wrote to, its new base files deleted, a completed rollback instant, its timeline files
   removed. Readers ignored its blocks already (they skip uncompleted instants).
4. Tag keys with the table lookup (``morlog.readers.lookup``): updates go to the file group
   that holds the key.
5. Route inserts into small file groups: every latest slice smaller than the small-file limit
   (its logs counted at ``log_to_parquet_ratio``) takes inserts up to the maximum file size,
   bin-packed by estimated record size; new file groups only when no capacity is left.
6. Write ``<instant>.deltacommit.requested`` and ``.inflight`` (the inflight file lists the file
   groups the commit will write, so that a rollback knows where to put its command blocks),
   then the indexed blocks and new base files (footer: ``morlog.compat.base_footer``).
7. Write the completed ``<instant>.deltacommit`` with commit metadata that stock readers
   parse.

Tables live on the local file system (logs appended, as Hudi 0.x does) or on S3 (every write
a new log version, as on any object store): ``MorTable("s3://bucket/table?...")``. The path
or URI is resolved once (``morlog.readers.storage.TableLocation``) and handed down.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from morlog.compat.base_footer import encode_base_footer
from morlog.logformat.arrow_sort import sort_indices_nulls_first
from morlog.logformat.base_keys import encode_base_keys
from morlog.logformat.blocks import META_FIELDS, RECORD_KEY_FIELD
from morlog.logformat.column_stats_section import StatsColumns
from morlog.logformat.delete_content import encode_delete_columns
from morlog.logformat.errors import UsageError
from morlog.logformat.hudi_bloom import DEFAULT_NUM_ENTRIES
from morlog.logformat.keygen import KeyGenSpec
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.logformat.table_files import (
    PAYLOAD_COMMIT_TIME,
    PAYLOAD_EVENT_TIME,
)
from morlog.logformat.virtual_keys import KeyField, VirtualKeys
from morlog.logformat.xxh64 import U64, distinct_hashes
from morlog.readers.base_files import table_base_format
from morlog.readers.base_keys import SUFFIX as BASE_KEYS_SUFFIX
from morlog.readers.base_keys import base_keys_dir
from morlog.readers.lookup import KeyTagger
from morlog.readers.parallel import run_all
from morlog.readers.record_index import index_location
from morlog.readers.storage import TableLocation
from morlog.readers.table import FileSlice, Table
from morlog.writers.core.base_file import encode_base_file, parquet_write_options
from morlog.writers.core.commit import (
    Commit,
    CommitHooks,
    CommitResult,
    RecordChanges,
    rollback_pending,
)
from morlog.writers.core.indexed import IndexedLogWriter
from morlog.writers.core.logwriter import Mode
from morlog.writers.core.profile import table_schema_json, write_profile
from morlog.writers.core.sizing import average_record_size
from morlog.writers.core.store import (
    ConcurrentWriterError,
    WriterLock,
    WriteStore,
)
from morlog.writers.core.tagging import (
    global_index,
    global_tags,
    stored_wins,
    update_partition_path,
)
from morlog.writers.core.timeline import WRITE_TOKEN, base_file_name, ensure_partition, new_instant
from morlog.writers.create import create_table, open_store
from morlog.writers.mdt.plan import (
    apply_drops,
    metadata_hooks,
    plan_metadata,
    record_index_enabled,
)
from morlog.writers.options import RECORDKEY_FIELD, WriteConfig, WriteOptions
from morlog.writers.services import cleaning, compaction, logcompaction
from morlog.writers.services.cleaning import CleanReport, inline_clean
from morlog.writers.services.compaction import (
    CompactReport,
    check_unreadable_plans,
    inline_compaction,
)
from morlog.writers.services.logcompaction import LogCompactReport, inline_log_compaction
from morlog.writers.services.overwrite import (
    delete_partitions,
    insert_overwrite,
    insert_overwrite_table,
)
from morlog.writers.services.record_index import (
    INDEX_OPTIONS,
    BuildResult,
    RecordIndexWriter,
    build,
)


class MorTable:
    """A merge-on-read table opened for writing (any Hudi MOR table of version 6, 8 or 9
    whose ``hoodie.properties`` morlog can honour; new ones from :meth:`create`).

    >>> table = MorTable("rides", WriteConfig(fsync=False))
    >>> table.key_field, table.partition_field, table.ordering_field
    ('uuid', 'city', 'ts')
    """

    def __init__(self, path: str | TableLocation, config: WriteConfig | None = None) -> None:
        """``path``: a local path, a URI (``s3://bucket/table?endpoint_override=...``) or a
        :class:`~morlog.readers.storage.TableLocation` resolved already."""
        self.location = TableLocation.of(path)
        self.uri = self.location.uri
        self.config = config or WriteConfig()
        self.store = open_store(self.location, self.config)
        self.path = self.location.path
        self.mode: Mode = self.config.mode or ("append" if self.store.can_append
                                               else "rollover")
        #: Hudi's write token in the names of the files this client writes (a task of a
        #: distributed write has its own: ``morlog.writers.distributed``)
        self.write_token = WRITE_TOKEN
        #: file sizes per partition, listed once per commit for insert routing
        self._sizes: dict[str, dict[str, int]] = {}
        #: the record keys of the batch being written and their XXH64, as the uniqueness
        #: check hashed them (new base files' key indexes take theirs from it)
        self._key_hashes: tuple[pa.Array, U64] | None = None
        table = self.table()
        #: what hoodie.properties asks of a writer; raises before anything is written
        self.profile = write_profile(table)
        self.version = self.profile.version
        self.props = table.config.props
        #: how records get their keys and partition paths (Hudi's key generators)
        self.keygen = KeyGenSpec.from_properties(self.props)
        self.key_fields = self.keygen.key_fields
        #: the first key and partition field (the one field of simple keys and partitions)
        self.key_field = self.key_fields[0]
        parts = self.keygen.partition_fields
        self.partition_field = parts[0] if parts else None
        self.hive_style = self.keygen.hive_style
        self.urlencode = self.keygen.urlencode
        self.ordering_field = self.profile.ordering_field
        #: every ordering field (several: compared as a tuple, table version 9)
        self.ordering_fields = self.profile.ordering_fields or (
            (self.ordering_field,) if self.ordering_field else ())
        #: False: the meta columns stay null and readers derive keys from the key fields
        self.populate_meta_fields = self.profile.populate_meta_fields
        self.avro_schema = self.profile.avro_schema
        self.arrow_schema = self.profile.arrow_schema
        self.data_schema = self.profile.data_schema
        #: the table schema (Avro JSON text) this client last read or committed: a write
        #: finding another under the lock takes that one (:meth:`reload_schema`)
        self._schema_seen = table_schema_json(table)
        #: the codec of Parquet-carrier log blocks: ``hoodie.parquet.compression.codec``
        #: (write option over table property; Hudi's default snappy), checked here
        self.log_parquet_codec = str(parquet_write_options(
            {**self.props, **self.config.hoodie_options})["compression"])
        #: which columns every data block keeps statistics of (COLUMN_STATS, spec/index.md
        #: §4.11): Hudi's column-stats settings, write options over table properties
        self.stats_columns = StatsColumns.from_props({**self.props,
                                                      **self.config.hoodie_options})
        #: what every commit does with the metadata table (refused here if it cannot)
        self.metadata_plan = plan_metadata(table, self.store, self.config.hoodie_options)

    def table(self) -> Table:
        """The table as it is now, for reading."""
        return Table(self.location)

    # --- creating ----------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | TableLocation, schema: pa.Schema, *, key_field: str,
               partition_field: str | None = None, ordering_field: str | None = None,
               name: str | None = None, event_time_ordering: bool | None = None,
               config: WriteConfig | None = None,
               table_version: int | None = None,
               table_properties: Mapping[str, str] | None = None) -> MorTable:
        """Create an empty table (``hoodie.properties``, timeline directory).

        ``table_version``: 6, 8 or 9; default Hudi's ``hoodie.write.table.version`` from
        ``config.hoodie_options``, else the version current Hudi writes
        (:data:`~morlog.logformat.table_files.DEFAULT_TABLE_VERSION`, 9).
        ``table_properties``: more ``hoodie.properties`` entries, over morlog's own (e.g.
        ``hoodie.datasource.write.hive_style_partitioning``, the key generator class).

        Versions 8 and 9 get a metadata table with the ``files`` partition, as Hudi
        initialises it (``hoodie.metadata.enable``, default true; ``false`` creates none;
        with ``new_groups="log"`` only ``true`` creates one: spec/table.md §15).

        The table the other examples of :class:`MorTable` and :class:`Table` start from
        (names from ``import morlog``; ``tests/test_docs.py`` runs them):

        >>> import pyarrow as pa
        >>> schema = pa.schema([("uuid", pa.string()), ("ts", pa.int64()),
        ...                     ("fare", pa.float64()), ("city", pa.string())])
        >>> table = MorTable.create("rides", schema, key_field="uuid", partition_field="city",
        ...                         ordering_field="ts")
        >>> table.upsert(pa.table({"uuid": ["a", "b", "c"], "ts": [1, 1, 1],
        ...                        "fare": [10.0, 20.0, 30.0],
        ...                        "city": ["sf", "sf", "nyc"]})).inserts
        3
        >>> table.upsert(pa.table({"uuid": ["a"], "ts": [2], "fare": [12.5],
        ...                        "city": ["sf"]})).updates
        1
        """
        location = TableLocation.of(path)
        create_table(location, schema, key_field=key_field, partition_field=partition_field,
                     ordering_field=ordering_field, name=name,
                     event_time_ordering=event_time_ordering, config=config,
                     table_version=table_version, table_properties=table_properties)
        return cls(location, config)

    # --- the lock and the commit protocol ----------------------------------------------

    @classmethod
    def create_from_options(cls, path: str | TableLocation, schema: pa.Schema,
                            options: WriteOptions) -> MorTable:
        """Create the table Hudi's write options describe (:func:`parse_write_options`),
        for a batch of ``schema``."""
        if not options.key:
            raise UsageError(f"creating a table needs {RECORDKEY_FIELD}",
                             path=str(getattr(path, "uri", path)))
        return cls.create(path, schema, key_field=options.key,
                          partition_field=options.partition or None,
                          ordering_field=options.ordering or None, name=options.table_name,
                          event_time_ordering=options.event_time_ordering,
                          config=options.config, table_properties=options.table_properties)

    def writer_lock(self) -> WriterLock:
        return self.store.lock(self.path)

    def commit(self, operation: str, action: str = "deltacommit", *,
               instant: str | None = None) -> Commit:
        """A new commit of this table (enter it to lock, roll back dead writers and get the
        instant; see ``morlog.writers.core.commit``); ``action``: ``replacecommit`` for the
        replace operations. ``instant``: the instant a distributed write planned
        (``morlog.writers.distributed``); it must still be the latest, else
        :class:`ConcurrentWriterError`."""
        c = Commit(self.store, self.location, mode=self.mode, operation=operation,
                   schema=self.commit_schema(), fsync=self.config.fsync, action=action,
                   hooks=self.commit_hooks(), instant=instant, optimistic=instant is not None)
        c.extra_metadata = dict(self.config.commit_metadata)
        return c

    def commit_schema(self) -> dict[str, Any]:
        """The schema a commit records (``extraMetadata.schema``): the data fields, without
        meta fields, as Hudi's writers record it."""
        return {**self.avro_schema, "fields": [f for f in self.avro_schema["fields"]
                                               if f["name"] not in META_FIELDS]}

    # --- public operations -------------------------------------------------------------

    def upsert(self, batch: pa.Table | pa.RecordBatch) -> CommitResult:
        """Write ``batch`` as one delta commit: a key the table holds is updated where it
        lives (Hudi's merge by ordering field), any other is inserted. The batch is checked
        first (:meth:`validate`); nothing is written when it does not fit.

        >>> r = MorTable("rides").upsert(pa.table({"uuid": ["b", "d"], "ts": [5, 5],
        ...                                         "fare": [21.0, 40.0],
        ...                                         "city": ["sf", "nyc"]}))
        >>> (r.inserts, r.updates)
        (1, 1)
        """
        return self._write(batch, "upsert")

    def insert(self, batch: pa.Table | pa.RecordBatch) -> CommitResult:
        """Write ``batch`` as one delta commit of new records (Hudi's ``insert``).

        >>> MorTable("rides").insert(pa.table({"uuid": ["e"], "ts": [1], "fare": [5.0],
        ...                                    "city": ["la"]})).inserts
        1
        """
        return self._write(batch, "insert")

    def delete(self, batch: pa.Table | pa.RecordBatch) -> CommitResult:
        """Delete the keys of ``batch`` (key field, and partition field when partitioned).

        >>> MorTable("rides").delete(pa.table({"uuid": ["c"], "city": ["nyc"]})).deletes
        1
        >>> sorted(Table("rides").read(columns=["uuid"])["uuid"].to_pylist())
        ['a', 'b']
        """
        return self._write(batch, "delete")

    def insert_overwrite(self, batch: pa.Table | pa.RecordBatch) -> CommitResult:
        """Replace the data of the partitions the batch touches with the batch (Hudi's
        ``insert_overwrite``: a replace commit; see ``morlog.writers.services.overwrite``).

        >>> r = MorTable("rides").insert_overwrite(pa.table({"uuid": ["x"], "ts": [1],
        ...                                                   "fare": [1.0], "city": ["sf"]}))
        >>> sorted(r.replaced), sorted(Table("rides").read(columns=["uuid"])["uuid"].to_pylist())
        (['sf'], ['c', 'x'])
        """
        with self.schema_guard():  # a refused or failed write keeps no evolved schema
            return insert_overwrite(self, batch)

    def insert_overwrite_table(self, batch: pa.Table | pa.RecordBatch) -> CommitResult:
        """Replace the whole table's data with the batch (``insert_overwrite_table``).

        >>> r = MorTable("rides").insert_overwrite_table(pa.table(
        ...     {"uuid": ["x"], "ts": [1], "fare": [1.0], "city": ["la"]}))
        >>> Table("rides").read(columns=["uuid", "city"]).to_pylist()
        [{'uuid': 'x', 'city': 'la'}]
        """
        with self.schema_guard():  # a refused or failed write keeps no evolved schema
            return insert_overwrite_table(self, batch)

    def delete_partitions(self, partitions: Sequence[str]) -> CommitResult:
        """Drop every record of the named partitions (relative partition paths; ``*``
        matches within a path segment), as Hudi's ``delete_partition`` does.

        >>> r = MorTable("rides").delete_partitions(["nyc"])
        >>> sorted(Table("rides").read(columns=["uuid"])["uuid"].to_pylist())
        ['a', 'b']
        """
        return delete_partitions(self, partitions)

    # --- the commit ---------------------------------------------------------------------

    def _write(self, batch: pa.Table | pa.RecordBatch, operation: str) -> CommitResult:
        with self.schema_guard():
            return self._write_checked(batch, operation)

    def _write_checked(self, batch: pa.Table | pa.RecordBatch, operation: str
                       ) -> CommitResult:
        t0 = time.perf_counter()
        raw = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        table = self.validate(raw, operation)
        keys, parts = self.keys_of(table)
        if operation != "delete":
            table, keys, parts = self.combine_duplicates(table, keys, parts)
        with self.commit(operation) as c:
            if self.reload_schema(c.table()):
                # another writer evolved the schema since this client read it: the batch
                # is checked again against that schema, which this commit records
                table = self.validate(raw, operation)
                keys, parts = self.keys_of(table)
                if operation != "delete":
                    table, keys, parts = self.combine_duplicates(table, keys, parts,
                                                                 c.table())
                c.schema = self.commit_schema()
            self._sizes = {}
            instant = c.instant
            result = CommitResult(instant, operation, rolled_back=c.rolled_back)
            plan = self.plan_batch(c.table(), table, keys, parts, operation, result)
            apply_drops(self.store, self.location, c.table(), self.metadata_plan,
                        fsync=self.config.fsync)
            result.seconds["plan"] = time.perf_counter() - t0
            c.start(plan.groups())
            t1 = time.perf_counter()
            stats = self.execute_plan(plan, instant, result)
            result.seconds["write"] = time.perf_counter() - t1
            result.seconds["total"] = time.perf_counter() - t0
            c.complete(stats, result.summary(), changes=plan.record_changes)
            self._schema_seen = json.dumps(c.schema, separators=(",", ":"))
        self.table_services()
        return result

    def table_services(self) -> None:
        """What Hudi runs inline after a write: compaction when configured
        (``hoodie.compact.inline`` / ``hoodie.compact.schedule.inline``,
        ``morlog.writers.services.compaction``), log compaction when configured
        (``hoodie.log.compaction.inline``, ``morlog.writers.services.logcompaction``), then the
        automatic clean (``hoodie.clean.automatic``,
        on by default as in Hudi: ``BaseHoodieWriteClient.autoCleanOnCommit``;
        ``morlog.writers.services.cleaning``), each under the writer lock."""

        inline_compaction(self)
        inline_log_compaction(self)
        inline_clean(self)

    def validate(self, table: pa.Table, operation: str) -> pa.Table:
        """The batch checked and converted to the table's data schema (duplicate keys
        combined; for deletes: key, partition and ordering columns); raises
        :class:`UsageError` when it does not fit. Writes nothing.

        Hudi's rules: a record key may be neither null nor empty; an upsert or insert
        carries the ordering (precombine) field, never null; a batch lacks no data column
        unless ``set_null_for_missing_columns``; every partition value makes a safe
        relative partition path (:meth:`partition_paths`); a column's type is the table's
        or one of Hudi's type promotions to it (``int -> long -> float -> double``,
        ``string <-> bytes``, wider decimals: :mod:`morlog.writers.core.promotion`), any other
        type a :class:`UsageError` naming the column and both types."""
        names = table.column_names
        missing_keys = [c for c in self.keygen.required_columns if c not in names]
        if missing_keys:
            raise UsageError(f"the batch lacks key or partition fields {missing_keys}",
                             path=self.path, expected=list(self.keygen.required_columns),
                             actual=names)
        for ordering in self.ordering_fields:
            if operation != "delete" and ordering not in names:
                raise UsageError(f"the batch has no ordering field {ordering!r}",
                                 path=self.path, expected=ordering, actual=names)
            if operation != "delete" and table.column(ordering).null_count:
                raise UsageError(f"ordering field {ordering!r} must not be null",
                                 path=self.path)
        if operation == "delete":
            keep = list(self.keygen.required_columns)
            for ordering in self.ordering_fields:
                if ordering in names and ordering not in keep:
                    keep.append(ordering)
            return table.select(keep)
        # new nullable columns and widened types evolve the table's schema for this write
        # (morlog.writers.core.evolution: Hudi's deduceWriterSchema); refused before writing
        self.evolve_schema(table.schema)
        unknown = [n for n in names if n not in self.data_schema.names]
        missing = [f.name for f in self.data_schema if f.name not in names
                   and not f.nullable]
        if unknown or missing:
            raise UsageError("the batch does not match the table schema", path=self.path,
                             expected=self.data_schema.names, actual=names)
        absent = [f.name for f in self.data_schema if f.name not in names]
        if absent and not (self.config.set_null_for_missing_columns
                           or self.config.reconcile_schema):
            raise UsageError(f"the batch lacks data columns {absent} (Hudi refuses it unless "
                             "hoodie.write.set.null.for.missing.columns: set "
                             "WriteConfig.set_null_for_missing_columns to write NULL there)",
                             path=self.path, expected=self.data_schema.names, actual=names)
        from morlog.writers.core.promotion import check_promotion, promote_column

        # every column's type checked before any value is converted: only Hudi's type
        # promotions (morlog.writers.core.promotion), a string column never parsed into numbers
        for f in self.data_schema:
            if f.name in names:
                check_promotion(f.name, table.schema.field(f.name).type, f.type, self.path)
        cols = []
        for f in self.data_schema:
            if f.name in names:
                cols.append(promote_column(f.name, table.column(f.name), f.type, self.path))
            else:
                cols.append(pa.nulls(table.num_rows, f.type))
        return pa.Table.from_arrays(cols, schema=self.data_schema)

    def evolve_schema(self, batch: pa.Schema) -> None:
        """Adopt the table schema a batch of schema ``batch`` evolves (new nullable columns,
        top level or struct fields; widened types) for the next commit, which records it
        (``extraMetadata.schema``); nothing when the batch brings no change. A
        :class:`UsageError` naming the column and Hudi's rule when the batch's schema is
        not an evolution Hudi allows (:mod:`morlog.writers.core.evolution`). The schema
        before the first evolution is kept for :meth:`schema_guard`."""
        from morlog.writers.core.evolution import evolve

        skip = set(META_FIELDS) | set(self.profile.dropped_columns)
        got = evolve(self.avro_schema, batch, meta_fields=skip, where=self.path,
                     new_columns_nullable=(self.config.new_columns_nullable
                                           or self.config.set_null_for_missing_columns))
        if got is None:
            return
        avro, arrow = got
        old = self.data_schema
        data = [arrow.field(f.name) if f.name in arrow.names else f for f in old]
        data += [f for f in arrow if f.name not in skip and f.name not in old.names]
        self.avro_schema, self.arrow_schema = avro, arrow
        self.data_schema = pa.schema(data)

    def reload_schema(self, view: Table) -> bool:
        """Take the table's latest schema from ``view`` (read under the writer lock) when
        it is not the one this client last read or wrote (another writer evolved it: a
        commit recording this client's older schema would drop the other's columns from
        the table's schema); whether it did."""
        latest = table_schema_json(view)
        if latest == self._schema_seen:
            return False
        self.profile = write_profile(view)
        self.avro_schema = self.profile.avro_schema
        self.arrow_schema = self.profile.arrow_schema
        self.data_schema = self.profile.data_schema
        self._schema_seen = latest
        return True

    @contextlib.contextmanager
    def schema_guard(self) -> Iterator[None]:
        """The writer's schema as it was when the block fails: a write that raises leaves
        no evolved schema behind for the next one (:meth:`evolve_schema`)."""
        saved = (self.profile, self.avro_schema, self.arrow_schema, self.data_schema,
                 self._schema_seen)
        try:
            yield
        except BaseException:
            (self.profile, self.avro_schema, self.arrow_schema, self.data_schema,
             self._schema_seen) = saved
            raise

    def keys_of(self, batch: pa.Table) -> tuple[pa.Array, pa.Array]:
        """The record key and partition path of every record of a validated batch, as
        Hudi's key generator of this table makes them; a typed error for values it refuses
        (null or empty simple keys, unsafe paths). Writers call it before anything is
        written."""
        return self.keygen.record_keys(batch), self.keygen.partition_paths(batch)

    def partition_paths(self, batch: pa.Table) -> pa.Array:
        """The relative partition path of every record of ``batch``, as Hudi's key
        generator of this table builds it (``morlog.logformat.keygen``)."""
        return self.keygen.partition_paths(batch)

    def combine_duplicates(self, table: pa.Table, keys: pa.Array, parts: pa.Array,
                           view: Table | None = None, *, by_partition: bool | None = None
                           ) -> tuple[pa.Table, pa.Array, pa.Array]:
        """One record per key (and partition path, unless the table's index is global:
        :func:`~morlog.writers.core.tagging.global_index` of ``view``, default the table
        now, or as ``by_partition`` says; Hudi's ``HoodieWriteHelper.deduplicateRecords``
        combines so): the greatest ordering value wins, the later one on ties."""
        n = table.num_rows
        distinct, hashes = distinct_hashes(keys)
        if distinct:
            self._key_hashes = (keys, hashes)
            return table, keys, parts
        if by_partition is None:
            by_partition = not global_index(view if view is not None else self.table())
        idx = pa.table({"k": keys, "p": parts.cast(pa.string()), "i": pa.array(np.arange(n))})
        order_cols = [("k", "ascending")] + ([("p", "ascending")] if by_partition else [])
        # several ordering fields compare as a tuple, field by field (ArrayComparable)
        for j, name in enumerate(self.ordering_fields):
            idx = idx.append_column(f"o{j}", table.column(name))
            order_cols.append((f"o{j}", "ascending"))
        order_cols.append(("i", "ascending"))
        idx = idx.take(sort_indices_nulls_first(idx, order_cols))
        last = np.ones(n, dtype=bool)
        same = pc.equal(idx.column("k").slice(0, n - 1), idx.column("k").slice(1))
        if by_partition:
            same = pc.and_(same, pc.equal(idx.column("p").slice(0, n - 1),
                                          idx.column("p").slice(1)))
        last[:-1] = ~np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)
        rows = pa.array(np.sort(idx.column("i").to_numpy()[last]))
        return table.take(rows), keys.take(rows), parts.take(rows)

    # --- planning -----------------------------------------------------------------------

    def plan_batch(self, table_view: Table, batch: pa.Table, keys: pa.Array, parts: pa.Array,
              operation: str, result: CommitResult) -> _Plan:
        plan = _Plan()
        keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
        plan.keys = keys
        plan.batch = batch
        tagged = self._global_tags(table_view, keys, parts, operation, plan)
        if tagged is None and operation != "insert":
            tagged = KeyTagger(table_view).tag(keys, parts)
        target = plan.deletes if operation == "delete" else plan.updates
        codes = np.full(len(keys), -1, dtype=np.int32)
        if tagged is not None:
            codes = tagged.codes
            # a key the table holds in several file groups (Hudi's insert allows it): the
            # update or delete goes to every one of them, as Hudi's index tags each copy
            for i, others in tagged.also.items():
                for other in others:
                    target.setdefault(other, []).append(i)
            for code, held in _rows_by_code(codes):
                target.setdefault(tagged.groups[code], []).extend(held.tolist())
            for listed in target.values():
                listed.sort()
        tagged_count = int(np.count_nonzero(codes >= 0))
        if operation == "delete":
            result.deletes += tagged_count
        else:
            result.updates += tagged_count
        pending = table_view.timeline.pending_services()
        plan.pending_compaction = pending.compaction
        # file groups under a pending service take no routed inserts (Hudi's small-file
        # selection skips them too)
        slices = {(s.partition, s.file_id): s for s in table_view.file_slices()
                  if (s.partition, s.file_id) not in pending.compaction
                  and (s.partition, s.file_id) not in pending.clustering}
        if pending.unreadable:  # requested plans that do not decode (spec/services.md §4.6)
            check_unreadable_plans(pending.unreadable, self.version, slices.values())
        inserts_by_part: dict[str, list[int]] = {}
        new_rows = np.flatnonzero(codes < 0)
        if operation != "delete" and new_rows.size:
            enc = parts.take(pa.array(new_rows)).dictionary_encode()
            for code, local in _rows_by_code(enc.indices.to_numpy(zero_copy_only=False)):
                inserts_by_part[enc.dictionary[code].as_py()] = new_rows[local].tolist()
        # checked on the tagged file groups (routed inserts never go to these groups)
        self._refuse_clustered(plan, pending.clustering)
        plan.batch = batch
        if inserts_by_part:
            size = self.record_size(table_view)
            for part, rows in inserts_by_part.items():
                result.inserts += len(rows)
                self.route(part, rows, size, slices, plan, result)
        return plan

    def plan_routed(self, table_view: Table, batch: pa.Table, keys: pa.Array,
                    parts: pa.Array, fids: pa.Array, new: pa.Array, inserted: pa.Array,
                    deleted: pa.Array, operation: str, result: CommitResult) -> _Plan:
        """The plan of a batch whose rows were tagged and routed before (Spark's
        distributed upsert, spec/table.md §7.6): row ``i`` goes to file group ``fids[i]``
        of partition ``parts[i]``, a new group when ``new[i]``; ``inserted[i]``: an insert
        (routed into an existing group, or in a new one); ``deleted[i]``: a delete there
        (every row of a delete; an upsert's record moving away: a natural delete of the key
        and partition fields). ``keys``: the record keys. The pending-service rules are
        :meth:`plan_batch`'s."""
        plan = _Plan(batch=batch, keys=keys.combine_chunks()
                     if isinstance(keys, pa.ChunkedArray) else keys)
        n = batch.num_rows
        is_new = np.asarray(new.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
        is_ins = np.asarray(inserted.fill_null(False).to_numpy(zero_copy_only=False),
                            dtype=bool)
        is_del = np.asarray(deleted.fill_null(False).to_numpy(zero_copy_only=False),
                            dtype=bool)
        if operation != "delete" and is_del.any():
            plan.delete_columns = list(self.keygen.required_columns)
        ids = pc.binary_join_element_wise(parts.cast(pa.string()), fids.cast(pa.string()),
                                          "\x00")
        enc = ids.dictionary_encode()
        codes = np.asarray(enc.indices.fill_null(-1).to_numpy(zero_copy_only=False),
                           dtype=np.int64)
        groups = [tuple(str(v).split("\x00", 1)) for v in enc.dictionary.to_pylist()]
        for code, held in _rows_by_code(codes):
            g = (groups[code][0], groups[code][1])
            rows = held.tolist()
            first = int(held[0])
            if is_new[first]:
                plan.new_groups.append((g[0], g[1], rows))
                result.new_groups.append(g)
                result.inserts += len(rows)
                continue
            dels = held[is_del[held]] if operation != "delete" else held
            ups = held[~is_del[held]] if operation != "delete" else held[:0]
            if dels.size:
                plan.deletes.setdefault(g, []).extend(dels.tolist())
            if ups.size:
                plan.updates.setdefault(g, []).extend(ups.tolist())
                routed = ups[is_ins[ups]]
                if routed.size:
                    plan.routed.setdefault(g, []).extend(routed.tolist())
                    result.inserts += int(routed.size)
                    result.inserts_routed_to_existing += int(routed.size)
        if operation == "delete":
            result.deletes += n
        else:
            result.updates += int(np.count_nonzero(~is_ins & ~is_del))
        pending = table_view.timeline.pending_services()
        plan.pending_compaction = pending.compaction
        self._refuse_clustered(plan, pending.clustering)
        return plan

    def _refuse_clustered(self, plan: _Plan, clustering: dict[tuple[str, str], str]) -> None:
        busy = {g for g in [*plan.updates, *plan.deletes] if g in clustering}
        if busy:
            p, f = sorted(busy)[0]
            raise UsageError(f"file group {f} of partition {p!r} is under pending clustering "
                             f"{clustering[(p, f)]}: Hudi rejects updates and deletes "
                             "to it until the clustering completes (its default "
                             "hoodie.clustering.updates.strategy)", path=self.path,
                             actual=len(busy))

    def _global_tags(self, table_view: Table, keys: pa.Array, parts: pa.Array,
                     operation: str, plan: _Plan) -> Any:
        """With a global record index (morlog's, or Hudi's ``record_index`` the metadata
        table lists; spec/rli.md §4a): every key tagged
        wherever it lives, inserts too. A delete removes the key where it lives; a record
        whose key lives in another partition is written there
        (``hoodie.record.index.update.partition.path`` false, Hudi's default) or moved: a
        delete where it lives, an insert in its own partition (true). None without the
        index."""
        move = update_partition_path(self.config.hoodie_options)
        found = global_tags(table_view, keys, parts)
        if found is None:
            return None
        tagged = found.tags
        if operation != "delete" and move and found.moved.any():
            assert plan.batch is not None
            # a stored record that wins the merge stays where it is (an update there)
            moves = found.moved & ~stored_wins(table_view, found, plan.batch, keys)
            codes = tagged.codes.copy()
            for code, held in _rows_by_code(np.where(moves, codes, -1)):
                plan.deletes.setdefault(tagged.groups[code], []).extend(held.tolist())
            codes[moves] = -1
            tagged.codes = codes
            # the old copy goes whatever its ordering value: a natural delete
            plan.delete_columns = list(self.keygen.required_columns)
        return tagged

    def record_size(self, view: Table | None = None) -> int:
        """Bytes per record of a base file, for insert routing: ``WriteConfig.record_size``
        when set, else Hudi's estimate from the newest commits of ``view`` (default: the
        table now; ``morlog.writers.core.sizing``). The write client and Spark's distributed
        upsert both route with it."""
        cfg = self.config
        if cfg.record_size:
            return cfg.record_size
        return average_record_size(view or self.table(), small_file_limit=cfg.small_file_limit,
                                   default=cfg.record_size_estimate,
                                   threshold=cfg.record_size_threshold,
                                   max_commits=cfg.record_size_max_commits)

    def slice_size(self, s: FileSlice) -> int:
        """A file slice's size for insert routing (its log files at Hudi's log-to-Parquet
        compression ratio), from one listing per partition."""
        # one listing per partition (object stores: not one request per file)
        sizes = self._sizes.get(s.partition)
        if sizes is None:
            sizes = self._sizes[s.partition] = self.store.storage.sizes(
                self.partition_path(s.partition))
        base = sizes.get(s.base_file, 0) if s.base_file else 0
        logs = sum(sizes.get(n, 0) for n in s.log_files)
        return base + int(logs * self.config.log_to_parquet_ratio)

    def insert_bins(self, part: str, count: int, record_size: int,
                    slices: dict[tuple[str, str], FileSlice],
                    planned_bytes: dict[tuple[str, str], int] | None = None
                    ) -> list[tuple[str, int, bool]]:
        """Where ``count`` inserts of partition ``part`` go: (file id, how many, new group?).

        Existing latest slices below the small-file limit first, smallest first, each up to
        the maximum file size at ``record_size`` bytes per record; then new file groups."""
        cfg = self.config
        planned = planned_bytes or {}
        small = []
        for (p, fid), s in slices.items():
            if p != part or not cfg.route_inserts:
                continue
            size = self.slice_size(s) + planned.get((p, fid), 0)
            if size < cfg.small_file_limit:
                small.append((size, fid))
        small.sort()  # fill the smallest first (Hudi's order)
        bins: list[tuple[str, int, bool]] = []
        left = count
        for size, fid in small:
            if left <= 0:
                break
            room = min(left, (cfg.max_file_size - size) // record_size)
            if room > 0:
                bins.append((fid, room, False))
                left -= room
        per_group = max(1, cfg.max_file_size // record_size)
        while left > 0:
            n = min(left, per_group)
            bins.append((f"{uuid.uuid4()}-0", n, True))
            left -= n
        return bins

    def route(self, part: str, rows: list[int], record_size: int,
               slices: dict[tuple[str, str], FileSlice], plan: _Plan,
               result: CommitResult) -> None:
        pos = 0
        for fid, n, new in self.insert_bins(part, len(rows), record_size, slices,
                                            plan.planned_bytes):
            take = rows[pos : pos + n]
            pos += n
            if new:
                plan.new_groups.append((part, fid, take))
                result.new_groups.append((part, fid))
            else:
                plan.updates.setdefault((part, fid), []).extend(take)
                plan.routed.setdefault((part, fid), []).extend(take)
                plan.planned_bytes[(part, fid)] = plan.planned_bytes.get(
                    (part, fid), 0) + len(take) * record_size
                result.inserts_routed_to_existing += len(take)

    # --- executing ----------------------------------------------------------------------

    def partition_path(self, partition: str) -> str:
        """The directory of a partition ("": the table's own directory)."""
        return self.location.partition_path(partition)

    def _dir(self, partition: str) -> str:
        """The partition's directory, made (with Hudi's partition metadata) if missing."""
        return ensure_partition(self.store, self.location, partition, fsync=self.config.fsync)

    def _with_meta(self, batch: pa.Table, rows: Sequence[int] | None, instant: str, fid: str,
                   partition: str) -> pa.Table:
        sub = batch if rows is None else batch.take(pa.array(list(rows), type=pa.int64()))
        n = sub.num_rows
        keys = self.keygen.record_keys(sub)

        def same(value: str) -> pa.Array:
            return pa.repeat(pa.scalar(value, pa.string()), n)

        if not self.populate_meta_fields:
            # HoodieAvroParquetWriter / HoodieAppendHandle leave every meta column null
            cols = [pa.nulls(n, pa.string()) if f.name in META_FIELDS else sub.column(f.name)
                    for f in self.arrow_schema]
            return pa.Table.from_arrays(cols, schema=self.arrow_schema)

        # Hudi's sequence number <instant>_<partition id>_<record index>, built column-wise
        seq = pc.cast(pa.array(np.arange(n, dtype=np.int64)), pa.string())
        meta = {
            "_hoodie_commit_time": same(instant),
            "_hoodie_commit_seqno": pc.binary_join_element_wise(same(f"{instant}_0_"), seq, ""),
            "_hoodie_record_key": keys,
            "_hoodie_partition_path": same(partition),
            "_hoodie_file_name": same(fid),
        }
        cols = [meta[f.name] if f.name in meta else sub.column(f.name)
                for f in self.arrow_schema]
        return pa.Table.from_arrays(cols, schema=self.arrow_schema)

    def _log_writer(self, partition: str, fid: str, base_instant: str, instant: str = "",
                    slice_logs: Sequence[str] = ()) -> IndexedLogWriter:
        """The indexed log writer of a file slice keyed ``base_instant``: logs named after it
        in table version 6, after the delta commit ``instant`` in 8+ (one set of log files
        per delta commit, the slice's earlier ones in ``slice_logs``)."""
        if self.version >= 8 and instant:
            return IndexedLogWriter(self._dir(partition), fid, instant,
                                    write_token=self.write_token, mode="rollover",
                                    key_field=self._key_field(), fsync=self.config.fsync,
                                    store=self.store, scope=base_instant,
                                    slice_log_files=slice_logs,
                                    column_stats=self.stats_columns)
        return IndexedLogWriter(self._dir(partition), fid, base_instant,
                                write_token=self.write_token, mode=self.mode,
                                key_field=self._key_field(), fsync=self.config.fsync,
                                store=self.store, column_stats=self.stats_columns)

    def _key_field(self) -> KeyField:
        """How the table's blocks are keyed: the meta column, or the key fields."""
        return RECORD_KEY_FIELD if self.populate_meta_fields else VirtualKeys(self.key_fields)

    def execute_plan(self, plan: _Plan, instant: str, result: CommitResult
                 ) -> dict[str, list[dict[str, Any]]]:
        stats: dict[str, list[dict[str, Any]]] = {}
        slices = {(s.partition, s.file_id): s for s in self.table().file_slices()}
        batch = plan.batch
        assert batch is not None
        # each group takes its rows from the batch: from one chunk per column, a take gathers
        # directly (over several chunks, each take resolves every index through the chunks)
        batch = batch.combine_chunks()
        memo, self._key_hashes = self._key_hashes, None  # one batch's: not kept past it
        hashes = memo[1] if memo is not None and memo[0] is plan.keys else None

        def rows_of(idx: list[int] | None) -> pa.Table | None:
            return None if not idx else batch.take(pa.array(idx, type=pa.int64()))

        def deletes_of(idx: list[int] | None) -> pa.Table | None:
            rows = rows_of(idx)
            cols = plan.delete_columns
            return rows if rows is None or cols is None else rows.select(cols)

        jobs = [(k, plan.updates.get(k), plan.deletes.get(k), False)
                for k in dict.fromkeys([*plan.updates, *plan.deletes])]
        jobs += [((p, f), rows, None, True) for p, f, rows in plan.new_groups]
        for partition in dict.fromkeys(k[0] for k, *_ in jobs):
            self._dir(partition)  # made once, before the groups are written in parallel

        def run(job: tuple[tuple[str, str], list[int] | None, list[int] | None, bool]
                ) -> list[GroupWrite]:
            (partition, fid), upd, dels, new = job
            s = slices.get((partition, fid))
            base = None if new else (s.base_instant if s else instant)
            compaction = plan.pending_compaction.get((partition, fid))
            if compaction is not None and base is not None and self.version < 8:
                # table version 6: a group under a pending compaction takes new logs in the
                # slice the compaction starts (named after its instant), as Hudi's writers do
                base = compaction
            return self.write_group(instant, partition, fid, base, rows_of(upd),
                                    deletes_of(dels),
                                    slice_logs=s.log_files if s is not None else (),
                                    key_hashes=hashes[np.asarray(upd, dtype=np.int64)]
                                    if new and upd and hashes is not None else None)

        for ((partition, fid), *_), writes in zip(jobs, run_all(run, jobs,
                                                                 self.thread_count()), strict=True):
            for w in writes:
                stats.setdefault(partition, []).append(w.stat(self.store, self.path))
                result.groups_touched[(partition, fid)] = result.groups_touched.get(
                    (partition, fid), 0) + w.num_writes
                if w.created:
                    result.files_created.append(w.path)
        return stats

    def thread_count(self) -> int:
        if self.config.write_threads is not None:
            return max(1, self.config.write_threads)
        return max(1, min(4, os.cpu_count() or 1))

    def write_group(self, instant: str, partition: str, fid: str, base_instant: str | None,
                    records: pa.Table | None, deletes: pa.Table | None, *,
                    slice_logs: Sequence[str] = (), key_hashes: U64 | None = None
                    ) -> list[GroupWrite]:
        """Write one file group's share of a commit: ``records`` (updates and routed inserts,
        data columns) as one indexed block, ``deletes`` (key and partition columns) as one
        delete block. ``base_instant`` None opens a new file group (a base file, or a log of
        its own). Used by the local client and by Spark tasks (one task per file group).
        ``key_hashes``: the XXH64 of the records' keys, when the caller has them."""
        out: list[GroupWrite] = []
        if base_instant is None and _group_exists(self.store, self._dir(partition), fid,
                                                  instant):
            raise UsageError("a new file group's id is taken by an existing group",
                             path=self.path, actual=(partition, fid))
        if base_instant is None and records is not None and self.config.new_groups == "base":
            path, size = self.write_sized_base(
                partition, fid, instant, self._with_meta(records, None, instant, fid, partition),
                key_hashes=key_hashes)
            return [GroupWrite(partition, fid, path, records.num_rows, True, size)]
        slice_instant = instant if base_instant is None else base_instant
        w = self._log_writer(partition, fid, slice_instant, instant, slice_logs)
        if records is not None and records.num_rows:
            meta = self._with_meta(records, None, instant, fid, partition)
            # virtual keys: the block's index is built from the keys the writer derives
            vkeys = None if self.populate_meta_fields else self.keygen.record_keys(records)
            r = (w.append_parquet(meta, instant, schema=self.avro_schema,
                                  compression=self.log_parquet_codec, keys=vkeys)
                 if self.config.carrier == "parquet"
                 else w.append_avro_arrow(meta, self.avro_schema, instant, keys=vkeys))
            out.append(GroupWrite(partition, fid, r.path, records.num_rows, r.created))
        if deletes is not None and deletes.num_rows:
            keys = self.keygen.record_keys(deletes)
            # several ordering fields: no ordering value (null, commit-time semantics), the
            # one form every Hudi release reads (spec/table.md §14)
            several = len(self.ordering_fields) > 1
            ords = (deletes.column(self.ordering_field).combine_chunks()
                    if self.ordering_field is not None and not several
                    and self.ordering_field in deletes.column_names else None)
            out.append(self._append_deletes(w, instant, partition, fid, keys, ords,
                                            natural=several))
        return out

    def _append_deletes(self, w: IndexedLogWriter, instant: str, partition: str, fid: str,
                        keys: pa.Array, ords: pa.Array | None, *, natural: bool) -> GroupWrite:
        content = encode_delete_columns(
            keys, pa.repeat(pa.scalar(partition, pa.string()), len(keys)), ords,
            no_ordering=natural)
        r = w.append_delete(content, instant, schema=self.avro_schema)
        return GroupWrite(partition, fid, r.path, len(keys), r.created)

    def write_base(self, partition: str, fid: str, instant: str, records: pa.Table) -> str:
        """A base file in the table's format with Hudi's index of its keys: DYNAMIC_V0
        bloom filter, min/max key (``morlog.writers.core.base_file.encode_base_file``)."""
        return self.write_sized_base(partition, fid, instant, records)[0]

    def write_sized_base(self, partition: str, fid: str, instant: str, records: pa.Table, *,
                         key_hashes: U64 | None = None) -> tuple[str, int]:
        """:meth:`write_base`, and the file's size in bytes; ``key_hashes``: the XXH64 of
        the records' keys, when the caller has them (the base-key index's fingerprints)."""
        # no bloom filter or min/max key without meta fields (HoodieAvroParquetWriter adds
        # keys to its write support only when it populates them)
        md = (encode_base_footer(records.column(RECORD_KEY_FIELD), DEFAULT_NUM_ENTRIES)
              if self.populate_meta_fields else {})
        fmt = table_base_format(self.props)
        d = self._dir(partition)
        final = self.store.join(d, base_file_name(fid, instant, fmt.ext, self.write_token))
        data = encode_base_file(records, fmt, {**self.props, **self.config.hoodie_options},
                                md, json.dumps(self.avro_schema, separators=(",", ":")))
        if not self.store.create(final, data, sync=self.config.fsync):
            raise UsageError("a base file of this name exists already", path=final)
        if self.config.base_key_index:
            keys = (records.column(RECORD_KEY_FIELD) if self.populate_meta_fields
                    else self.keygen.record_keys(records))
            self.write_base_keys(partition, self.store.basename(final), keys, len(data),
                                 hashes=key_hashes)
        return final, len(data)

    def write_base_keys(self, partition: str, base_file: str, keys: pa.Array | pa.ChunkedArray,
                        base_size: int, *, hashes: U64 | None = None) -> str:
        """The base-key index of a base file just written (``morlog.readers.base_keys``),
        replacing one a failed attempt at the same file left."""
        d = base_keys_dir(self.location, partition)
        path = self.store.join(d, base_file + BASE_KEYS_SUFFIX)
        arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
        data = encode_base_keys(arr, base_file, base_size, hashes=hashes)
        self.store.makedirs(d)
        self.store.delete(path)
        if not self.store.create(path, data, sync=self.config.fsync):
            raise UsageError("a base-key index of this name is being written by another "
                             "writer", path=path)
        return path

    def commit_hooks(self, mode: Mode | None = None) -> CommitHooks | None:
        """What keeps this table's indexes true in each of its commits and rollbacks: the
        metadata table's kept partitions, and morlog's record index when the table enables
        it (``morlog.writers.services.record_index``). None: nothing to keep."""
        also: list[CommitHooks] = []
        if record_index_enabled(self.store, self.location):
            also.append(RecordIndexWriter(self.store, self.location, self.record_index_client,
                                          fsync=self.config.fsync, mode=mode))
        return metadata_hooks(self.store, self.location, self.metadata_plan,
                              fsync=self.config.fsync, mode=mode, also=also)

    def record_index_client(self) -> MorTable:
        """The write client of morlog's record index table of this table (its settings:
        ``INDEX_OPTIONS``, spec/rli.md)."""
        return record_index_client(self.location, self.config.fsync)

    # --- table services (``morlog.writers.services``) -----------------------------------

    def compact(self, **kwargs: Any) -> CompactReport:
        """Compaction: plan one (when none is pending) and run the pending plans
        (:func:`morlog.writers.services.compaction.compact`, which names the arguments)."""
        return compaction.compact(self, **kwargs)

    def log_compact(self, **kwargs: Any) -> LogCompactReport:
        """Log compaction (RFC-48: :func:`morlog.writers.services.logcompaction.log_compact`)."""
        return logcompaction.log_compact(self, **kwargs)

    def clean(self, **kwargs: Any) -> CleanReport:
        """Cleaning (:func:`morlog.writers.services.cleaning.clean`)."""
        return cleaning.clean(self, **kwargs)

    def build_record_index(self, **kwargs: Any) -> BuildResult:
        """Build (or rebuild) morlog's record index and enable it
        (:func:`morlog.writers.services.record_index.build`)."""
        return build(self, **kwargs)

    # --- rollback ---------------------------------------------------------------------

    def rollback_pending(self) -> list[str]:
        """Roll back delta commits a dead writer left requested or inflight (the caller
        holds the writer lock; a :class:`Commit` does this on entering)."""
        return rollback_pending(self.store, self.location, mode=self.mode,
                                fsync=self.config.fsync,
                                hooks=self.commit_hooks())


def record_index_client(data: TableLocation, fsync: bool = True) -> MorTable:
    """The write client of morlog's record index table of the data table at ``data``, with
    the index's settings (spec/rli.md)."""
    return MorTable(index_location(data), WriteConfig(
        fsync=fsync, carrier="parquet", new_groups="base", route_inserts=False,
        hoodie_options=dict(INDEX_OPTIONS)))


def _group_exists(store: WriteStore, directory: str, fid: str, instant: str) -> bool:
    """Whether files of file group ``fid`` exist other than the given instant's own."""
    for n in store.listdir(directory):
        if BaseFileName.matches(n):
            b = BaseFileName.parse(n)
            if b.file_id == fid and b.instant != instant:
                return True
        elif n.startswith(fid + "_"):
            return True  # a file of the group's name morlog does not know: not ours to take
        if LogFileName.matches(n):
            ln = LogFileName.parse(n)
            if ln.file_id == fid and ln.instant != instant:
                return True
    return False


@dataclass(frozen=True)
class GroupWrite:
    """One file written for a commit (a log file appended to or created, or a base file)."""

    partition: str
    file_id: str
    path: str
    num_writes: int
    created: bool
    #: bytes written (a base file's size; 0: not counted, log appends)
    size: int = 0

    def stat(self, store: WriteStore, table_path: str) -> dict[str, Any]:
        """Hudi's write stat of the file; a base file's ``totalWriteBytes`` and
        ``fileSizeInBytes`` are what Hudi's record size estimate reads
        (``morlog.writers.core.sizing``)."""
        out = {"fileId": self.file_id, "path": store.relpath(self.path, table_path),
               "numWrites": self.num_writes, "partitionPath": self.partition}
        if self.size:
            out["totalWriteBytes"] = out["fileSizeInBytes"] = self.size
        return out


def _rows_by_code(codes: npt.NDArray[np.integer[Any]]
                  ) -> list[tuple[int, npt.NDArray[np.int64]]]:
    """(code, ascending row positions holding it) for every code >= 0 of ``codes``."""
    rows = np.flatnonzero(codes >= 0)
    if rows.size == 0:
        return []
    order = rows[np.argsort(codes[rows], kind="stable")]
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    return [(int(codes[chunk[0]]), chunk) for chunk in np.split(order, bounds)]


@dataclass
class _Plan:
    batch: pa.Table | None = None
    #: (partition, file id) -> batch rows to append (updates and routed inserts)
    updates: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    deletes: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    new_groups: list[tuple[str, str, list[int]]] = field(default_factory=list)
    planned_bytes: dict[tuple[str, str], int] = field(default_factory=dict)
    #: file groups under a pending compaction -> its instant
    pending_compaction: dict[tuple[str, str], str] = field(default_factory=dict)
    #: the record key of every batch row
    keys: pa.Array | None = None
    #: (partition, file id) -> batch rows of inserts routed into that existing group
    #: (a subset of ``updates``)
    routed: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    #: the columns of the delete rows (None: the batch's; the record index's partition
    #: moves: the key and partition fields, a natural delete)
    delete_columns: list[str] | None = None

    def groups(self) -> list[tuple[str, str]]:
        out = list(self.updates) + [g for g in self.deletes if g not in self.updates]
        out += [(p, f) for p, f, _ in self.new_groups]
        return out

    def record_changes(self) -> RecordChanges:
        """The commit's key-level changes (computed only when a hook asks: the record
        index): inserts into new and existing groups, and the tagged keys deleted."""
        keys = self.keys if self.keys is not None else pa.array([], pa.string())

        def part(rows: list[int], p: str, f: str | None) -> pa.Table:
            n = len(rows)
            cols = {"key": keys.take(pa.array(rows, pa.int64())),
                    "partition": pa.repeat(pa.scalar(p, pa.string()), n)}
            if f is not None:
                cols["file_id"] = pa.repeat(pa.scalar(f, pa.string()), n)
            return pa.table(cols)

        ins = [part(rows, p, f) for (p, f), rows in self.routed.items() if rows]
        ins += [part(rows, p, f) for p, f, rows in self.new_groups if rows]
        dels = [part(rows, p, None) for (p, _f), rows in self.deletes.items() if rows]
        return RecordChanges.of_arrays(pa.concat_tables(ins) if ins else None,
                                       pa.concat_tables(dels) if dels else None)


__all__ = ["ConcurrentWriterError", "GroupWrite", "MorTable", "PAYLOAD_COMMIT_TIME",
           "PAYLOAD_EVENT_TIME", "WRITE_TOKEN", "new_instant"]
