"""The ``local-cluster`` half of ``morlog bench spark``, and the driver-side memory sampler.

Spark's ``local-cluster[2,1,1024]`` master runs a standalone master and two workers inside
the driver's JVM; each worker starts one executor JVM (1 core, 1 GB) of its own, and the
executors start their own Python workers: nothing runs in the driver's JVM or its Python
workers but the planning and the commit. A JVM holds one SparkContext, and the workers take
their folder (``$SPARK_HOME/work``) from the environment the JVM started with, so the half
runs in a Python process of its own (``python -m morlog.bench.spark PARAMS OUT``):
``SPARK_HOME`` a temporary folder of links to the installed pyspark's ``bin``, ``sbin`` and
``jars`` (never the installed package itself), everything bound to 127.0.0.1. It measures
the same methods on the same batches as the ``local[2]`` half
(:func:`morlog.bench.spark.measure`) and writes its results as JSON.

:class:`DriverPeaks` is how the cluster tests measure the driver (``tests/spark_cluster.py``):
the peak resident set (``VmHWM``, reset first through ``/proc/PID/clear_refs``) of every
driver-side process, i.e. the driver's Python process, its JVM and the Python workers that
JVM starts (the data source's planning and commit, and on ``local[*]`` the tasks too), and
not the executor JVMs nor what they start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

#: the master of the cluster half: two executor JVMs of one core and 1 GB
MASTER = "local-cluster[2,1,1024]"
EXECUTORS = 2
#: the executor JVM's main class (how an executor process is told from the driver's JVM)
EXECUTOR_CLASS = "CoarseGrainedExecutorBackend"
#: seconds for the two executors to register (a loaded 2-core machine)
START_TIMEOUT = 240.0


# --- processes (/proc, Linux) ---------------------------------------------------------------


def proc_info(pid: int) -> tuple[int, tuple[str, ...]] | None:
    """(parent pid, command line) of a live process; None when gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
    except OSError:
        return None
    after = stat[stat.rfind(b")") + 2:].split()
    if not after or after[0] == b"Z":
        return None
    return int(after[1]), tuple(a.decode(errors="replace") for a in cmd.split(b"\0") if a)


