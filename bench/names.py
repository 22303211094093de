"""The benchmark scenarios' names and ``morlog bench``'s defaults, without their code: the
command line builds its options from these, and imports a scenario only to run it."""

from __future__ import annotations

#: where ``morlog bench`` writes ``<scenario>.json`` and ``.png``
DEFAULT_OUT = "bench-results"
#: the index scenarios (``morlog.bench.common``)
INDEX_SCENARIOS: tuple[str, ...] = ("probe", "lookup", "append")
#: every scenario, in the order ``all`` runs them
ALL_SCENARIOS: tuple[str, ...] = (*INDEX_SCENARIOS, "tag", "upsert", "scale", "compaction",
                                  "prune", "rli", "spark", "incremental")
#: ``bench scale``'s per-step limit, seconds (``--timeout``)
SCALE_TIMEOUT = 900.0

__all__ = ["ALL_SCENARIOS", "DEFAULT_OUT", "INDEX_SCENARIOS", "SCALE_TIMEOUT"]
