"""The wheel, installed: ``pip wheel .``, a fresh virtual environment, then the commands.

One module-scoped fixture builds the wheel from a copy of the checkout's files (those ``git
ls-files`` lists, untracked but not ignored ones included, so that a file one forgot to add
shows up here too; the checkout gets no ``build/`` or egg-info), creates a virtual environment
and installs the wheel with its dependencies from the package index (the pip cache that ``make
setup`` filled makes that a few seconds; the test run's pip installs it, with ``--python``,
into an environment made without pip). Every command then runs from an empty temporary
directory with ``PYTHONPATH`` cleared and user site-packages off, so nothing of the checkout
is importable: what passes here works for ``pip install morlog``.

The last test installs the ``bench`` extra into the same environment (about 20 s from the pip
cache, pyspark being most of it) and runs a quick benchmark from the installed wheel; the
tests before it check what a user without the extra gets.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from . import hudi_fixtures as hf

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]
#: source folder -> where it lands in the wheel
FOLDERS = {
    "api": "morlog",
    "config": "morlog/config",
    "logformat": "morlog/logformat",
    "compat": "morlog/compat",
    "readers": "morlog/readers",
    "writers": "morlog/writers",
    "spark": "morlog/spark",
    "bench": "morlog/bench",
    "cli": "morlog/cli",
}
#: folders inside those that install as top-level packages of their own
NESTED = {"spark/pyspark_morlog": "pyspark_morlog"}
#: top-level folders of the checkout that hold Python code but are not part of the package
NOT_PACKAGED = {"tests", "spec"}
BIN = "Scripts" if sys.platform == "win32" else "bin"
INSTALL_TIMEOUT = 900
COMMAND_TIMEOUT = 300


@dataclass
class Installed:
    """A virtual environment with the wheel installed, and an empty working directory."""

    wheel: Path
    sources: list[str]  # the checkout's files the wheel was built from (relative paths)
    venv: Path
    cwd: Path
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def python(self) -> str:
        return str(self.venv / BIN / "python")

    @property
    def morlog(self) -> str:
        return str(self.venv / BIN / "morlog")

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "MORLOG_DEBUG"}}
        env["PATH"] = os.pathsep.join([str(self.venv / BIN), env.get("PATH", "")])
        env["PYTHONNOUSERSITE"] = "1"
        return env

    def run(self, *argv: str, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), cwd=self.cwd, env=self.env(), capture_output=True,
                              text=True, timeout=timeout, check=False)

    def pip_install(self, requirement: str) -> float:
        """``pip install requirement`` into the environment: the test run's pip, pointed at
        the environment's interpreter (``--python``: the environment needs no pip of its
        own), without byte-compiling what it installs (``--no-compile``: Python compiles a
        module when it is first imported; compiling all of pyspark took most of the bench
        extra's install)."""
        t0 = time.perf_counter()
        r = self.run(sys.executable, "-m", "pip", "--python", self.python, "install",
                     "--quiet", "--no-compile", "--disable-pip-version-check", requirement,
                     timeout=INSTALL_TIMEOUT)
        assert r.returncode == 0, f"pip install {requirement} failed:\n{r.stdout}\n{r.stderr}"
        return time.perf_counter() - t0


def _source_files() -> list[str]:
    """The checkout's files as a fresh clone plus uncommitted work would have them."""
    try:
        r = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=REPO, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an unpacked sdist)
        skip = {".git", ".venv", "build", "dist", "__pycache__", ".mypy_cache", ".pytest_cache"}
        return sorted(str(p.relative_to(REPO)) for p in REPO.rglob("*")
                      if p.is_file() and not skip & set(p.relative_to(REPO).parts)
                      and not any(part.endswith(".egg-info") for part in p.parts))
    return sorted(f for f in r.stdout.decode().split("\0") if f and (REPO / f).is_file())


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("packaging")
    src, dist, cwd = root / "src", root / "dist", root / "cwd"
    cwd.mkdir()
    files = _source_files()
    for f in files:
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, src / f)
    seconds: dict[str, float] = {}

    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w",
                        str(dist), str(src)], cwd=root, capture_output=True, text=True,
                       timeout=INSTALL_TIMEOUT, check=False)
    assert r.returncode == 0, f"pip wheel failed:\n{r.stdout}\n{r.stderr}"
    wheels = sorted(dist.glob("*.whl"))
    assert [w.name for w in wheels] == [f"morlog-{VERSION}-py3-none-any.whl"], wheels
    seconds["wheel"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    venv = root / "venv"
    # no pip in it (ensurepip took about 8 s on a loaded machine): Installed.pip_install
    # runs the test run's pip for it
    r = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)],
                       capture_output=True,
                       text=True, timeout=INSTALL_TIMEOUT, check=False)
    assert r.returncode == 0, f"python -m venv failed:\n{r.stdout}\n{r.stderr}"
    seconds["venv"] = time.perf_counter() - t0

    inst = Installed(wheels[0], files, venv, cwd, seconds)
    seconds["install"] = inst.pip_install(str(wheels[0]))
    yield inst
    print(f"\ntest_packaging: seconds {json.dumps({k: round(v, 1) for k, v in seconds.items()})}")


