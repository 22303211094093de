"""A Spark cluster whose executors run in JVMs of their own (issue 25's cluster tests).

The module-scoped ``spark_cluster`` fixture starts a Python process of its own (``python -m
tests.spark_cluster``) holding a SparkSession on Spark's ``local-cluster[2,1,1024]`` master:
the standalone master and two workers run inside the driver's JVM, each worker launches one
executor JVM (1 core, 1 GB), and the executors start their own Python workers. Nothing can
rely on the driver's JVM; tables live on a moto S3 server (``s3`` fixture), so nothing relies
on the driver's disk either. A process of its own because a JVM holds one SparkContext: the
test run's ``local[2]`` session (``tests/spark_session.py``) may live in the same pytest
process (xdist ``--dist loadfile`` or ``-n 0``).

Tests run functions in the cluster's process: ``cluster.call(fn, *args)`` calls
``fn(spark, *args)`` there and returns its (picklable) result, or raises
:class:`ClusterError` with the function's traceback; :meth:`Cluster.submit` and
:meth:`Cluster.result` split the two, so that a test can act (kill an executor) while a job
runs. ``fn`` must be a module-level function of an importable module; the modules of the
called functions are pickled by value for Spark (its executors do not import ``tests``).

What a pip-installed pyspark gives is enough: ``SPARK_HOME`` is a temporary folder of links
to the pyspark package's ``bin``, ``sbin`` and ``jars`` (the local cluster's workers write
their executors' folders under ``SPARK_HOME/work``, which must not be the installed package).
Everything binds to 127.0.0.1.

:class:`ProcessTree` reads ``/proc`` (Linux): the executor JVMs (their command line names
``CoarseGrainedExecutorBackend``), and the driver-side processes (the driver's Python process,
its JVM and the Python workers that JVM starts for data sources, outside the executors)
with their peak resident memory, for the kill and memory tests.
"""

from __future__ import annotations

import importlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

import pytest

MASTER = "local-cluster[2,1,1024]"
#: the driver JVM's heap: the least Spark accepts (issue 25: a batch several times larger
#: than the driver's memory)
DRIVER_MEMORY = "450m"
EXECUTORS = 2
#: the executor JVM's main class (how an executor process is told from the driver's JVM)
EXECUTOR_CLASS = "CoarseGrainedExecutorBackend"
#: seconds for the cluster to start (two executor JVMs registered) on a loaded 2-core machine
START_TIMEOUT = 240.0
_AUTHKEY_ENV = "MORLOG_TEST_CLUSTER_AUTHKEY"
ROOT = Path(__file__).resolve().parents[1]


class ClusterError(Exception):
    """A function run in the cluster's process raised: its traceback is the message."""


class ClusterTimeout(ClusterError):
    """The cluster's process did not answer in time."""


# --- processes (/proc) --------------------------------------------------------------------


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    cmdline: tuple[str, ...]

    @property
    def is_executor(self) -> bool:
        return any(EXECUTOR_CLASS in a for a in self.cmdline)

    @property
    def is_java(self) -> bool:
        return bool(self.cmdline) and os.path.basename(self.cmdline[0]) == "java"

    @property
    def role(self) -> str:
        """What the process is, for reports: ``driver JVM``, ``executor JVM`` or the
        Python module it runs (``pyspark.sql.worker.commit_data_source_write``...)."""
        if self.is_executor:
            return "executor JVM"
        if self.is_java:
            return "driver JVM"
        args = list(self.cmdline)
        mods = [a for a in args[1:] if a.startswith("pyspark.") and a != "pyspark.daemon"]
        return mods[-1] if mods else os.path.basename(args[0]) if args else "?"


def _read_proc(pid: int) -> Proc | None:
    from morlog.bench.spark_cluster import proc_info

    got = proc_info(pid)  # (parent, command line); None: gone or a zombie
    return None if got is None else Proc(pid, got[0], got[1])


def processes() -> dict[int, Proc]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            p = _read_proc(int(name))
            if p is not None:
                out[p.pid] = p
    return out


def memory_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB; (0, 0) once it is gone. VmHWM is its peak
    resident set since it started or since :func:`reset_peak`."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except OSError:
        return 0, 0
    vals = {}
    for line in text.splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            vals[line[:5]] = int(line.split()[1])
    return vals.get("VmRSS", 0), vals.get("VmHWM", 0)


