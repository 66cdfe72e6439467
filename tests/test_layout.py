"""The package keeps its shape: layers import downward (no import cycle of more than two
modules), few modules sit loose at the package root, no source file grows past 700 lines, and
no module reaches into another's underscore-prefixed names.

The import graph is read from the source with `ast`, so it sees every import, those inside
functions included; only imports under `if TYPE_CHECKING:` are left out (they never run)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "evalstress"

MAX_CYCLE = 2
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
    # (line, module the name belongs to, name) for every underscore name taken from another module
    private_uses: list[tuple[int, str, str]] = field(default_factory=list)


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
                module.imports.add(target)
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
                    module.imports.add(full)
                    bound[alias.asname or alias.name] = full
                    continue
                owner = nearest_module(base, modules)
                assert owner is not None
                module.imports.add(owner)
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
    module.imports.discard(name)
    return module


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


# --- the package's shape ----------------------------------------------------------------------

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
