"""The metadata table's writers (``morlog.writers.mdt``): which partitions a write keeps
(:mod:`~morlog.writers.mdt.plan`), the MDT itself and the commit hook that keeps it true
(:mod:`~morlog.writers.mdt.writer`), and one keeper per partition (files, record index,
column stats, partition stats, bloom filters, secondary indexes). Built on
``morlog.writers.core``."""