def reset_peak(pid: int) -> None:
    """Set the process's peak resident set (VmHWM) back to its current one (Linux's
    ``clear_refs`` value 5)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


@dataclass
class ProcessTree:
    """The processes under the cluster's driver (its Python process ``root``)."""

    root: int

    def members(self) -> list[Proc]:
        procs = processes()
        children: dict[int, list[Proc]] = {}
        for p in procs.values():
            children.setdefault(p.ppid, []).append(p)
        out, todo = [], [procs[self.root]] if self.root in procs else []
        while todo:
            p = todo.pop()
            out.append(p)
            todo += children.get(p.pid, [])
        return out

    def executors(self) -> list[Proc]:
        return [p for p in self.members() if p.is_executor]

    def driver_side(self) -> list[Proc]:
        """The driver's Python process, its JVM and the JVM's Python workers: every member
        but the executors and what they start."""
        members = self.members()
        by_pid = {p.pid: p for p in members}
        out = []
        for p in members:
            q: Proc | None = p
            while q is not None and not q.is_executor and q.pid != self.root:
                q = by_pid.get(q.ppid)
            if q is not None and q.pid == self.root:
                out.append(p)
        return out

    def subtree(self, pid: int) -> set[int]:
        """``pid`` and every process under it."""
        procs = processes()
        out, todo = set(), [pid]
        while todo:
            p = todo.pop()
            out.add(p)
            todo += [q.pid for q in procs.values() if q.ppid == p]
        return out

    def executor_of(self, pid: int) -> Proc | None:
        """The executor JVM that ``pid`` (a Python worker) runs under."""
        procs = processes()
        p = procs.get(pid)
        while p is not None and not p.is_executor:
            p = procs.get(p.ppid)
        return p


