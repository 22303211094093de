"""``morlog bench``: the measured claims (filters, lookups, appends, tagging, Spark upserts).

Scenarios live in :mod:`.probe`, :mod:`.lookup`, :mod:`.append`, :mod:`.tag` and
:mod:`.spark_upsert`; :mod:`.common` holds the test data generator, timing and the report;
:mod:`.run` runs one scenario or ``all``; the command is ``morlog.cli.bench``. What the
scenarios compare against and plot with (pybloom-live, pyspark, matplotlib) is the ``bench``
extra, ``pip install 'morlog[bench]'``; those modules are imported only inside the scenario
that needs them (:func:`.common.require`), so that the command and its help work without the
extra.

The package itself imports nothing (the runner is :mod:`.run`), so that importing a
scenario never runs the package's imports back into it (``tests/test_layering.py``).
"""
