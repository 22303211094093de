"""The documentation works: the Python examples of README.md and docs/features.md run, so do
the README's command-line examples, every relative link of the documents reaches a file (and a
heading) that exists, and every module path they name (``morlog.readers.probe.SliceProbe``)
exists."""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
FEATURES = (REPO / "docs" / "features.md").read_text()
#: the documents whose links and module paths are checked
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")),
        *sorted((REPO / "spec").glob("*.md"))]
_FENCE = r"^```{}\n(.*?)^```"
#: README's examples run in order in one directory (they build on the table the first writes)
EXAMPLES = re.findall(_FENCE.format("python"), README, re.MULTILINE | re.DOTALL)
#: docs/features.md's examples each run alone in an empty directory
FEATURE_EXAMPLES = re.findall(_FENCE.format("python"), FEATURES, re.MULTILINE | re.DOTALL)
#: README's shell blocks of ``morlog`` commands (not those of make or pip)
CLI_BLOCKS = [b for b in re.findall(_FENCE.format("sh"), README, re.MULTILINE | re.DOTALL)
              if all(ln.startswith("morlog ") for ln in b.splitlines() if ln.strip())]
#: `morlog.<layer>...` in backticks, up to the first character that is not part of a dotted name
NAMED = re.compile(r"`(morlog\.(?:config|logformat|compat|readers|writers|spark|bench|cli)"
                   r"(?:\.\w+)*)")


def _uses_spark(code: str) -> bool:
    return "morlog.spark" in code


def _exec(code: str, name: str) -> None:
    exec(compile(code, name, "exec"), {"__name__": "__readme__"})


def _run_readme_before(n: int, capsys: pytest.CaptureFixture[str]) -> None:
    """Run README's examples before the ``n``-th in the current directory (those on Spark
    left out: no later example needs what they write), and forget their output."""
    for i in range(n):
        if not _uses_spark(EXAMPLES[i]):
            _exec(EXAMPLES[i], f"README.md python example {i + 1}")
    capsys.readouterr()


def test_readme_has_examples() -> None:
    """Every Python block is found (none in another spelling), so every one runs below."""
    assert len(EXAMPLES) >= 6 and any(_uses_spark(e) for e in EXAMPLES)
    assert CLI_BLOCKS and len(FEATURE_EXAMPLES) >= 3
    for text, found in ((README, EXAMPLES), (FEATURES, FEATURE_EXAMPLES)):
        fences = re.findall(r"^```(py\w*)", text, re.MULTILINE)
        assert fences == ["python"] * len(found)


@pytest.mark.parametrize("n", range(len(EXAMPLES)))
def test_readme_example_runs(n: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str],
                             request: pytest.FixtureRequest) -> None:
    """Each README example runs after the ones before it; the Spark one on the test run's
    session (``spark`` fixture: skipped only when pyspark is not installed)."""
    if _uses_spark(EXAMPLES[n]):
        request.getfixturevalue("spark")
    monkeypatch.chdir(tmp_path)
    _run_readme_before(n, capsys)
    _exec(EXAMPLES[n], f"README.md python example {n + 1}")
    assert capsys.readouterr().out, "an example shows what it does"


