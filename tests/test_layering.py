"""Layering: writers -> readers -> compat -> logformat; pyspark only in Spark modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LAYERS = ["logformat", "compat", "readers", "writers"]  # each may import only those before it
FOREIGN_HEAVY = {"pyspark"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


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
    code = ("import sys, logformat; bad = [m for m in ('pyspark', 'readers', 'writers', 'py4j') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
