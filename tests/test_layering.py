"""Layering: no import cycle between modules, and each module imports only its own layer or
the layers below it (:data:`LAYER_ORDER`: config -> logformat -> compat -> readers ->
writers.core -> writers.mdt -> writers.services -> writers.client -> spark -> bench -> cli ->
api), over the import graph of the code, function-local imports included; pyspark only in
Spark modules.

Every folder is imported as ``morlog.<folder>``; a bare ``import readers`` would only work from
a source checkout (and collide with other projects' top-level packages), so it is rejected.
Nor does any module use another object's private members (``obj._x`` outside the class that
defines ``_x``, ``from m import _x``): see :func:`private_reach_ins`.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: the folders of code; api/ is the package root ``morlog``, the others ``morlog.<folder>``
FOLDERS = ["config", "logformat", "compat", "readers", "writers", "spark", "bench", "cli", "api"]
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


def test_pyspark_only_in_spark_modules() -> None:
    """pyspark is imported (anywhere in a file) only by the Spark layer and by the Spark
    commands and benchmarks of the layers above it (``spark_*`` modules of cli and bench)."""
    spark = next(i for i, (name, _) in enumerate(LAYER_ORDER) if name == "spark")
    for folder in FOLDERS:
        for py in sorted((REPO / folder).rglob("*.py")):
            if not _imports(py) & FOREIGN_HEAVY:
                continue
            module = _module_name(folder, py)
            layer = layer_of(module)
            assert layer == spark or (layer > spark and py.stem.startswith("spark")), (
                f"{py.relative_to(REPO)} imports pyspark")


#: what the extras bring (pyproject.toml): imported only inside the functions that need them,
#: so that ``pip install morlog`` gives a working library and command without them. The Spark
#: data source itself is pyspark code through and through; nothing imports it at module level
#: (``tests/test_packaging.py`` runs every command's help without pyspark)
OPTIONAL = {"matplotlib", "pybloom_live", "hudi", "deltalake", "pandas", "pyspark", "boto3",
            "lance"}
# the Spark modules are imported only by Spark users (who have the spark extra)
EAGER_ALLOWED = {"spark/write.py": {"pyspark", "pandas"},
                 "spark/source.py": {"pyspark", "pandas"},
                 "spark/stream.py": {"pyspark", "pandas"},
                 "spark/stream_source.py": {"pyspark", "pandas"}}


def _module_level_imports(path: Path) -> set[str]:
    """Top-level packages a file imports when it is imported (not inside functions)."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                out.update(a.name.split(".")[0] for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                out.add(child.module.split(".")[0])
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return out


@pytest.mark.parametrize("folder", FOLDERS)
def test_optional_dependencies_are_imported_lazily(folder: str) -> None:
    for py in sorted((REPO / folder).rglob("*.py")):
        allowed = EAGER_ALLOWED.get(py.relative_to(REPO).as_posix(), set())
        eager = (_module_level_imports(py) & OPTIONAL) - allowed
        assert not eager, f"{py.relative_to(REPO)} imports {sorted(eager)} when imported"


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


def test_import_morlog_cli_loads_no_jvm_and_no_bench_dependencies() -> None:
    """The command imports every command module (the Spark demo's and the benchmarks'
    included) and builds its parser without the Spark or bench extras' modules."""
    code = ("import sys, morlog.cli; morlog.cli.build_parser(); bad = [m for m in ('pyspark', "
            "'py4j', 'matplotlib', 'hudi', 'deltalake', 'pybloom_live') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr


# --- encapsulation: no module reaches into another's private members --------------------------


def _is_private(name: str) -> bool:
    """``_x``, ``__x``; not dunders (``__x__``) nor enum's reserved sunders (``_x_``)."""
    return name.startswith("_") and not name.endswith("_")


def _class_members(cls: ast.ClassDef) -> set[str]:
    """The names a class defines: methods, class attributes, ``self.x = ``/``cls.x = `` stores."""
    out: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            out.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            out.add(stmt.target.id)
    for node in ast.walk(cls):
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}):
            out.add(node.attr)
    return out


