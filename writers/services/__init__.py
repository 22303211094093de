"""The table services (``morlog.writers.services``): compaction, log compaction (RFC-48),
cleaning, insert overwrite, and morlog's record index (build, verify and its commit hook),
on one base (:mod:`~morlog.writers.services.base`: the writer lock a service holds, its
settings, the operations of a plan). Each takes an open
:class:`~morlog.writers.client.MorTable`, imported for types only: the write client reaches
them as ``mt.compact()``, ``mt.log_compact()``, ``mt.clean()``..."""