@pytest.mark.parametrize("n", range(len(FEATURE_EXAMPLES)))
def test_features_example_runs(n: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    _exec(FEATURE_EXAMPLES[n], f"docs/features.md python example {n + 1}")
    assert capsys.readouterr().out, "an example shows what it does"


def test_readme_cli_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """README's ``morlog`` commands exit 0 on the table its Python examples wrote."""
    monkeypatch.chdir(tmp_path)
    _run_readme_before(len(EXAMPLES), capsys)
    for block in CLI_BLOCKS:
        for line in block.splitlines():
            args = shlex.split(line, comments=True)
            if not args:
                continue
            run = subprocess.run([sys.executable, "-m", *args], capture_output=True,
                                 text=True, timeout=300)
            assert run.returncode == 0, f"{line}\n{run.stdout}{run.stderr}"
            assert run.stdout, f"{line} printed nothing"


# --- links ---------------------------------------------------------------------------------

#: a Markdown link or image: [text](target) or ![alt](target)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (lower case, punctuation but ``-`` and
    ``_`` dropped, spaces to ``-``)."""
    out = set()
    for title in re.findall(r"^#+\s+(.*?)\s*$", re.sub(_FENCE.format(r"\w*"), "", text,
                                                        flags=re.MULTILINE | re.DOTALL),
                            re.MULTILINE):
        out.add(re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-"))
    return out


def broken_links(doc: Path, root: Path = REPO) -> list[str]:
    """The relative links of a document that do not name a file (or folder) under ``root``,
    or whose anchor names no heading of the Markdown file they reach."""
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if root.resolve() not in (dest, *dest.parents):
            broken.append(f"{target}: outside the checkout")
        elif not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.read_text()):
            broken.append(f"{target}: no heading #{anchor} in {path or doc.name}")
    return broken


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_exist(doc: Path) -> None:
    """Every relative link of README.md, docs/ and spec/ reaches a file of the checkout, and
    a heading of it when it has an anchor."""
    broken = broken_links(doc)
    assert not broken, "\n".join(broken)


def test_link_check_finds_broken_links(tmp_path: Path) -> None:
    """The link check itself: a missing file, a missing heading and a link out of the
    checkout are reported; a good link, a heading's anchor and a URL are not."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "outside.md").write_text("# Out\n")
    doc = tmp_path / "docs" / "a.md"
    doc.write_text("# Title, here\n```sh\n# not a heading\n```\n"
                   "[ok](a.md#title-here) [self](#title-here) [web](https://x.org/y.md)\n"
                   "[gone](b.md) [anchor](a.md#not-a-heading) [out](../outside.md)\n")
    assert _anchors(doc.read_text()) == {"title-here"}
    assert broken_links(doc, tmp_path / "docs") == [
        "b.md: no such file", "a.md#not-a-heading: no heading #not-a-heading in a.md",
        "../outside.md: outside the checkout"]


#: a file or folder of the checkout named in a document's text: ``spec/table.md``,
#: ``cli/common.py``, ``spec/vectors/``, or a module and a name in it
#: (``readers/slice_blocks.effective_blocks``)
CHECKOUT_PATH = re.compile(r"(?<![\w/.-])((?:api|config|logformat|compat|readers|writers|spark"
                           r"|bench|cli|spec|docs|tests)/[\w./-]*)")


def missing_paths(doc: Path, root: Path = REPO) -> list[str]:
    """The checkout paths a document names (in its prose or its code blocks) that name no
    file or folder under ``root`` (nor a module of it, for ``module.name``)."""
    missing = []
    for named in sorted(set(CHECKOUT_PATH.findall(doc.read_text()))):
        path = named.rstrip(".")
        module = path.rpartition(".")[0]
        if not (root / path).exists() and not (module and (root / f"{module}.py").exists()):
            missing.append(f"{named}: no such file in the checkout")
    return missing


@pytest.mark.parametrize("doc", [d for d in DOCS if d.parent.name != "design"],
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_named_checkout_paths_exist(doc: Path) -> None:
    """The files and modules README.md, docs/ and spec/ name by path exist (a design note
    may name files still to be written; docs/design/ is left out)."""
    missing = missing_paths(doc)
    assert not missing, "\n".join(missing)


def test_path_check_finds_missing_paths(tmp_path: Path) -> None:
    (tmp_path / "readers").mkdir()
    (tmp_path / "readers" / "table.py").write_text("")
    doc = tmp_path / "a.md"
    doc.write_text("`readers/table.py` and readers/table.Table, readers/ and the\n"
                   "gone readers/cli.py, `writers/metadata.metadata_hooks`; ../shared/x.md\n")
    assert missing_paths(doc, tmp_path) == [
        "readers/cli.py: no such file in the checkout",
        "writers/metadata.metadata_hooks: no such file in the checkout"]


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
             "Table.incremental", "Table.read_optimized",
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