def _is_own(value: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: an object's access to its own members."""
    if isinstance(value, ast.Name):
        return value.id in {"self", "cls"}
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == "super")


#: names that only look private: documented public API of the standard library
DOCUMENTED_UNDERSCORE = {"os._exit", "sys._getframe"}
#: namedtuple's documented methods and attributes
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}


def private_reach_ins(path: Path, root: Path = REPO) -> list[str]:
    """Where a file uses another object's or module's private member (``file:line: code``).

    ``obj._x`` is allowed on ``self``/``cls``/``super()`` and inside a class that defines
    ``_x`` itself (``other._x`` in ``__eq__``); anywhere else, even elsewhere in the same
    file, it reaches into another object's internals: give the owner a public method or
    attribute instead. ``from m import _x``, ``import m._x`` and ``getattr(o, "_x")`` count
    too. No type inference, so no guessing: the rule needs only the class the code is in.
    """
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(root).as_posix()
    found: list[str] = []

    def visit(node: ast.AST, members: frozenset[str]) -> None:
        if isinstance(node, ast.ClassDef):
            members = members | _class_members(node)
        if (isinstance(node, ast.Attribute) and _is_private(node.attr)
                and not _is_own(node.value) and node.attr not in members
                and node.attr not in NAMEDTUPLE_API
                and ast.unparse(node) not in DOCUMENTED_UNDERSCORE):
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names if _is_private(a.name)]
            if names:
                found.append(f"{where}:{node.lineno}: from {'.' * node.level}"
                             f"{node.module or ''} import {', '.join(names)}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if any(_is_private(p) for p in a.name.split(".")):
                    found.append(f"{where}:{node.lineno}: import {a.name}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in {"getattr", "setattr", "hasattr", "delattr"}
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and _is_private(node.args[1].value)
              and not _is_own(node.args[0]) and node.args[1].value not in members):
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        for child in ast.iter_child_nodes(node):
            visit(child, members)

    visit(tree, frozenset())
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_reach_ins_to_private_members(folder: str) -> None:
    found = [f for py in sorted((REPO / folder).rglob("*.py")) for f in private_reach_ins(py)]
    assert not found, "private members used outside the class that defines them:\n" + "\n".join(
        found)


def test_the_reach_in_rule_flags_what_it_should(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    src = '''
from .storage import _SourceBase, public
import pkg._impl
class Block:
    _cache: dict = {}
    def __init__(self, raw):
        self._raw = raw
        self.__dict__.update({})
    def _decode(self):
        return self._raw
    def __eq__(self, other):
        return other._raw == self._raw and other._decode() == super()._decode()
    def copy(self, other):
        return Block(other._raw)
class Reader:
    def read(self, block, enum_cls):
        enum_cls._value2member_map_
        getattr(block, "_raw")
        return block._raw, block._decode(), self._state, block.__class__
def helper(block):
    return block._decode()
'''
    probe.write_text(src)
    found = [f.split(": ", 1)[1] for f in private_reach_ins(probe, tmp_path)]
    assert found == [
        "from .storage import _SourceBase",
        "import pkg._impl",
        "getattr(block, '_raw')",
        "block._raw",
        "block._decode",
        "block._decode",
    ], found


def _exception_classes(path: Path) -> list[str]:
    """Classes a file defines whose base is named like an error or a warning."""
    tree = ast.parse(path.read_text(), str(path))
    return [n.name for n in tree.body if isinstance(n, ast.ClassDef)
            and any(ast.unparse(b).endswith(("Error", "Warning", "Exception")) for b in n.bases)]


#: exceptions that never leave their module (a parser's internal signal, caught there)
_INTERNAL_EXCEPTIONS = {"logformat/joda_time.py": {"UnsupportedPatternError", "ParseFailure"},
                        "logformat/avro_columnar.py": {"Unsupported"},
                        "bench/common.py": {"BenchError"}}


def test_every_error_and_warning_lives_in_one_module_and_morlog_errors_exports_it() -> None:
    """One hierarchy (logformat/errors.py, the lowest layer), re-exported whole by
    ``morlog.errors``: a user catches or filters anything morlog raises or warns from there."""
    home = REPO / "logformat" / "errors.py"
    for folder in FOLDERS:
        for py in sorted((REPO / folder).rglob("*.py")):
            rel = str(py.relative_to(REPO))
            if py == home:
                continue
            stray = {c for c in _exception_classes(py) if not c.startswith("_")}
            stray -= _INTERNAL_EXCEPTIONS.get(rel, set())
            assert not stray, f"{rel} defines {sorted(stray)}: define them in logformat/errors.py"
    import morlog.errors
    from morlog.logformat import errors

    defined = set(_exception_classes(home)) | {"MorlogError", "MorlogWarning"}
    assert set(morlog.errors.__all__) == defined
    for name in defined:
        cls = getattr(morlog.errors, name)
        assert issubclass(cls, (errors.MorlogError, errors.MorlogWarning)), name


# --- the module import graph ---------------------------------------------------------------


def _module_name(folder: str, py: Path) -> str:
    rel = py.relative_to(REPO / folder).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(["morlog" if folder == "api" else f"morlog.{folder}", *parts])


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for n in ast.walk(node))
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports, function-local imports included and
    ``TYPE_CHECKING`` imports left out (they never run)."""
    files = {_module_name(f, py): py for f in FOLDERS for py in (REPO / f).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, py in files.items():
        tree = ast.parse(py.read_text(), str(py))
        skip = _type_checking_nodes(tree)
        package = name if py.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                found.add(mod)
                found.update(f"{mod}.{a.name}" for a in node.names)
        graph[name] = {m for m in found if m in files and m != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


#: the layers, lowest first. A module imports only modules of its own layer or of layers
#: before it, function-local imports included (``TYPE_CHECKING`` imports are left out: they
#: never run). A module belongs to the layer of the longest prefix naming it.
LAYER_ORDER: list[tuple[str, tuple[str, ...]]] = [
    ("config", ("morlog.config",)),
    ("logformat", ("morlog.logformat",)),
    ("compat", ("morlog.compat",)),
    ("readers", ("morlog.readers",)),
    ("writers.core", ("morlog.writers", "morlog.writers.core")),
    ("writers.mdt", ("morlog.writers.mdt",)),
    ("writers.services", ("morlog.writers.services",)),
    ("writers.client", ("morlog.writers.client", "morlog.writers.options", "morlog.writers.create",
                        "morlog.writers.repair", "morlog.writers.distributed")),
    ("spark", ("morlog.spark",)),
    ("bench", ("morlog.bench",)),
    ("cli", ("morlog.cli",)),
    ("api", ("morlog",)),
]


def layer_of(module: str) -> int:
    """The index in :data:`LAYER_ORDER` of ``module``'s layer."""
    best: tuple[int, int] | None = None
    for i, (_, prefixes) in enumerate(LAYER_ORDER):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None
                                                                or len(p) > best[1]):
                best = (i, len(p))
    assert best is not None, f"{module} is in no layer: place it in LAYER_ORDER"
    return best[0]


def test_there_is_no_import_cycle() -> None:
    cycles = import_cycles(import_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in cycles)


def test_modules_import_only_their_layer_or_lower_ones() -> None:
    upward = [f"{m} ({LAYER_ORDER[layer_of(m)][0]}) imports {d} ({LAYER_ORDER[layer_of(d)][0]})"
              for m, deps in sorted(import_graph().items()) for d in sorted(deps)
              if layer_of(d) > layer_of(m)]
    assert not upward, "imports of a higher layer:\n" + "\n".join(upward)


def test_the_layer_rule_flags_an_upward_import() -> None:
    assert layer_of("morlog.writers.core.commit") < layer_of("morlog.writers.services.compaction")
    assert layer_of("morlog.writers.client") > layer_of("morlog.writers.services.base")
    assert layer_of("morlog.config") == 0
    assert layer_of("morlog.logformat.errors") == 1
    assert layer_of("morlog") == len(LAYER_ORDER) - 1


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [{"a", "b", "c"}]