def _peak_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reset_peak(pid: int) -> None:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def driver_side(root: int) -> dict[int, str]:
    """pid -> role of every driver-side process under ``root`` (the driver's Python
    process): ``driver_python``, ``driver_jvm`` or ``python_worker``; executor JVMs and
    everything under them left out."""
    procs: dict[int, tuple[int, tuple[str, ...]]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    for n in names:
        if n.isdigit():
            p = proc_info(int(n))
            if p is not None:
                procs[int(n)] = p
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out: dict[int, str] = {}
    todo = [root] if root in procs else []
    while todo:
        pid = todo.pop()
        cmd = procs[pid][1]
        if any(EXECUTOR_CLASS in a for a in cmd):
            continue  # an executor: not the driver's
        if pid == root:
            out[pid] = "driver_python"
        elif cmd and os.path.basename(cmd[0]) == "java":
            out[pid] = "driver_jvm"
        elif cmd and "python" in os.path.basename(cmd[0]):
            out[pid] = "python_worker"
        todo += children.get(pid, [])
    return out


def executors(root: int) -> list[int]:
    """The executor JVMs under ``root`` (a local-cluster's driver)."""
    procs = {int(n): p for n in os.listdir("/proc") if n.isdigit()
             for p in [proc_info(int(n))] if p is not None}
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child, (ppid, cmd) in procs.items():
            if ppid == pid:
                if any(EXECUTOR_CLASS in a for a in cmd):
                    out.append(child)
                else:
                    todo.append(child)
    return out


class DriverPeaks:
    """Peak resident memory (MiB) of the driver-side processes of ``root`` while the
    ``with`` block runs, per role (the largest process of each), sampled every
    ``interval`` seconds; a process's own peak (VmHWM) is read, so growth between samples
    is not missed. Zeros where ``/proc`` is missing."""

    ROLES = ("driver_python", "driver_jvm", "python_worker")

    def __init__(self, root: int | None = None, interval: float = 0.05) -> None:
        self.root = os.getpid() if root is None else root
        self.interval = interval
        self._peaks: dict[int, tuple[str, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        for pid, role in driver_side(self.root).items():
            kb = _peak_kb(pid)
            old = self._peaks.get(pid, (role, 0))[1]
            self._peaks[pid] = (role, max(old, kb))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> DriverPeaks:
        for pid in driver_side(self.root):
            _reset_peak(pid)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def mb(self) -> dict[str, int]:
        """``<role>_mb`` for every role, and ``driver_side_mb``: the sum of every
        driver-side process's peak (an upper bound of their peak together)."""
        out = {f"{r}_mb": 0 for r in self.ROLES}
        for role, kb in self._peaks.values():
            out[f"{role}_mb"] = max(out[f"{role}_mb"], kb // 1024)
        out["driver_side_mb"] = sum(kb for _, kb in self._peaks.values()) // 1024
        return out


# --- the cluster half -----------------------------------------------------------------------


def spark_home(into: Path) -> Path:
    """A SPARK_HOME of links to the installed pyspark's scripts and jars (the workers write
    their executors' folders under ``SPARK_HOME/work``: never the installed package)."""
    import pyspark

    pkg = Path(pyspark.__file__).resolve().parent
    home = into / "spark-home"
    home.mkdir(parents=True, exist_ok=True)
    for name in ("bin", "sbin", "jars", "conf", "python"):
        if (pkg / name).exists() and not (home / name).exists():
            (home / name).symlink_to(pkg / name)
    return home


def run_half(workdir: Path, params: dict[str, Any], timeout: float = 3600.0) -> dict[str, Any]:
    """Run the cluster half in a process of its own (see the module's docstring) with
    ``params`` (:func:`morlog.bench.spark.measure`'s, JSON); its results."""
    from morlog.bench.common import BenchError

    workdir.mkdir(parents=True, exist_ok=True)
    arg, out = workdir / "params.json", workdir / "results.json"
    arg.write_text(json.dumps(params))
    env = dict(os.environ)
    env.update({"SPARK_HOME": str(spark_home(workdir)), "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_LOCAL_DIRS": str(workdir / "local"), "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable})
    env.pop("SPARK_REMOTE", None)
    log = workdir / "cluster.log"
    with open(log, "wb") as f:
        proc = subprocess.run([sys.executable, "-m", "morlog.bench.spark", str(arg),
                               str(out)], env=env, stdin=subprocess.DEVNULL, stdout=f,
                              stderr=subprocess.STDOUT, timeout=timeout, check=False)
    if proc.returncode != 0 or not out.exists():
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise BenchError(f"the local-cluster half failed (exit {proc.returncode}):\n{tail}")
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def cluster_session(app: str, extra: dict[str, str] | None = None) -> Any:
    """A session on Spark's ``local-cluster`` master (driver on 127.0.0.1, no UI, morlog's
    data source registered), returned once every executor JVM has started (the session
    exists before they do). ``extra``: more Spark settings. The benchmark's cluster half
    and the cluster tests (tests/spark_cluster.py) both start theirs here."""
    from pyspark.sql import SparkSession

    from morlog.spark.write import register

    builder = (SparkSession.builder.master(MASTER).appName(app)
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.memory", "1g")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4"))
    for k, v in (extra or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    # the session exists before the executors start: wait for both executor JVMs
    deadline = time.monotonic() + START_TIMEOUT
    while len(executors(os.getpid())) < EXECUTORS:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{EXECUTORS} executors did not start in "
                               f"{START_TIMEOUT:.0f} s")
        time.sleep(0.2)
    return spark


def start(argv: list[str]) -> tuple[Any, dict[str, Any], Path, float]:
    """In the half's process (``python -m morlog.bench.spark PARAMS OUT``): the cluster's
    session, the params, where the results go, the seconds the cluster took to start."""
    from morlog.bench.spark_events import event_log_confs

    params = json.loads(Path(argv[0]).read_text())
    t0 = time.perf_counter()
    spark = cluster_session("morlog-bench-spark-cluster",
                            event_log_confs(params["events"]) if params.get("events") else None)
    return spark, params, Path(argv[1]), time.perf_counter() - t0


__all__ = ["EXECUTORS", "MASTER", "DriverPeaks", "cluster_session", "driver_side", "executors",
           "proc_info", "run_half", "spark_home", "start"]
