"""Reading a table's metadata table (``morlog.readers.mdt``): its slices, partitions and records
(:mod:`~morlog.readers.mdt.read`), and Hudi's record-level index in it
(:mod:`~morlog.readers.mdt.record_index`); spec/mdt.md."""
