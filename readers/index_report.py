"""What ``morlog index`` reports about one log file, computed here, printed by the CLI.

:func:`index_report` reads every data block's index (stored in its trailer, or recomputed
from its records for blocks without one) and the cumulative index of the newest data block
(or, when there is none stored, the cumulative figures recomputed over the blocks) and
returns an :class:`IndexReport`: plain data whose :meth:`IndexReport.as_dict` is the
``morlog index --json`` object (the output shape is a contract, see ``morlog.cli.read``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from morlog.logformat.blocks import RECORD_KEY_FIELD
from morlog.logformat.constants import BlockType
from morlog.logformat.sbbf import BLOCK_BYTES, blocks_for
from morlog.logformat.xxh64 import U64

from .index import block_index, find_tail_index
from .logfile import LogFileReader

#: the filter family of every index morlog stores or recomputes
BLOOM_TYPE = "SBBF_XXH64"


@dataclass
class BlockIndexRow:
    """One data block's index."""

    offset: int
    size: int
    instant: str | None
    #: "avro" or "parquet" when the block stores its index, "none" when recomputed
    carrier: str
    stored: bool
    keys: int = 0
    min_key: str | None = None
    max_key: str | None = None
    bloom_type: str | None = None
    bloom_bytes: int = 0
    #: stored indexes: bytes per section name
    index_bytes: dict[str, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.index_bytes is None:
            del out["index_bytes"]
        return out


@dataclass
class CheckpointLocation:
    offset: int
    length: int


@dataclass
class CumulativeSummary:
    """The file's cumulative index: stored by the newest data block, or recomputed."""

    stored: bool
    #: the block it belongs to (stored), or the newest data block (recomputed)
    offset: int
    #: FULL or DELTA (stored), RECOMPUTED otherwise
    kind: str
    blocks: int
    keys: int
    min_key: str | None
    max_key: str | None
    bloom_bytes: int
    #: stored only
    scope: str | None = None
    checkpoint: CheckpointLocation | None = None
    bloom_type: str = BLOOM_TYPE

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stored": self.stored, "offset": self.offset,
                               "kind": self.kind}
        if self.stored:
            out["scope"] = self.scope
        out.update(blocks=self.blocks, keys=self.keys, min_key=self.min_key,
                   max_key=self.max_key, bloom_type=self.bloom_type,
                   bloom_bytes=self.bloom_bytes)
        if self.stored:
            out["checkpoint"] = None if self.checkpoint is None else asdict(self.checkpoint)
        return out


@dataclass
class IndexReport:
    path: str
    blocks: list[BlockIndexRow] = field(default_factory=list)
    cumulative: CumulativeSummary | None = None

    def as_dict(self) -> dict[str, Any]:
        """The ``morlog index --json`` object."""
        return {"path": self.path, "blocks": [b.as_dict() for b in self.blocks],
                "cumulative": None if self.cumulative is None else self.cumulative.as_dict()}


def _carrier_name(block_type: BlockType, stored: bool) -> str:
    if not stored:
        return "none"
    return "avro" if block_type == BlockType.AVRO_DATA else "parquet"


def _lower(a: str | None, b: str) -> str:
    return b if a is None or b.encode() < a.encode() else a


def _higher(a: str | None, b: str) -> str:
    return b if a is None or b.encode() > a.encode() else a


def index_report(path: str, key_field: str = RECORD_KEY_FIELD) -> IndexReport:
    """The index of every data block of one log file, and its cumulative index."""
    report = IndexReport(path)
    hashes: list[U64] = []
    lo: str | None = None
    hi: str | None = None
    with LogFileReader(path) as reader:
        for block in reader.blocks():
            if block.is_corrupt or not block.block_type.is_data or (
                    block.block_type == BlockType.HFILE_DATA):
                continue
            keys, stored = block_index(block, key_field=key_field)
            row = BlockIndexRow(block.offset, block.size, block.instant,
                                _carrier_name(block.block_type, stored is not None),
                                stored is not None)
            if keys is not None:
                row.keys, row.min_key, row.max_key = (keys.range.count, keys.range.min_key,
                                                      keys.range.max_key)
                row.bloom_type, row.bloom_bytes = BLOOM_TYPE, keys.bloom.nbytes
                hashes.append(keys.hashes)
                lo, hi = _lower(lo, keys.range.min_key), _higher(hi, keys.range.max_key)
            if stored is not None:
                row.index_bytes = stored.section_sizes()
            report.blocks.append(row)
        tail = find_tail_index(reader.source)
    if tail is not None and (cum := tail.index.cumulative()) is not None:
        cp = cum.checkpoint
        report.cumulative = CumulativeSummary(
            True, tail.offset, cum.kind.name, cum.blocks, cum.keys, cum.min_key, cum.max_key,
            cum.bloom.nbytes, scope=cum.scope,
            checkpoint=None if cp is None else CheckpointLocation(cp.region_offset,
                                                                  cp.region_length))
    elif report.blocks:
        # the size a filter over every distinct key of the file would take
        distinct = len(np.unique(np.concatenate(hashes))) if hashes else None
        bloom_bytes = 0 if distinct is None else blocks_for(distinct) * BLOCK_BYTES
        report.cumulative = CumulativeSummary(
            False, report.blocks[-1].offset, "RECOMPUTED", len(report.blocks),
            sum(r.keys for r in report.blocks), lo, hi, bloom_bytes)
    return report


__all__ = ["BLOOM_TYPE", "BlockIndexRow", "CheckpointLocation", "CumulativeSummary",
           "IndexReport", "index_report"]