@dataclass
class PeakSampler:
    """Samples the driver-side processes of a :class:`ProcessTree` every ``interval``
    seconds in a thread, keeping each process's peak resident set (VmHWM, so that growth
    between samples is not missed); :meth:`start` first resets the peaks of the live ones."""

    tree: ProcessTree
    interval: float = 0.05
    peaks: dict[int, tuple[str, int]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _sample(self) -> None:
        for p in self.tree.driver_side():
            _, hwm = memory_kb(p.pid)
            if hwm:
                role = "driver Python" if p.pid == self.tree.root else p.role
                role, old = self.peaks.get(p.pid, (role, 0))
                self.peaks[p.pid] = (role, max(old, hwm))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakSampler:
        for p in self.tree.driver_side():
            reset_peak(p.pid)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        self._sample()

    def by_role(self) -> dict[str, int]:
        """The largest peak (MiB) of the processes of each role."""
        out: dict[str, int] = {}
        for role, kb in self.peaks.values():
            out[role] = max(out.get(role, 0), kb // 1024)
        return out


# --- the cluster ---------------------------------------------------------------------------


def _spark_home(into: Path) -> Path:
    from morlog.bench.spark_cluster import spark_home

    return spark_home(into)


class Cluster:
    """The cluster's process and the connection to it (see the module's docstring)."""

    def __init__(self, proc: subprocess.Popen[bytes], conn: Connection, log: Path) -> None:
        self.proc = proc
        self.conn = conn
        self.log = log
        self.tree = ProcessTree(proc.pid)
        self._pending = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Start ``fn(spark, *args)`` in the cluster's process (one call at a time)."""
        assert not self._pending, "a call is running already"
        if "." in fn.__qualname__:
            raise TypeError(f"{fn.__qualname__}: only module-level functions run on the cluster")
        self.conn.send((fn.__module__, fn.__qualname__, args))
        self._pending = True

    def result(self, timeout: float = 600.0) -> Any:
        """The submitted call's result; :class:`ClusterError` when it raised."""
        assert self._pending, "nothing submitted"
        if not self.conn.poll(timeout):
            raise ClusterTimeout(f"no answer from the cluster in {timeout:.0f} s")
        self._pending = False
        status, value = self.conn.recv()
        if status != "ok":
            raise ClusterError(f"the call failed on the cluster:\n{value}")
        return value

    def call(self, fn: Callable[..., Any], *args: Any, timeout: float = 600.0) -> Any:
        self.submit(fn, *args)
        return self.result(timeout)

    def wait_for_executors(self, n: int = EXECUTORS, timeout: float = START_TIMEOUT
                           ) -> list[Proc]:
        """The executor JVMs, once ``n`` of them run (a killed one is replaced by its worker)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.tree.executors()
            if len(found) >= n or time.monotonic() > deadline:
                return found
            time.sleep(0.2)

    def close(self) -> None:
        try:
            if not self._pending:
                self.conn.send(None)
            self.proc.wait(60)
        except (OSError, EOFError, subprocess.TimeoutExpired):
            # the processes this fixture started, by their ids, children first
            for p in reversed(self.tree.members()):
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except OSError:
                    pass
            self.proc.wait(10)
        finally:
            self.conn.close()


def start_cluster(workdir: Path) -> Cluster:
    """Start the cluster's process (see the module's docstring) and wait for its session
    and both executors."""
    workdir.mkdir(parents=True, exist_ok=True)
    address = str(workdir / "cluster.sock")
    authkey = secrets.token_bytes(16)
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(_spark_home(workdir)),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(workdir / "local"),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        _AUTHKEY_ENV: authkey.hex(),
    })
    log = workdir / "cluster.log"
    with Listener(address, family="AF_UNIX", authkey=authkey) as listener:
        with open(log, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "tests.spark_cluster", address],
                                    cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        # accept() has no timeout: a thread waits, the process's death or the deadline ends
        got: list[Connection] = []
        waiter = threading.Thread(target=lambda: got.append(listener.accept()), daemon=True)
        waiter.start()
        deadline = time.monotonic() + START_TIMEOUT
        while waiter.is_alive() and proc.poll() is None and time.monotonic() < deadline:
            waiter.join(0.2)
        if not got:
            proc.kill()
            proc.wait(10)
            raise ClusterError(f"the cluster's process did not connect:\n{_tail(log)}")
    cluster = Cluster(proc, got[0], log)
    if not cluster.conn.poll(START_TIMEOUT):
        cluster.close()
        raise ClusterError(f"the cluster did not start in {START_TIMEOUT:.0f} s:\n{_tail(log)}")
    status, value = cluster.conn.recv()
    if status != "ready":
        cluster.close()
        raise ClusterError(f"the cluster did not start:\n{value}\n{_tail(log)}")
    return cluster


def _tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The cluster (see the module's docstring), one per test module."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")
    if not os.path.isdir("/proc/self"):
        pytest.skip("the cluster tests read processes from /proc (Linux)")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if _ci():
            pytest.fail("CI=true but no Java: Spark's cluster tests need a JDK (17+)")
        pytest.skip("no Java (java on PATH or JAVA_HOME): Spark's cluster tests need a JDK")
    cluster = start_cluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield cluster
    finally:
        cluster.close()


# --- the cluster's process ----------------------------------------------------------------


def _session() -> Any:
    from morlog.bench.spark_cluster import cluster_session

    return cluster_session("morlog-cluster-tests", {
        # the least Spark accepts: 1.5x its 300 MiB reserved memory
        # (UnifiedMemoryManager.getMaxMemory in apache/spark core/.../memory/)
        "spark.driver.memory": DRIVER_MEMORY,
        "spark.python.worker.reuse": "true",
        # an executor killed by a test is not excluded from the application
        "spark.excludeOnFailure.enabled": "false"})


def _serve(address: str) -> None:
    from pyspark import cloudpickle

    conn = Client(address, family="AF_UNIX", authkey=bytes.fromhex(os.environ.pop(_AUTHKEY_ENV)))
    try:
        spark = _session()
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        return
    conn.send(("ready", None))
    try:
        while True:
            try:
                msg = conn.recv()
            except EOFError:
                break
            if msg is None:
                break
            module, name, args = msg
            try:
                mod = importlib.import_module(module)
                # functions of the tests travel to executors by value (they cannot import
                # the tests package)
                for m in (mod, importlib.import_module("tests.spark_cluster")):
                    cloudpickle.register_pickle_by_value(m)
                conn.send(("ok", getattr(mod, name)(spark, *args)))
            except BaseException:
                conn.send(("error", traceback.format_exc()))
    finally:
        spark.stop()


if __name__ == "__main__":
    _serve(sys.argv[1])
