"""Test configuration: hypothesis profiles, a local S3 server, the Spark session (from
tests/spark_session.py) and the Spark cluster (tests/spark_cluster.py). Fixture helpers live
in tests/hudi_fixtures.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from . import hudi_fixtures
from .spark_cluster import spark_cluster  # noqa: F401  (the module-scoped cluster fixture)
from .spark_session import spark  # noqa: F401  (the session-scoped Spark fixture)

settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci", max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("slow", max_examples=20_000, deadline=None)
settings.register_profile("hunt", max_examples=1500, deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
)


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_configure(config: pytest.Config) -> None:
    """Under CI (``CI=true``) the real Hudi fixtures are required: without them about 1,100
    conformance cases would skip and the run would pass having checked much less."""
    if _ci() and hudi_fixtures.ROOT is None and not hasattr(config, "workerinput"):
        raise pytest.UsageError(
            "CI=true but the real Hudi fixtures are missing: "
            + hudi_fixtures.SKIP_REASON + " (unset CI to run without them, skipping those tests)")


@pytest.fixture(scope="session")
def s3() -> Iterator[str]:
    """A moto S3 server on a free local port; yields the URI query that reaches it."""
    pytest.importorskip("moto", reason="moto is not installed (pip install .[test])")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("moto server did not start")
            time.sleep(0.1)
    try:
        yield (f"endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1"
               "&allow_bucket_creation=true")
    finally:
        proc.terminate()
        proc.wait(10)


# The test files that take longest (minutes each: Spark sessions and clusters, wheels,
# benchmarks), longest first. The run starts them first (the longest-job-first rule), so
# that the two xdist workers finish together instead of one running a Spark file alone at
# the end; pyproject.toml's --no-loadscope-reorder keeps this order (xdist would otherwise
# sort files by their number of tests, which put these last). Measured with --durations.
SLOW_FIRST = ("test_spark_cluster.py", "test_spark.py",
              "test_bench.py", "test_packaging.py", "test_spark_stream.py",
              "test_spark_connect.py", "test_schema_evolution.py", "test_docs.py",
              "test_record_index.py", "test_fuzz_table_files.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    # a stable sort: within a file and among the other files the collection order stays
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
