"""Spark SQL tables over morlog: what Spark and Hudi's SQL put into a data source's options.

Spark 4 passes a Python data source the options of the statement that uses it, with keys
of its own: ``CREATE TABLE t USING morlog LOCATION '...'`` gives ``path`` and ``location``
(the location as Hadoop writes it, ``file:/...``), ``owner``, ``provider``, every
``OPTIONS (k v)`` entry twice (``k`` and ``option.k``) and the ``TBLPROPERTIES``.
:func:`sql_options` turns them into morlog's options: Spark's own keys are accepted and
dropped, the location becomes the path, and Hudi's SQL table properties
(``HoodieOptionConfig`` in apache/hudi ``hudi-spark-datasource/hudi-spark-common``:
``primaryKey``, ``preCombineField`` / ``orderingFields``, ``type``) become Hudi's write
options (record key, ordering field, table type: ``mor``; ``cow`` is refused as every
morlog write refuses copy-on-write).

``INSERT INTO`` a table declared with Hudi's SQL properties (or with
``hoodie.spark.sql.insert.into.operation``) runs that operation, Hudi's default ``insert``
(``DataSourceWriteOptions.SPARK_SQL_INSERT_INTO_OPERATION``; ``upsert`` merges by the
ordering field, ``insert`` and ``bulk_insert`` run morlog's insert);
``hoodie.datasource.write.operation``, when given, wins. ``INSERT OVERWRITE`` replaces the
table's data (``insert_overwrite_table``). Spark gives a data source no other sign that a
write comes from SQL: a DataFrame write through such a view follows the same rule.

What Spark 4.3 does not let a Python data source do (it passes a catalog table's stored
options to no reader or writer; ``UPDATE``, ``DELETE FROM`` and ``MERGE INTO`` need DSv2
capabilities Python sources lack) is listed in the README with the equivalent calls.
"""

from __future__ import annotations

from collections.abc import Mapping

import morlog.config as conf
from morlog.logformat.errors import UsageError

#: keys Spark adds to the options of a SQL table on its own
SPARK_SQL_KEYS = frozenset({"owner", "provider", "location", "external", "comment"})
#: Hudi's SQL table properties -> Hudi's write options (HoodieOptionConfig)
SQL_TABLE_PROPERTIES = {"primarykey": conf.WRITE_RECORDKEY_FIELD,
                        "precombinefield": conf.WRITE_PRECOMBINE_FIELD,
                        "orderingfields": conf.WRITE_PRECOMBINE_FIELD,
                        "type": conf.WRITE_TABLE_TYPE}
#: Hudi SQL's ``type`` values -> Hudi's table types
_TYPES = {"mor": "MERGE_ON_READ", "cow": "COPY_ON_WRITE"}
#: the operations INSERT INTO may run (Hudi's valid values)
INSERT_INTO_OPERATIONS = ("insert", "bulk_insert", "upsert")


def hadoop_path(path: str) -> str:
    """``file:/x`` (Hadoop's form of a local path, what Spark gives as a SQL table's
    location) as ``file:///x``; anything else as it is."""
    if path.startswith("file:/") and not path.startswith("file://"):
        return "file://" + path[len("file:"):]
    return path


def sql_options(options: Mapping[str, str]) -> dict[str, str]:
    """A data source's options with Spark SQL's own keys dropped and Hudi's SQL table
    properties as Hudi's write options (module docstring); other options as they are."""
    out: dict[str, str] = {}
    location: str | None = None
    sql_table = False
    insert_into: str | None = None
    for k, v in options.items():
        key = str(k).lower()
        if key.startswith("option."):
            continue  # Spark repeats every OPTIONS entry under this prefix
        if key == "location":
            location = str(v)
            continue
        if key in SPARK_SQL_KEYS:
            continue
        if key == conf.SQL_INSERT_INTO_OPERATION:
            insert_into = str(v).strip().lower()
            if insert_into not in INSERT_INTO_OPERATIONS:
                raise UsageError(f"unsupported {conf.SQL_INSERT_INTO_OPERATION}",
                                 expected=list(INSERT_INTO_OPERATIONS), actual=str(v))
            continue
        if key in SQL_TABLE_PROPERTIES:
            sql_table = True
            value = str(v).strip()
            if key == "type":
                value = _TYPES.get(value.lower(), value)
            out[SQL_TABLE_PROPERTIES[key]] = value
            continue
        out[k] = v
    if "path" not in {k.lower() for k in out} and location is not None:
        out["path"] = location
    for k in list(out):
        if k.lower() == "path":
            out[k] = hadoop_path(str(out[k]))
    if (sql_table or insert_into is not None) and conf.WRITE_OPERATION not in {
            k.lower() for k in out}:
        out[conf.WRITE_OPERATION] = insert_into or conf.default(conf.SQL_INSERT_INTO_OPERATION)
    return out


def without_write_options(options: Mapping[str, str], read_keys: Mapping[str, str]
                          ) -> dict[str, str]:
    """The options a read checks: those that are read options (``read_keys``) or no
    write option. A table declared with write options (a SQL table's properties, a view's
    ``OPTIONS``) is read with them, as Hudi reads with the same options map."""
    from morlog.writers.options import parse_write_options

    out = {}
    for k, v in options.items():
        if k in read_keys or str(k).lower() in read_keys:
            out[k] = v
            continue
        try:
            parse_write_options({k: v})
        except UsageError:
            out[k] = v  # not a write option: the read names it
    return out


#: what a read of a catalog table without options is told
CATALOG_TABLE_HINT = ("Spark passes a Python data source no stored LOCATION or OPTIONS of a "
                      "catalog table: read and write it through a view (CREATE TEMPORARY "
                      "VIEW t USING morlog OPTIONS (path '...')), or name the path in the "
                      "statement (SELECT * FROM t WITH ('path' = '...'))")


__all__ = ["CATALOG_TABLE_HINT", "INSERT_INTO_OPERATIONS", "SPARK_SQL_KEYS",
           "SQL_TABLE_PROPERTIES", "hadoop_path", "sql_options", "without_write_options"]