def test_the_wheel_holds_morlog_only_and_every_source_file(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"morlog", "pyspark_morlog", f"morlog-{VERSION}.dist-info"}, sorted(top)

    # every folder of the checkout holding Python code is packaged (or known not to be)
    code_folders = {Path(f).parts[0] for f in installed.sources
                    if f.endswith(".py") and len(Path(f).parts) > 1}
    assert code_folders - NOT_PACKAGED == set(FOLDERS), (
        f"folders with Python code: {sorted(code_folders - NOT_PACKAGED)}; packaged: "
        f"{sorted(FOLDERS)} (add a new folder to [tool.setuptools] in pyproject.toml)")

    want = set()
    for folder, target in {**FOLDERS, **NESTED}.items():
        for py in (REPO / folder).rglob("*"):
            if "__pycache__" in py.parts or not py.is_file():
                continue
            rel = py.relative_to(REPO).as_posix()
            if folder in FOLDERS and any(rel.startswith(n + "/") for n in NESTED):
                continue  # installed as its own package
            if py.suffix == ".py" or py.name == "py.typed":
                want.add(f"{target}/{py.relative_to(REPO / folder).as_posix()}")
    got = {n for n in names if n.endswith(".py") or n.endswith("/py.typed")}
    assert not want - got, f"missing from the wheel: {sorted(want - got)} (not git-added?)"
    assert not got - want, f"in the wheel but not in the checkout: {sorted(got - want)}"
    # PEP 561: type checkers look for the marker in the top-level package
    assert "morlog/py.typed" in got, "api/py.typed is missing: morlog would install untyped"

    entry_points = zipfile.ZipFile(installed.wheel).read(
        f"morlog-{VERSION}.dist-info/entry_points.txt").decode()
    assert "morlog = morlog.cli:main" in entry_points


_API_CHECK = """
import importlib.util, json, sys
import morlog, pyspark_morlog
loaded_heavy = [m for m in ("pyspark", "py4j", "matplotlib", "pybloom_live", "hudi",
                            "deltalake", "morlog.bench", "morlog.spark.write",
                            "morlog.spark.source")
                if m in sys.modules]
from morlog import Table, MorTable, LogFileReader, UsageError
import morlog.writers.client, morlog.readers.table, morlog.logformat.blocks, morlog.bench
import morlog.spark
print(json.dumps({
    "version": morlog.__version__,
    "file": morlog.__file__,
    "names": [Table.__module__, MorTable.__module__, LogFileReader.__module__],
    "usage_error": UsageError.__module__,
    "bare": [m for m in ("api", "logformat", "compat", "readers", "writers", "bench", "tests")
             if importlib.util.find_spec(m) is not None],
    "loaded_heavy": loaded_heavy,
}))
"""


def test_import_morlog_from_the_installed_wheel(installed: Installed) -> None:
    r = installed.run(installed.python, "-c", _API_CHECK)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["version"] == VERSION
    assert Path(got["file"]).resolve().is_relative_to(installed.venv.resolve()), got["file"]
    assert got["names"] == ["morlog.readers.table", "morlog.writers.client",
                            "morlog.readers.logfile"]
    assert got["usage_error"] == "morlog.logformat.errors"
    assert got["bare"] == [], "generic top-level packages are importable"
    assert got["loaded_heavy"] == [], "import morlog loaded optional dependencies"


_SUBCOMMANDS = """
import argparse, json
from morlog.cli import build_parser
sub = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
print(json.dumps(sorted(sub[0].choices)))
"""


