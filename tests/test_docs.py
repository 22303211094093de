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
NAMED = re.compile(r"`(morlog\.(?:logformat|compat|readers|writers|spark|bench|cli)(?:\.\w+)*)")


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


# --- docstring examples --------------------------------------------------------------------

#: the public calls whose docstrings carry an example; the examples of MorTable.create build
#: the table ("rides") every other example starts from
DOCTESTED = ["MorTable.create", "MorTable.upsert", "MorTable.insert", "MorTable.delete",
             "MorTable.insert_overwrite", "MorTable.insert_overwrite_table",
             "MorTable.delete_partitions", "Table", "Table.read", "Table.snapshot",
             "Table.instants", "Table.schema", "tag_keys", "KeyTagger", "LogFileReader",
             "probe_log_file", "SliceProbe", "IndexedLogWriter", "LogFileWriter", "MorTable",
             "WriteConfig"]


def _run_docstring(name: str, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import doctest

    import pyarrow as pa

    import morlog

    obj: Any = morlog
    for part in name.split("."):
        obj = getattr(obj, part)
    globs = {n: getattr(morlog, n) for n in morlog.__all__ if n != "__version__"}
    globs["pa"] = pa
    monkeypatch.chdir(cwd)
    finder = doctest.DocTestFinder(recurse=False)
    tests = [t for t in finder.find(obj, name, globs=globs) if t.examples]
    assert tests, f"{name} has no example in its docstring"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) of {name} failed (output above)"


@pytest.fixture(scope="module")
def rides(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The table of MorTable.create's example, built by running that example."""
    root = tmp_path_factory.mktemp("rides")
    with pytest.MonkeyPatch.context() as mp:
        _run_docstring("MorTable.create", root, mp)
    return root


@pytest.mark.parametrize("name", DOCTESTED[1:])
def test_docstring_examples_run(name: str, rides: Path, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    shutil.copytree(rides / "rides", tmp_path / "rides", symlinks=True)
    _run_docstring(name, tmp_path, monkeypatch)


def test_make_demo_installs_the_spark_extra_only() -> None:
    """`make demo` sets up morlog with the ``spark`` extra, not the test tools of ``setup``."""
    make = (REPO / "Makefile").read_text()
    rules = dict(re.findall(r"^([\w$().-]+):([^=\n]*)$", make, re.MULTILINE))
    demo_needs = rules["demo"].split()
    assert "setup" not in demo_needs and "$(STAMP)" not in demo_needs
    (stamp,) = demo_needs
    recipe = re.search(rf"^{re.escape(stamp)}:.*\n((?:\t.*\n)+)", make, re.MULTILINE)
    assert recipe and '-e ".[spark]"' in recipe.group(1) and "[test]" not in recipe.group(1)
