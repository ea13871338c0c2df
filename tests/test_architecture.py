"""The house's walls (issue 29), checked on the source itself — every import counted: top-level,
function-local and under TYPE_CHECKING; import-linter (run by .ci/run) enforces the layers, and
these tests hold what it cannot see.

* no import cycle between modules, and no module loaded by name (importlib) anywhere;
* no private name (a leading underscore) imported from another module, or read off one;
* no command-line flag spelled outside cli/ (the library names parameters: common.errors.param);
* no folder but cli/ with more than 12 modules; radon's cyclomatic complexity ≤ 20 for every
  function, with no `ok = ok and …` chains that hide branches from the count;
* every sub-folder of core/ has a public face: its __init__ lists what it exports, and it all
  exists.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "headcount"
MAX_MODULES = 12  # per folder (cli/ excepted: one module per command group)
MAX_COMPLEXITY = 20


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _imports(name: str, tree: ast.Module) -> Iterator[tuple[str, str | None, ast.AST]]:
    """(module imported, name taken from it or None, node) for every import in the module, wherever
    it stands; `from pkg import mod` counts as importing the module pkg.mod."""
    is_package = MODULES[name].name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[
                    : len(name.split(".")) - node.level + (1 if is_package else 0)
                ]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in MODULES:
                    yield f"{source}.{alias.name}", None, node
                else:
                    yield source, alias.name, node


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        graph[name] = {m for m, _, _ in _imports(name, _parse(path)) if m in MODULES and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_counting_every_import():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_is_loaded_by_name():
    loaders = {"import_module", "__import__", "spec_from_file_location", "exec_module"}
    found = []
    for name, path in MODULES.items():
        for node in ast.walk(_parse(path)):
            called = isinstance(node, ast.Call) and (
                getattr(node.func, "id", None) in loaders
                or getattr(node.func, "attr", None) in loaders
            )
            if called:
                found.append(f"{name}:{node.lineno}")
    assert found == []


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_private_name_crosses_a_module():
    found = []
    for name, path in MODULES.items():
        tree = _parse(path)
        aliases = {}  # local name → the module it is bound to
        for source, taken, node in _imports(name, tree):
            if source == name or source == "__future__":
                continue
            if taken is not None and _private(taken) and source.startswith("headcount"):
                found.append(f"{name}:{node.lineno} imports {taken} from {source}")
            if taken is None and source in MODULES:
                for alias in node.names:
                    if isinstance(node, ast.Import):
                        aliases[alias.asname or alias.name] = source
                    elif source.endswith("." + alias.name):
                        aliases[alias.asname or alias.name] = source
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _private(node.attr)
            ):
                found.append(f"{name}:{node.lineno} reads {node.attr} of {aliases[node.value.id]}")
    assert found == []


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def _texts(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal (docstrings and f-string parts included) and every
    comment."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def test_no_flag_is_spelled_outside_the_cli():
    found = []
    for name, path in MODULES.items():
        if name.startswith("headcount.cli"):
            continue
        for line, text in _texts(path):
            found += [f"{name}:{line} {flag}" for flag in FLAG.findall(text)]
    assert found == [], f"{len(found)} flag spellings outside cli/, e.g. {found[:10]}"


def test_no_folder_but_the_cli_holds_more_than_12_modules():
    crowded = {}
    for folder in [
        PACKAGE,
        *(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__"),
    ]:
        modules = [p for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
        if folder.name != "cli" and len(modules) > MAX_MODULES:
            crowded[str(folder.relative_to(SRC))] = len(modules)
    assert crowded == {}


def test_every_function_is_at_most_complexity_20():
    complexity = pytest.importorskip("radon.complexity")
    over = {}
    for name, path in MODULES.items():
        for block in complexity.cc_visit(path.read_text()):
            for item in [block, *getattr(block, "methods", [])]:
                if item.complexity > MAX_COMPLEXITY:
                    over[f"{name}.{item.name}"] = item.complexity
    assert over == {}


def _chained(function: ast.AST) -> dict[str, int]:
    """How often each name is re-assigned as `x = x and …` in the function's own body."""
    counts: dict[str, int] = {}
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.BoolOp)
            and isinstance(node.value.op, ast.And)
            and isinstance(node.value.values[0], ast.Name)
            and node.value.values[0].id == node.targets[0].id
        ):
            counts[node.targets[0].id] = counts.get(node.targets[0].id, 0) + 1
    return counts


def test_no_boolean_chain_hides_branches():
    """`ok = ok and check(...)` repeated folds a function's branches into expressions the complexity
    count misses (a loop's one accumulator `far = far and …` is a single test and stays allowed)."""
    found = []
    for name, path in MODULES.items():
        for node in ast.walk(_parse(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [f"{name}.{node.name}: {v}" for v, n in _chained(node).items() if n > 1]
    assert found == []


@pytest.mark.parametrize("folder", ["numbers", "attention", "model", "passes", "certify"])
def test_each_core_folder_has_a_public_face(folder):
    face = importlib.import_module(f"headcount.core.{folder}")
    assert face.__doc__ and len(face.__all__) == len(set(face.__all__))
    missing = [name for name in face.__all__ if not hasattr(face, name)]
    assert missing == []


@pytest.mark.parametrize(
    "package", sorted(n for n, path in MODULES.items() if path.name == "__init__.py")
)
def test_no_public_name_hides_a_module(package):
    """A face's exported name that is also a submodule's would shadow it: `from package import
    name` then hands back the function, not the module (issue 30 renamed such modules)."""
    face = importlib.import_module(package)
    folder = SRC / package.replace(".", "/")
    if not (folder / "__init__.py").exists():
        return
    submodules = {p.stem for p in folder.glob("*.py")} | {
        p.name for p in folder.iterdir() if (p / "__init__.py").exists()
    }
    exported = {n for n in getattr(face, "__all__", ()) if not inspect.ismodule(getattr(face, n))}
    assert exported & submodules == set()
