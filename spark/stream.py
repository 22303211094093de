"""Structured Streaming into a table: ``df.writeStream.format("morlog")``.

Spark 4.1+'s Python streaming sink (``DataSourceStreamArrowWriter``: the tasks get Arrow
batches). Each micro-batch is written and committed by what the batch data source does for
``df.write.format("morlog")`` (:class:`~morlog.spark.write.MorlogWriter`: upsert, insert and
delete are written by the tasks and committed once on the driver; the replace operations
stage their rows): the data source hands this module the writer's class, and
:func:`commit_batch` / :func:`abort_batch` are the calls it makes on the driver.

Exactly once across restarts, as Hudi's streaming sink (``HoodieStreamingSink.scala``,
``CommitUtils.getValidCheckpointForCurrentWriter``) keeps it: every micro-batch's commit
holds the extra metadata entry ``_hudi_streaming_sink_checkpoint`` =
``{"<identifier>": "<batch id>"}`` (the identifier:
``hoodie.datasource.write.streaming.checkpoint.identifier``, default
``default_single_writer``). Before committing batch ``b`` the sink reads the newest
completed write commit whose checkpoint names its identifier; when it holds ``b`` or a
later batch, ``b`` was committed already (Spark replays the last batch whose commit it had
not recorded when the query or its driver died) and the replay is dropped: the files its
tasks wrote are removed, nothing is committed. A micro-batch that dies before its commit
completes leaves no instant (the distributed write touches the timeline only in its commit),
or an inflight one the next commit rolls back.

Table services while the stream runs, with Hudi's options: ``hoodie.compact.inline``
(compaction planned by its trigger and run after the micro-batch's commit),
``hoodie.compact.schedule.inline`` (plans only), ``hoodie.log.compaction.inline``,
``hoodie.clean.automatic`` (on by default): each runs after the batch's instant completed,
so a service never holds back a committed batch and a driver killed during a service loses
no batch (the service's own pending instant is recovered by the next one).
``hoodie.datasource.compaction.async.enable`` (Hudi's default true for a streaming sink):
when compaction is not inline, the sink schedules compaction by its trigger
(``hoodie.compact.inline.max.delta.commits``...) after each micro-batch and runs the
pending plans once the batch is committed, in the commit step (morlog has no background
service: the stream waits for the compaction, and for no more than it takes).

Options: Hudi's write options as ``morlog.writers.options`` maps them, the checkpoint
identifier, ``hoodie.datasource.write.streaming.ignore.failed.batch`` (a micro-batch whose
commit fails is dropped, its files removed, and the stream goes on: Hudi's meaning), and
Spark's own ``checkpointLocation`` and ``path``. Output modes: ``append`` (the write
operation), ``complete`` (Spark's overwrite: each micro-batch replaces the table's data).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

import morlog.config as conf
from morlog.logformat.errors import ContentError, MorlogError, UsageError
from morlog.readers.properties import has_properties
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table
from morlog.writers.core.store import store_at
from morlog.writers.options import WriteOptions, parse_write_options

log = logging.getLogger(__name__)

#: the commit's extra metadata key holding the sink's checkpoint (Hudi's name:
#: ``HoodieStreamingSink.SINK_CHECKPOINT_KEY``)
SINK_CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"
CHECKPOINT_IDENTIFIER = conf.STREAMING_CHECKPOINT_IDENTIFIER
IGNORE_FAILED_BATCH = conf.STREAMING_IGNORE_FAILED_BATCH
ASYNC_COMPACT = conf.ASYNC_COMPACT_ENABLE
#: Spark's own option of a streaming query (its checkpoint directory), not the table's
SPARK_STREAM_OPTIONS = frozenset({"checkpointlocation"})


@dataclass(frozen=True)
class StreamSettings:
    """The sink's own options (the rest are the write's)."""

    identifier: str = conf.default(CHECKPOINT_IDENTIFIER)
    ignore_failed_batch: bool = conf.default_bool(IGNORE_FAILED_BATCH)
    async_compaction: bool = conf.default_bool(ASYNC_COMPACT)


def _flag(key: str, value: str) -> bool:
    v = str(value).strip().lower()
    if v not in ("true", "false"):
        raise UsageError(f"{key} must be true or false", expected=["true", "false"],
                         actual=str(value))
    return v == "true"


def stream_options(options: Mapping[str, str]) -> tuple[StreamSettings, WriteOptions]:
    """The sink's settings and the write's options (Hudi's, checked: an unknown option is
    a :class:`UsageError` naming it) from a ``writeStream``'s options."""
    settings: dict[str, Any] = {}
    rest: dict[str, str] = {}
    for k, v in options.items():
        key = str(k).strip().lower()
        if key == CHECKPOINT_IDENTIFIER:
            if not str(v).strip():
                raise UsageError(f"{CHECKPOINT_IDENTIFIER} must not be empty", actual=str(v))
            settings["identifier"] = str(v).strip()
        elif key == IGNORE_FAILED_BATCH:
            settings["ignore_failed_batch"] = _flag(key, v)
        elif key == ASYNC_COMPACT:
            settings["async_compaction"] = _flag(key, v)
        elif key in SPARK_STREAM_OPTIONS:
            continue
        else:
            rest[k] = v
    return StreamSettings(**settings), parse_write_options(rest, spark_aliases=True)


