"""morlog.config: the one registry of the options morlog honours, its generated reference
docs/options.md, and that no ``hoodie.*``/``morlog.*`` key is spelled in the code without
being in the registry."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import morlog.config as config
from morlog.config import OPTIONS, ConfigOption, Scope, render_markdown

REPO = Path(__file__).resolve().parent.parent
#: the folders whose code may spell an option key
CODE = ["config", "logformat", "compat", "readers", "writers", "spark", "bench", "cli", "api"]
#: morlog's package folders: ``morlog.<folder>...`` strings name modules, not options
PACKAGES = {"config", "logformat", "compat", "readers", "writers", "spark", "bench", "cli",
            "errors"}
#: strings shaped like keys that are file names, not options
FILE_NAMES = {"hoodie.properties", "hoodie.properties.backup", "morlog.lock"}
KEYLIKE = re.compile(r"_?(hoodie|morlog)\.[A-Za-z0-9_.\-]+")


def spelled_keys(path: Path) -> list[tuple[int, str]]:
    """(line, string) of every constant in ``path`` that reads as an option key.

    The rule: a ``str`` (or ``bytes``) constant of the AST that is entirely ``hoodie.`` or
    ``morlog.`` followed by letters, digits, ``_``, ``-`` and dots (so no path: no ``/``, no
    space, no newline) is an option key, unless it is a file name (:data:`FILE_NAMES`), a
    module name (``morlog.<package>...``) or the value of a ``"namespace"`` entry of a dict
    literal (an Avro namespace)."""
    tree = ast.parse(path.read_text(), str(path))
    namespaces = {id(v) for node in ast.walk(tree) if isinstance(node, ast.Dict)
                  for k, v in zip(node.keys, node.values, strict=True)
                  if isinstance(k, ast.Constant) and k.value == "namespace"}
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant):
            continue
        if isinstance(node.value, bytes) and node.value.isascii():
            s = node.value.decode("ascii")
        elif isinstance(node.value, str):
            s = node.value
        else:
            continue
        if not KEYLIKE.fullmatch(s) or s in FILE_NAMES or id(node) in namespaces:
            continue
        if s.startswith("morlog.") and s.split(".")[1] in PACKAGES:
            continue
        out.append((node.lineno, s))
    return sorted(out)


def test_every_key_spelled_in_the_code_is_in_the_registry() -> None:
    missing = []
    for folder in CODE:
        for py in sorted((REPO / folder).rglob("*.py")):
            for line, s in spelled_keys(py):
                known = (any(k.startswith(s) for k in OPTIONS) if s.endswith(".")
                         else s in OPTIONS)
                if not known:
                    missing.append(f"{py.relative_to(REPO)}:{line}: {s}")
    assert not missing, ("option keys not in morlog.config.OPTIONS (add them there, with "
                         "their default and meaning):\n" + "\n".join(missing))


def test_no_module_spells_a_key_the_registry_defines() -> None:
    """Outside morlog.config an option key is written as the registry's constant
    (``conf.COMPACT_INLINE``), never as a string: one place spells each key."""
    spelled = [f"{py.relative_to(REPO)}:{line}: {s}"
               for folder in CODE if folder != "config"
               for py in sorted((REPO / folder).rglob("*.py"))
               for line, s in spelled_keys(py)]
    assert not spelled, ("spell these keys as morlog.config constants:\n" + "\n".join(spelled))


def test_the_scan_sees_keys_and_leaves_out_file_and_module_names(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('A = "hoodie.table.name"\nB = "hoodie.properties"\n'
                     'C = "morlog.readers.table"\nD = {"namespace": "hoodie.x", "k": "morlog.y"}\n'
                     'E = "hoodie.keygen.timebased."\nF = b"morlog.index"\n'
                     'G = "hoodie/x/hoodie.properties"\nH = b"morlog.writer\\n"\n')
    assert spelled_keys(probe) == [(1, "hoodie.table.name"), (4, "morlog.y"),
                                   (5, "hoodie.keygen.timebased."), (6, "morlog.index")]


def test_docs_options_md_is_current() -> None:
    path = REPO / "docs" / "options.md"
    assert path.exists() and path.read_text() == render_markdown(), (
        "docs/options.md is not current: run `python -m morlog.config > docs/options.md`")


def test_python_m_morlog_config_prints_the_reference() -> None:
    r = subprocess.run([sys.executable, "-m", "morlog.config"], capture_output=True, text=True,
                       check=True)
    assert r.stdout == render_markdown()


def test_every_option_is_listed_once_in_the_reference_with_its_default() -> None:
    text = render_markdown()
    for o in OPTIONS.values():
        rows = [ln for ln in text.splitlines() if ln.startswith(f"| `{o.key}` |")]
        assert len(rows) == 1, o.key
        if o.default:
            assert f"`{o.default}`" in rows[0], o.key


@pytest.mark.parametrize("o", list(OPTIONS.values()), ids=lambda o: o.key)
def test_option_is_well_formed(o: ConfigOption) -> None:
    assert KEYLIKE.fullmatch(o.key)
    assert o.area in config.AREAS and isinstance(o.scope, Scope)
    assert o.type in {"string", "int", "float", "bool", "enum", "class", "list", "json"}
    assert o.doc and "\n" not in o.doc
    # Hudi's keys cite Hudi's config class; morlog's own keys have none
    assert (o.hudi_source is None) == o.key.startswith("morlog."), o.key
    if o.type == "bool" and o.default is not None:
        assert o.default in ("true", "false")
    if o.type == "int" and o.default is not None:
        int(o.default)


def test_the_constants_are_the_registry_keys() -> None:
    constants = {v for k, v in vars(config).items() if k.isupper() and isinstance(v, str)
                 and KEYLIKE.fullmatch(v) and not v.endswith(".")}
    assert constants <= set(OPTIONS)
    # a constant for every key, but the older spellings of the timestamp settings (read by
    # prefix, logformat.keygen)
    assert {k for k in set(OPTIONS) - constants
            if not k.startswith(config.TIMESTAMP_KEYGEN_PREFIX_OLD)} == set()


def test_known_defaults_match_the_services_settings() -> None:
    """The registry's defaults are the ones the code applies (spot checks of each area)."""
    from morlog.writers.options import WriteConfig
    from morlog.writers.services.cleaning import CleanSettings
    from morlog.writers.services.compaction import CompactionSettings
    from morlog.writers.services.logcompaction import LogCompactionSettings

    clean, comp = CleanSettings.of({}), CompactionSettings.of({})
    logc = LogCompactionSettings.of({})
    cfg = WriteConfig()
    d = {k: o.default for k, o in OPTIONS.items()}
    assert d[config.CLEAN_POLICY] == clean.policy
    assert int(d[config.CLEAN_COMMITS_RETAINED] or 0) == clean.commits_retained
    assert int(d[config.CLEAN_FILE_VERSIONS_RETAINED] or 0) == clean.file_versions_retained
    assert int(d[config.CLEAN_HOURS_RETAINED] or 0) == clean.hours_retained
    assert int(d[config.CLEAN_TRIGGER_MAX_COMMITS] or 0) == clean.max_commits
    assert d[config.CLEAN_AUTOMATIC] == str(clean.automatic).lower()
    assert d[config.COMPACT_INLINE] == str(comp.inline).lower()
    assert int(d[config.COMPACT_MAX_DELTA_COMMITS] or 0) == comp.max_delta_commits
    assert int(d[config.COMPACT_MAX_DELTA_SECONDS] or 0) == comp.max_delta_seconds
    assert d[config.COMPACT_TRIGGER_STRATEGY] == comp.trigger
    assert int(d[config.COMPACTION_TARGET_IO] or 0) == comp.target_io_mb
    assert int(d[config.LOG_COMPACTION_BLOCKS_THRESHOLD] or 0) == logc.blocks_threshold
    assert int(d[config.LOGFILE_DATA_BLOCK_MAX_SIZE] or 0) == logc.data_block_max_bytes
    assert d[config.LOG_COMPACTION_BLOCK_FORMAT] == logc.block_format
    assert int(d[config.PARQUET_MAX_FILE_SIZE] or 0) == cfg.max_file_size
    assert int(d[config.PARQUET_SMALL_FILE_LIMIT] or 0) == cfg.small_file_limit
    assert float(d[config.LOGFILE_TO_PARQUET_RATIO] or 0) == cfg.log_to_parquet_ratio
    assert d[config.LOGFILE_DATA_BLOCK_FORMAT] == cfg.carrier
    assert d[config.NEW_GROUPS] == cfg.new_groups
    from morlog.logformat.column_stats_section import DEFAULT_MAX_COLUMNS
    from morlog.writers.mdt.colstats import DEFAULT_BLOOM_TYPE

    assert int(d[config.COLUMN_STATS_MAX_COLUMNS] or 0) == DEFAULT_MAX_COLUMNS
    assert d[config.BLOOM_FILTER_TYPE] == DEFAULT_BLOOM_TYPE