#: every subcommand's ``--help`` through ``morlog.cli.main`` in one process of the installed
#: wheel: {command: [exit status, stdout, stderr]}
_SUBCOMMAND_HELPS = """
import contextlib, io, json, sys
from morlog.cli import main
out = {}
for c in sys.argv[1:]:
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        try:
            code = main([c, "--help"])
        except SystemExit as exc:
            code = exc.code
    out[c] = [code, o.getvalue(), e.getvalue()]
print(json.dumps(out))
"""


def test_every_command_help_works_from_the_wheel(installed: Installed) -> None:
    """The installed script and ``python -m morlog`` as processes (with one subcommand's
    help through the script), every subcommand's help in one process (a process each took
    about 1 s apiece: importing ``morlog.cli`` imports the benchmarks)."""
    r = installed.run(installed.python, "-c", _SUBCOMMANDS)
    assert r.returncode == 0, r.stderr
    commands = json.loads(r.stdout)
    assert {"blocks", "verify", "index", "lookup", "snapshot", "tag", "bench", "demo"} <= set(
        commands), commands
    runs = [[installed.morlog, "--help"], [installed.python, "-m", "morlog", "--help"],
            [installed.morlog, commands[0], "--help"]]
    failed = []
    for argv in runs:
        r = installed.run(*argv)
        if r.returncode != 0 or "usage: morlog" not in r.stdout or r.stderr:
            failed.append(f"{' '.join(argv[1:])}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    r = installed.run(installed.python, "-c", _SUBCOMMAND_HELPS, *commands)
    assert r.returncode == 0 and not r.stderr, r.stdout + r.stderr
    helps = json.loads(r.stdout)
    assert list(helps) == commands
    for c, (code, stdout, stderr) in helps.items():
        if code != 0 or f"usage: morlog {c}" not in stdout or stderr:
            failed.append(f"{c} --help: exit {code}\n{stdout}{stderr}")
    assert not failed, "\n".join(failed)


def _fixture_log() -> Path:
    logs = hf.standalone_log_files()
    if not logs:
        pytest.skip(hf.SKIP_REASON)
    avro = [p for p in logs if "avro" in p.parent.name]
    return (avro or logs)[0]


def test_read_commands_on_a_real_hudi_log(installed: Installed) -> None:
    log = _fixture_log()
    r = installed.run(installed.morlog, "blocks", str(log), "--json")
    assert r.returncode == 0, r.stderr
    blocks = json.loads(r.stdout)
    assert blocks and all({"offset", "size", "type", "header", "records"} <= set(b)
                          for b in blocks), blocks
    assert blocks[0]["offset"] == 0 and blocks[0]["type"] != "CORRUPT"
    r = installed.run(installed.morlog, "verify", str(log))
    assert r.returncode == 0, r.stdout + r.stderr


def test_demo_and_table_commands_from_the_wheel(installed: Installed) -> None:
    out = installed.cwd / "demo"
    r = installed.run(installed.morlog, "demo", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    table = out / "trips_table"
    r = installed.run(installed.morlog, "slices", str(table), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout), "the demo table has file slices"
    r = installed.run(installed.morlog, "snapshot", str(table), "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert rows
    key = rows[0]["_hoodie_record_key"]
    keys_file = installed.cwd / "keys.txt"
    keys_file.write_text(f"{key}\n")
    r = installed.run(installed.morlog, "tag", str(table), "--keys", str(keys_file), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[key] is not None, "tag finds a key the snapshot holds"
    # the index commands on one of the demo's indexed log files
    log = next(p for p in sorted(out.glob("*/.*.log.*")) if p.is_file())
    r = installed.run(installed.morlog, "index", str(log), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)
    r = installed.run(installed.morlog, "lookup", str(log), "no-such-key", "--json")
    assert r.returncode == 0, r.stderr


def test_bench_without_the_extra_says_which_extra(installed: Installed) -> None:
    r = installed.run(installed.python, "-c", "import pybloom_live")
    assert r.returncode != 0, "the bench extra is already installed: run this test before it"
    r = installed.run(installed.morlog, "bench", "--help")
    assert r.returncode == 0, r.stderr
    out = installed.cwd / "bench-no-extra"
    r = installed.run(installed.morlog, "bench", "probe", "--quick", "--out", str(out))
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("morlog: error: ") and "pip install 'morlog[bench]'" in lines[0]
    assert "pybloom-live" in lines[0]
    assert not (out / "probe.json").exists()


@pytest.fixture(scope="module")
def with_bench(installed: Installed) -> Installed:
    installed.seconds["install_bench_extra"] = installed.pip_install(f"{installed.wheel}[bench]")
    return installed


def test_bench_runs_from_the_wheel_with_the_extra(with_bench: Installed) -> None:
    out = with_bench.cwd / "bench-results"
    r = with_bench.run(with_bench.morlog, "bench", "probe", "--quick", "--json", "--out",
                       str(out))
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["scenario"] == "probe" and report["goals"]
    assert report["machine"]["morlog"] == VERSION
    assert json.loads((out / "probe.json").read_text())["goals"] == report["goals"]
    assert (out / "probe.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


_SPARK_WITHOUT_REGISTER = """
import os, sys
# this interpreter on both sides: driver-side Python runners (the data source lookup among
# them) use PYSPARK_DRIVER_PYTHON, which the test run may have set to another environment's
os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
path = sys.argv[1]
opts = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "region"}
df = spark.createDataFrame([("a", "eu", 1), ("b", "us", 2)], "id string, region string, n long")
df.write.format("morlog").options(**opts).mode("overwrite").save(path)
spark.createDataFrame([("c", "eu", 3)], df.schema).write.format("morlog").options(**opts) \\
    .mode("append").save(path)
print(sorted(r.id for r in spark.read.format("morlog").load(path).collect()))
import morlog.spark.write as s
print(s.__file__)
spark.stop()
"""


def test_spark_finds_format_morlog_without_register(with_bench: Installed) -> None:
    """The installed ``pyspark_morlog`` package: a fresh session writes and reads
    ``format("morlog")`` with no ``register`` call (PySpark 4's lookup of ``pyspark_*``
    packages)."""
    table = with_bench.cwd / "spark-table"
    r = with_bench.run(with_bench.python, "-c", _SPARK_WITHOUT_REGISTER, str(table))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert lines[-2] == "['a', 'b', 'c']", r.stdout
    assert Path(lines[-1]).resolve().is_relative_to(with_bench.venv.resolve()), lines[-1]
    assert (table / ".hoodie" / "hoodie.properties").is_file()


def _editable_from_this_checkout() -> bool:
    """Whether the running interpreter has morlog installed editable from this checkout
    (``make setup``)."""
    import sysconfig
    from importlib.metadata import distributions

    # the environment's own record (not an egg-info the source tree may hold)
    found = list(distributions(name="morlog", path=[sysconfig.get_paths()["purelib"]]))
    if not found:
        return False
    info = json.loads(found[0].read_text("direct_url.json") or "{}")
    url = str(info.get("url", ""))
    return bool(info.get("dir_info", {}).get("editable")) and url.startswith("file://") and (
        Path(url[len("file://"):]).resolve() == REPO)


def _require_dev_environment() -> None:
    if not _editable_from_this_checkout():
        # the README's test command (make test) runs in the checkout's make setup env
        assert os.environ.get("CI") != "true", "CI must run the tests in make setup's .venv"
        pytest.skip("not run from this checkout's editable install (make setup)")


def test_the_dev_environment_lists_pyspark_morlog_as_spark_looks_it_up() -> None:
    """``make setup``'s editable install: ``pyspark_morlog`` is among the top-level modules
    ``pkgutil.iter_modules`` lists (what PySpark's data source lookup runs in a fresh
    worker), and it is the checkout's own file. Before, the editable install's import hook
    hid it and ``format("morlog")`` needed ``register(spark)``."""
    _require_dev_environment()
    code = ("import pkgutil, pyspark_morlog\n"
            "print([m.name for m in pkgutil.iter_modules() if m.name == 'pyspark_morlog'])\n"
            "print(pyspark_morlog.__file__)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd="/", timeout=120)
    assert r.returncode == 0, r.stderr
    listed, where = r.stdout.strip().splitlines()
    assert listed == "['pyspark_morlog']", r.stdout
    assert Path(where).resolve() == REPO / "spark" / "pyspark_morlog" / "__init__.py"


def test_spark_finds_format_morlog_in_the_dev_environment(tmp_path: Path) -> None:
    """A fresh Spark session of the checkout's interpreter writes and reads
    ``format("morlog")`` with no ``register`` call (~20 s: one local[1] session)."""
    _require_dev_environment()
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")
    table = tmp_path / "spark-table"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    r = subprocess.run([sys.executable, "-c", _SPARK_WITHOUT_REGISTER, str(table)],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert lines[-2] == "['a', 'b', 'c']", r.stdout
    assert Path(lines[-1]).resolve() == REPO / "spark" / "write.py"
