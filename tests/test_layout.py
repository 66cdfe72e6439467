"""The package keeps its shape: layers import downward (the layers and the sideways imports
they allow are the tables of docs/architecture.md), no import cycle of more than two modules,
few modules sit loose at the package root, no source file grows past 700 lines, no module
reaches into another's underscore-prefixed names or members, docs/architecture.md names every
module of every package, and no comment or docstring quotes a measured duration (those live in
bench/README.md, where they are measured again).

The import graph is read from the source with `ast`, so it sees every import, those inside
functions included; only imports under `if TYPE_CHECKING:` are left out (they never run)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "evalstress"
ARCHITECTURE = SRC.parent / "docs" / "architecture.md"
#: the only module of the engine an analysis reads (the run it analyses)
ENGINE_FOR_ANALYSES = {"evalstress.engine.result"}
#: underscore members of a library's objects that share a name with one of ours: (module,
#: member) -> why the module reads it
LIBRARY_INTERNALS = {
    ("evalstress.llm.local", "_model"): "llama-cpp-python's Llama has no public token text",
    ("evalstress.llm.local", "_ctx"): "llama-cpp-python's Llama has no public KV-cache trim",
}

MAX_CYCLE = 2
#: a number with a unit of time, as a measurement is written ("0.6 s", "~160 ms", "5 minutes")
DURATION = re.compile(r"(?<![\w.])~?\d[\d.,]*(?:-\d[\d.,]*)?\s(?:s|ms|seconds?|minutes?|min)\b")
#: files whose comments may still quote a duration, with why (bench/README.md has the figure)
DURATIONS_ELSEWHERE = {
    "cli/entry.py": "cli/ is being rewritten by the one-declaration-per-option change; its "
                    "teardown figure moves with it",
}
MAX_ROOT_MODULES = 10
# strict for every file: src/evalstress/cli/__init__.py (1,182 lines) is being split into
# modules and is expected to pass once that split lands
MAX_LINES = 700


def module_name(path: Path) -> str:
    """`src/evalstress/core/data.py` -> `evalstress.core.data`; a package's `__init__.py` is the
    package itself."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_type_checking(test: ast.expr) -> bool:
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of the tree except the bodies of `if TYPE_CHECKING:` (their `else` stays)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and is_type_checking(node.test):
            stack.append(node.test)
            stack.extend(reversed(node.orelse))
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


@dataclass
class Module:
    name: str
    path: Path
    imports: set[str] = field(default_factory=set)
    #: the first line importing each module of `imports`
    import_lines: dict[str, int] = field(default_factory=dict)
    # (line, module the name belongs to, name) for every underscore name taken from another module
    private_uses: list[tuple[int, str, str]] = field(default_factory=list)
    #: underscore attributes this module defines (`self._x = ...`, `def _x` in a class body)
    own_members: set[str] = field(default_factory=set)
    #: (line, attribute) of every `something._x` whose object is not self or cls
    member_uses: list[tuple[int, str]] = field(default_factory=list)

    def add_import(self, target: str, line: int) -> None:
        self.imports.add(target)
        self.import_lines.setdefault(target, line)


def nearest_module(dotted: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of a dotted name that is a module of the package."""
    parts = dotted.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def absolute(module: Module, level: int, target: str | None) -> str:
    """The absolute module a (possibly relative) `from ... import` names."""
    if level == 0:
        return target or ""
    base = module.name.split(".")
    if module.path.name != "__init__.py":
        base.pop()
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def read_module(name: str, path: Path, modules: dict[str, Path]) -> Module:
    module = Module(name, path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bound: dict[str, str] = {}  # a local name bound to one of the package's modules
    for node in runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = nearest_module(alias.name, modules)
                if target is None:
                    continue
                module.add_import(target, node.lineno)
                if alias.asname:
                    bound[alias.asname] = target
                else:  # `import evalstress.core.data` binds `evalstress`
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = absolute(module, node.level, node.module)
            if nearest_module(base, modules) is None:
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in modules:
                    module.add_import(full, node.lineno)
                    bound[alias.asname or alias.name] = full
                    continue
                owner = nearest_module(base, modules)
                assert owner is not None
                module.add_import(owner, node.lineno)
                if is_private(alias.name) and owner != name:
                    module.private_uses.append((node.lineno, owner, alias.name))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and is_private(node.attr)):
            continue
        chain: list[str] = []
        value: ast.expr = node.value
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if not isinstance(value, ast.Name) or value.id not in bound:
            continue
        dotted = ".".join([bound[value.id], *reversed(chain)])
        if dotted in modules and dotted != name:
            module.private_uses.append((node.lineno, dotted, node.attr))
    read_members(module, tree)
    module.imports.discard(name)
    module.import_lines.pop(name, None)
    return module


def read_members(module: Module, tree: ast.AST) -> None:
    """The underscore members a module defines, and those it reads from other objects."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and is_private(
                        item.name):
                    module.own_members.add(item.name)
                targets = (item.targets if isinstance(item, ast.Assign) else
                           [item.target] if isinstance(item, ast.AnnAssign) else [])
                module.own_members |= {t.id for t in targets
                                       if isinstance(t, ast.Name) and is_private(t.id)}
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                if isinstance(node.ctx, ast.Store):
                    module.own_members.add(node.attr)
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) \
                    and owner.func.id == "super":
                continue
            module.member_uses.append((node.lineno, node.attr))


