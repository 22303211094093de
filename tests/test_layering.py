"""Layering: bench -> writers -> readers -> compat -> logformat; pyspark only in Spark modules.

Every folder is imported as ``morlog.<folder>``; a bare ``import readers`` would only work from
a source checkout (and collide with other projects' top-level packages), so it is rejected.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LAYERS = ["logformat", "compat", "readers", "writers", "bench"]  # each imports only those before
FOLDERS = [*LAYERS, "api"]  # api/ is the package root ``morlog``: it may import every layer
FOREIGN_HEAVY = {"pyspark"}


def _modules(path: Path) -> set[str]:
    """Absolute module names imported by a file (``from morlog import x`` counts as morlog.x)."""
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            if node.module == "morlog":
                out.update(f"morlog.{a.name}" for a in node.names)
    return out


def _imports(path: Path) -> set[str]:
    """The project folders (layers) and foreign top-level packages a file imports."""
    out: set[str] = set()
    for mod in _modules(path):
        parts = mod.split(".")
        out.add(parts[1] if parts[0] == "morlog" and len(parts) > 1 else parts[0])
    return out


@pytest.mark.parametrize("folder", [*FOLDERS, "tests"])
def test_no_bare_imports_of_project_folders(folder: str) -> None:
    for py in sorted((REPO / folder).rglob("*.py")):
        bare = {m.split(".")[0] for m in _modules(py)} & set(FOLDERS)
        assert not bare, f"{py.relative_to(REPO)} imports {sorted(bare)} without 'morlog.'"


@pytest.mark.parametrize("layer", LAYERS)
def test_layers_import_only_lower_layers(layer: str) -> None:
    allowed = set(LAYERS[: LAYERS.index(layer) + 1])
    forbidden = set(LAYERS) - allowed
    for py in sorted((REPO / layer).rglob("*.py")):
        bad = _imports(py) & forbidden
        assert not bad, f"{py.relative_to(REPO)} imports {sorted(bad)}"
        if "spark" not in py.stem:
            assert not _imports(py) & FOREIGN_HEAVY, f"{py.relative_to(REPO)} imports pyspark"


def test_logformat_has_no_file_io() -> None:
    for py in sorted((REPO / "logformat").rglob("*.py")):
        src = py.read_text()
        assert "open(" not in src.replace("fastavro", ""), py
        assert "import os" not in src, py


def test_import_logformat_loads_no_jvm_or_readers() -> None:
    code = ("import sys, morlog.logformat; bad = [m for m in ('pyspark', 'morlog.readers', "
            "'morlog.writers', 'py4j') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_morlog_loads_no_jvm_and_no_bench_dependencies() -> None:
    code = ("import sys, morlog; bad = [m for m in ('pyspark', 'py4j', 'matplotlib', 'hudi', "
            "'deltalake', 'pybloom_live', 'morlog.bench') if m in sys.modules]; print(bad); "
            "sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
