"""The documentation works: README's Python examples run, and every module path it or the
specifications name (``morlog.readers.probe.SliceProbe``) exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
DOCS = [REPO / "README.md", *sorted((REPO / "spec").glob("*.md"))]
EXAMPLES = re.findall(r"^```python\n(.*?)^```", README, re.MULTILINE | re.DOTALL)
#: `morlog.<layer>...` in backticks, up to the first character that is not part of a dotted name
NAMED = re.compile(r"`(morlog\.(?:logformat|compat|readers|writers|bench|cli)(?:\.\w+)*)")


def test_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("n", range(len(EXAMPLES)))
def test_readme_example_runs(n: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    code = compile(EXAMPLES[n], f"README.md python example {n + 1}", "exec")
    exec(code, {"__name__": "__readme__"})
    assert capsys.readouterr().out, "an example shows what it does"


def _resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_named_module_paths_exist(doc: Path) -> None:
    missing = []
    for name in sorted(set(NAMED.findall(doc.read_text()))):
        try:
            _resolve(name)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{name}: {exc}")
    assert not missing, "\n".join(missing)