def layer_rules(text: str) -> tuple[dict[str, int], set[tuple[str, str]]]:
    """From docs/architecture.md: each room's layer (0 = the top) and the sideways imports the
    page allows, as (room, room it may import)."""
    layers = markdown_table(text, ["layer", "rooms"])
    rooms = {room.strip(): depth for depth, (_, names) in enumerate(layers)
             for room in names.split(",")}
    allowed = {(row[0], row[1]) for row in markdown_table(text, ["room", "may import", "why"])}
    return rooms, allowed


def markdown_table(text: str, header: list[str]) -> list[list[str]]:
    """The rows of the Markdown table whose header cells are `header`."""
    lines = text.splitlines()
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    start = next(i for i, row in enumerate(cells) if row == header)
    rows = []
    for line, row in zip(lines[start + 2:], cells[start + 2:], strict=True):
        if not line.strip().startswith("|"):
            break
        rows.append(row)
    return rows


def shown(path: Path) -> str:
    """A source path as messages show it: from the repository root where it lies there."""
    return str(path.relative_to(SRC.parent)) if path.is_relative_to(SRC.parent) else str(path)


def room_of(module: str) -> str | None:
    """`evalstress.engine.runner` -> `engine`; the package root itself has no room."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def wrong_direction(package: dict[str, Module], rooms: dict[str, int],
                    allowed: set[tuple[str, str]]) -> list[str]:
    """Every import from a lower layer to a higher one, or sideways between rooms of a layer
    that the table does not allow; and a room the table does not place."""
    found = []
    for module in package.values():
        here = room_of(module.name)
        for target in sorted(module.imports):
            there = room_of(target)
            if here is None or there is None or here == there:
                continue
            where = f"{shown(module.path)}:{module.import_lines[target]}"
            if here not in rooms or there not in rooms:
                found.append(f"{where}: room {here if here not in rooms else there} is in no "
                             "layer of docs/architecture.md")
            elif rooms[there] < rooms[here]:
                found.append(f"{where}: {module.name} ({here}) imports {target}, a layer above")
            elif rooms[there] == rooms[here] and (here, there) not in allowed:
                found.append(f"{where}: {module.name} imports {target} sideways ({here} -> "
                             f"{there} is not in the table of docs/architecture.md)")
            elif here == "analyses" and there == "engine" and target not in ENGINE_FOR_ANALYSES:
                found.append(f"{where}: an analysis imports the engine's machinery ({target})")
    return found


def read_package() -> dict[str, Module]:
    modules = source_modules()
    return {name: read_module(name, path, modules) for name, path in modules.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit to mind)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


# --- the checks of the helpers themselves ------------------------------------------------------

def test_tarjan_finds_a_three_cycle_and_leaves_a_chain_apart() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set()}
    components = sorted(strongly_connected(graph), key=len, reverse=True)
    assert components[0] == ["a", "b", "c"]
    assert sorted(map(tuple, components[1:])) == [("d",), ("e",)]


def test_imports_resolve_to_modules_and_type_checking_imports_are_left_out(tmp_path: Path) -> None:
    path = tmp_path / "runner.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "from evalstress.core import data\n"
        "from ..core.data import _lookup\n"
        "if TYPE_CHECKING:\n"
        "    from evalstress.engine import planning\n"
        "def f():\n"
        "    import evalstress.engine as e\n"
        "    return data._text, e\n")
    modules = {name: Path(name) for name in (
        "evalstress", "evalstress.core", "evalstress.core.data", "evalstress.engine",
        "evalstress.engine.planning")}
    modules["evalstress.engine.runner"] = path
    module = read_module("evalstress.engine.runner", path, modules)
    assert module.imports == {"evalstress.core.data", "evalstress.engine"}
    assert sorted(module.private_uses) == [(3, "evalstress.core.data", "_lookup"),
                                           (8, "evalstress.core.data", "_text")]


def test_an_upward_or_sideways_import_is_found(tmp_path: Path) -> None:
    """A planted upward import (an analysis importing the job) and an unlisted sideways one
    (criteria importing perturb) are reported; the allowed ones are not."""
    sources = {
        "evalstress.analyses.blind": "from evalstress.job import run_job\n"
                                     "from evalstress.engine.result import RunResult\n",
        "evalstress.criteria.texts": "def f():\n    from evalstress.perturb.base import x\n",
        "evalstress.evaluators.judge": "from evalstress.llm.client import LLMClient\n",
        "evalstress.engine.runner": "from evalstress.core.data import Example\n",
    }
    names = [*sources, "evalstress.job", "evalstress.engine.result", "evalstress.perturb.base",
             "evalstress.llm.client", "evalstress.core.data"]
    modules = {name: tmp_path / f"{name}.py" for name in names}
    for name, code in sources.items():
        modules[name].write_text(code)
    package = {name: read_module(name, modules[name], modules) for name in sources}
    rooms, allowed = layer_rules(ARCHITECTURE.read_text(encoding="utf-8"))
    found = wrong_direction(package, rooms, allowed)
    assert len(found) == 2, found
    assert "evalstress.analyses.blind (analyses) imports evalstress.job, a layer above" in found[0]
    assert "criteria -> perturb is not in the table" in found[1]


def test_a_member_of_another_modules_object_is_found(tmp_path: Path) -> None:
    path = tmp_path / "geval.py"
    path.write_text("class G:\n    def __init__(self, judge):\n        self._mine = judge\n"
                    "    def f(self):\n        return self.judge._criterion, self._mine\n")
    module = read_module("evalstress.evaluators.geval", path, {})
    assert module.own_members == {"_mine"}
    assert module.member_uses == [(5, "_criterion")]


# --- the package's shape ----------------------------------------------------------------------

def test_every_import_goes_down_the_layers() -> None:
    rooms, allowed = layer_rules(ARCHITECTURE.read_text(encoding="utf-8"))
    found = wrong_direction(read_package(), rooms, allowed)
    assert not found, "imports against the layers of docs/architecture.md:\n" + "\n".join(found)


def test_no_private_member_crosses_modules() -> None:
    """`other._x` where `_x` belongs to a class of another evalstress module (what a module
    needs of another's objects is public, with a docstring saying why)."""
    package = read_package()
    owners: dict[str, set[str]] = {}
    for module in package.values():
        for member in module.own_members:
            owners.setdefault(member, set()).add(module.name)
    uses = [f"{module.path.relative_to(SRC.parent)}:{line} uses {attr} of "
            f"{', '.join(sorted(owners[attr]))}"
            for module in package.values() for line, attr in module.member_uses
            if attr in owners and attr not in module.own_members
            and (module.name, attr) not in LIBRARY_INTERNALS]
    assert not uses, "underscore members taken from another module's objects:\n" + "\n".join(uses)



def test_no_import_cycle_of_more_than_two_modules() -> None:
    package = read_package()
    graph = {name: module.imports & package.keys() for name, module in package.items()}
    largest = max(strongly_connected(graph), key=len)
    assert len(largest) <= MAX_CYCLE, (
        f"{len(largest)} modules import each other in a cycle (imports inside functions "
        f"count): {', '.join(largest)}")


def test_few_modules_loose_at_the_package_root() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= MAX_ROOT_MODULES, (
        f"{len(loose)} modules at src/evalstress/ (at most {MAX_ROOT_MODULES}): {', '.join(loose)}")


def test_no_source_file_over_700_lines() -> None:
    long = {str(path.relative_to(SRC.parent)): n for path in sorted(PACKAGE.rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, "over 700 lines: " + ", ".join(f"{p} ({n})" for p, n in long.items())


def test_no_private_name_crosses_modules() -> None:
    uses = [f"{module.path.relative_to(SRC.parent)}:{line} uses {owner}.{name}"
            for module in read_package().values()
            for line, owner, name in module.private_uses]
    assert not uses, "underscore names taken from another module:\n" + "\n".join(uses)


def test_the_shared_records_are_defined_once() -> None:
    """`ORIGINAL` and `CORPUS` (the perturbation names of originals and corpus-level scores)
    live in core.records; a module that defines its own copy drifts from it."""
    again = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "core" / "records.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, ast.AnnAssign) else [])
            again += [f"{shown(path)}:{node.lineno} defines {t.id}" for t in targets
                      if isinstance(t, ast.Name) and t.id in ("ORIGINAL", "CORPUS")]
    assert not again, "\n".join(again)


# --- docs/architecture.md's module table and measured durations ----------------------------------

def module_table(text: str) -> dict[str, set[str]]:
    """From docs/architecture.md's "Every module" table: package -> its modules."""
    return {row[0].strip("`"): set(re.findall(r"`([^`]+)`", row[2]))
            for row in markdown_table(text, ["package", "what it holds", "modules"])}


def source_tree(package: Path) -> dict[str, set[str]]:
    """Package (`evalstress` for the root, else its path under it) -> its modules' names."""
    tree: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        if path.name == "__init__.py" or "__pycache__" in path.parts:
            continue
        where = path.parent.relative_to(package).as_posix()
        tree.setdefault("evalstress" if where == "." else where, set()).add(path.stem)
    return tree


def table_drift(table: dict[str, set[str]], tree: dict[str, set[str]]) -> list[str]:
    """What the table lacks and what it names that the tree does not hold."""
    found = [f"package {p} is not in the table" for p in sorted(tree.keys() - table.keys())]
    found += [f"package {p} is in the table, not in src/evalstress" for p in
              sorted(table.keys() - tree.keys())]
    for package in sorted(tree.keys() & table.keys()):
        found += [f"{package}/{m}.py is not in the table" for m in sorted(tree[package] - table[package])]
        found += [f"{package}: the table names {m}, which is not there" for m in
                  sorted(table[package] - tree[package])]
    return found


def durations(source: str) -> list[tuple[int, str]]:
    """(line, the match) for each duration a comment or docstring of `source` quotes."""
    texts = [(tok.start[0], tok.string) for tok in
             tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            texts.append((node.lineno, node.value.value))
    return [(line, m.group(0)) for line, text in texts for m in DURATION.finditer(text)]


def test_a_module_missing_from_the_table_is_found(tmp_path: Path) -> None:
    for name in ("engine/runner.py", "engine/__init__.py", "api.py", "studies/attack/greedy.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    table = {"evalstress": {"api"}, "engine": {"runner", "gone"}}
    assert table_drift(table, source_tree(tmp_path)) == [
        "package studies/attack is not in the table",
        "engine: the table names gone, which is not there"]


def test_architecture_names_every_module_of_every_package() -> None:
    table = module_table(ARCHITECTURE.read_text(encoding="utf-8"))
    found = table_drift(table, source_tree(PACKAGE))
    assert not found, "docs/architecture.md's module table and src/evalstress differ:\n" + \
        "\n".join(found)


def test_a_duration_in_a_comment_or_docstring_is_found() -> None:
    source = ('"""Loads in ~160 ms against 2.4 s before."""\n'
              'X = 1  # took 5 minutes\n'
              'Y = "0.5 s"  # a string the code uses, and 429s or 2 cores are no durations\n')
    assert durations(source) == [(2, "5 minutes"), (1, "~160 ms"), (1, "2.4 s")]


def test_no_comment_quotes_a_measured_duration() -> None:
    found = [f"{path.relative_to(PACKAGE).as_posix()}:{line}: {match}"
             for path in sorted(PACKAGE.rglob("*.py"))
             if path.relative_to(PACKAGE).as_posix() not in DURATIONS_ELSEWHERE
             for line, match in durations(path.read_text(encoding="utf-8"))]
    assert not found, "measured durations in comments (move them to bench/README.md):\n" + \
        "\n".join(found)