def checkpoint_value(identifier: str, batch_id: int) -> str:
    """The ``_hudi_streaming_sink_checkpoint`` value of a batch (Hudi's
    ``CommitUtils.getCheckpointValueAsString``: a JSON map identifier -> batch id)."""
    return json.dumps({identifier: str(batch_id)}, separators=(",", ":"))


def last_batch(table: Table, identifier: str) -> int | None:
    """The batch id of the newest completed write commit whose sink checkpoint names
    ``identifier`` (Hudi's ``getValidCheckpointForCurrentWriter``: newest first, commits
    without the key or with other writers' identifiers passed over); None when there is
    none. A checkpoint that is not a JSON map of batch ids is a :class:`ContentError`."""
    tl = table.timeline
    for inst in reversed(tl.completed()):
        extra = tl.metadata(inst).get("extraMetadata") or {}
        raw = extra.get(SINK_CHECKPOINT_KEY) if isinstance(extra, dict) else None
        if not raw:
            continue
        path = tl.storage.join(tl.directory, inst.file_name)
        try:
            value = json.loads(raw)
        except (TypeError, ValueError):
            raise ContentError(f"{SINK_CHECKPOINT_KEY} is not JSON", path=path) from None
        if not isinstance(value, dict):
            raise ContentError(f"{SINK_CHECKPOINT_KEY} is not a JSON map", path=path)
        if identifier not in value:
            continue
        try:
            return int(value[identifier])
        except (TypeError, ValueError):
            raise ContentError(f"{SINK_CHECKPOINT_KEY} holds no batch id for {identifier!r}",
                               path=path, actual=str(value[identifier])) from None
    return None


# --- the boundary with the batch writer (a MorlogWriter: write, commit, abort) -------------


def table_exists(location: TableLocation) -> bool:
    """Whether a table (its ``hoodie.properties``) exists at ``location``."""
    return has_properties(store_at(location, single_writer=True).storage, location.path)


def commit_batch(writer: Any, messages: list[WriterCommitMessage | None]) -> None:
    """Commit one micro-batch as the batch data source commits a write."""
    writer.commit(messages)


def abort_batch(writer: Any, messages: list[WriterCommitMessage | None]) -> None:
    """Remove what a micro-batch's tasks wrote; nothing is committed."""
    writer.abort(messages)


def stamp(writer: Any, key: str, value: str) -> None:
    """Put ``key: value`` into the extra metadata of the commit ``writer`` makes."""
    writer.options.config.commit_metadata[key] = value
    plan = getattr(writer, "plan", None)
    if plan is not None:
        plan.config.commit_metadata[key] = value


# --- the sink -------------------------------------------------------------------------------


@dataclass
class StreamTaskMessage(WriterCommitMessage):
    """A task's message, with the micro-batch's writer (Spark makes a new stream writer for
    the commit; the batch's plan travels to it in the tasks' messages)."""

    writer: Any
    message: WriterCommitMessage | None


class MorlogStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("morlog")``'s writer of one micro-batch (module docstring)."""

    def __init__(self, path: str | TableLocation, settings: StreamSettings,
                 options: WriteOptions, schema: StructType, overwrite: bool,
                 batch_writer: Callable[..., Any]) -> None:
        #: makes the batch data source's writer of one micro-batch (planned on the driver;
        #: ``morlog.spark.write.MorlogWriter``, given by the data source)
        self.batch_writer = batch_writer
        self.location = TableLocation.of(path)
        self.settings = settings
        self.options = options
        self.schema = schema
        self.overwrite = overwrite
        #: the batch writer, planned when Spark ships this writer to the tasks (the stream
        #: writer Spark makes for the commit plans nothing)
        self.batch: Any = None

    def __getstate__(self) -> dict[str, Any]:
        if self.batch is None:
            self.batch = self.batch_writer(self.location, self.options, self.schema,
                                           self.overwrite)
        return dict(self.__dict__)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if self.batch is None:
            raise UsageError("the micro-batch's writer was not planned", path=self.location.uri)
        return StreamTaskMessage(self.batch, self.batch.write(iterator))

    def _split(self, messages: list[WriterCommitMessage | None]
               ) -> tuple[Any, list[WriterCommitMessage | None]]:
        mine = [m for m in messages if isinstance(m, StreamTaskMessage)]
        writer = mine[0].writer if mine else None
        return writer, [m.message if isinstance(m, StreamTaskMessage) else None
                        for m in messages]

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        writer, inner = self._split(messages)
        if writer is None:
            return  # no task ran: nothing was written
        ident = self.settings.identifier
        last = last_batch(Table(self.location), ident) if table_exists(self.location) else None
        if last is not None and batchId <= last:
            log.warning("micro-batch %d of %r was committed already (checkpoint %d): "
                        "skipped", batchId, ident, last)
            abort_batch(writer, inner)
            return
        stamp(writer, SINK_CHECKPOINT_KEY, checkpoint_value(ident, batchId))
        try:
            commit_batch(writer, inner)
        except MorlogError:
            if not self.settings.ignore_failed_batch:
                raise
            log.exception("micro-batch %d failed; skipped (%s=true)", batchId,
                          IGNORE_FAILED_BATCH)
            abort_batch(writer, inner)
            return
        if self.settings.async_compaction:
            run_compaction_after(self.location, writer.options)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        writer, inner = self._split(messages)
        if writer is not None:
            abort_batch(writer, inner)


def run_compaction_after(location: TableLocation, options: WriteOptions) -> list[str]:
    """``hoodie.datasource.compaction.async.enable`` after a committed micro-batch: unless
    compaction is inline (done by the commit already), plan one when its trigger fires and
    run every pending plan. The compaction instants run."""
    from morlog.writers.client import MorTable
    from morlog.writers.services.compaction import (
        pending_compactions,
        run_compaction,
        schedule_compaction,
        settings_of,
    )

    config = options.config
    mt = MorTable(location, replace(config, commit_metadata={}))
    if settings_of(mt).inline:
        return []
    schedule_compaction(mt)
    done = []
    for instant in pending_compactions(mt.table()):
        run_compaction(mt, instant)
        done.append(instant)
    return done


def stream_writer(source: Any, schema: StructType, overwrite: bool,
                  batch_writer: Callable[..., Any]) -> MorlogStreamWriter:
    """The data source's ``streamWriter`` (``morlog.spark.write.MorlogDataSource``), whose
    micro-batches ``batch_writer(location, options, schema, overwrite)`` writes."""
    settings, options = stream_options(dict(source.options))
    return MorlogStreamWriter(source.location(), settings, options, schema, overwrite,
                              batch_writer)


__all__ = ["ASYNC_COMPACT", "CHECKPOINT_IDENTIFIER", "IGNORE_FAILED_BATCH", "SINK_CHECKPOINT_KEY",
           "MorlogStreamWriter", "StreamSettings", "StreamTaskMessage", "checkpoint_value",
           "last_batch", "run_compaction_after", "stream_options", "stream_writer"]
