"""The core of writing (``morlog.writers.core``): the store a writer publishes through, log and
base file writers, the timeline writer and commit protocol, rollback and the undo of dead
attempts, ``hoodie.properties`` replacement, tagging through a global index, the write
context (:class:`~morlog.writers.options.WriteConfig`) and the write options. It imports
only readers and below: the metadata table's writers, the table services and the write client
build on it."""
