"""The layout docs/architecture.md describes, held against the code: imports point down, no cycles.

Every import in the package is read (module level and inside functions), resolved to a module of
the package, and placed in its layer. A module may import from its own layer or a lower one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "grader"

# Lowest first. A module belongs to the longest prefix that names it.
LAYERS: list[tuple[str, ...]] = [
    ("grader", "grader.errors", "grader.vocab", "grader.names", "grader.seeding", "grader.files", "grader.capture"),
    ("grader.notebook", "grader.testing"),
    ("grader.course",),
    ("grader.run",),
    ("grader.judge",),
    ("grader.outputs",),
    ("grader.authoring", "grader.batch", "grader.packaging"),
    ("grader.cli", "grader.plugin", "grader.selfcheck"),
]
# ``grader.check()``, the notebook-side entry point, lives in the package's __init__ and imports the
# self-check when it is called: the one import allowed to point up.
ALLOWED_UP = {("grader", "grader.selfcheck")}
LONG = 420  # lines ("about 400"); a longer module says why at its top ("Why one module")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    best, rank = "", -1
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, rank = prefix, i
    assert rank >= 0, f"{module} is in no layer of docs/architecture.md"
    return rank


def imports(module: str, path: Path, *, typing: bool = True) -> list[tuple[str, int, bool]]:
    """(imported module of the package, line, at module level) for every import in the file;
    ``typing=False`` leaves out the imports under ``if TYPE_CHECKING:``, which never run."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    type_only = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
                 for inner in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if not typing and id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}".strip(".")
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                out.append((name, node.lineno, id(node) in top))
    return out


def test_every_module_is_in_a_layer():
    for module in MODULES:
        layer(module)


def test_imports_only_point_down():
    upward = []
    for module, path in MODULES.items():
        for target, line, _ in imports(module, path):
            if layer(target) > layer(module) and (module, target) not in ALLOWED_UP:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} imports {target}")
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def test_no_import_cycles():
    """Imports that run form no cycle (an ``if TYPE_CHECKING:`` import for an annotation may point back)."""
    graph = {m: {t for t, _, _ in imports(m, p, typing=False)} for m, p in MODULES.items()}
    graph = {m: {t for t in ts if (m, t) not in ALLOWED_UP} for m, ts in graph.items()}
    seen: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(m: str, path: list[str]) -> None:
        seen[m] = 1
        for t in sorted(graph.get(m, ())):
            if seen.get(t) == 1:
                cycles.append(" -> ".join(path[path.index(t):] + [m, t]) if t in path else f"{m} -> {t}")
            elif t not in seen:
                visit(t, path + [m])
        seen[m] = 2

    for m in sorted(graph):
        if m not in seen:
            visit(m, [])
    # a package importing its own submodules (to re-export them) is not a cycle of meaning
    cycles = [c for c in cycles if not _package_and_child(c)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def _package_and_child(cycle: str) -> bool:
    parts = cycle.split(" -> ")
    return all(b.startswith(a + ".") or a.startswith(b + ".") for a, b in zip(parts, parts[1:], strict=False))  # neighbours


@pytest.mark.parametrize("module", sorted(MODULES))
def test_long_modules_say_why(module: str):
    path = MODULES[module]
    lines = path.read_text(encoding="utf-8").count("\n")
    if lines <= LONG:
        return
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert "Why one module" in doc, f"{path.relative_to(PACKAGE.parent)} has {lines} lines and does not say why at its top"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_past_500_lines(module: str):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= 500, f"{MODULES[module].relative_to(PACKAGE.parent)} has {lines} lines: split it by what it does"


def test_the_student_side_imports_nothing_of_the_graders():
    """The worker runs in the sandboxed student process: it may import values, errors, frames and
    the vocabulary (names shared across the boundary, statuses, the seeding rule) only."""
    allowed = {"grader", "grader.capture", "grader.errors", "grader.run", "grader.run.frames", "grader.run.sandbox",
               "grader.run.worker", "grader.run.fast_cells", "grader.run.student_values", "grader.names",
               "grader.vocab", "grader.seeding"}
    for module in ("grader.run.worker", "grader.run.student_values", "grader.run.frames", "grader.capture",
                   "grader.run.jupyter_kernel"):
        reached = {t for t, _, top in imports(module, MODULES[module]) if top}
        assert reached <= allowed | {module}, f"{module} imports {sorted(reached - allowed)}"


def test_the_wire_form_of_limits_names_every_limit():
    """A limit added to ``Limits`` must reach the student process: ``LimitsWire`` and ``limits_wire`` carry it."""
    import dataclasses

    from grader.course.model import Limits
    from grader.run.job import LimitsWire, limits_wire

    names = [f.name for f in dataclasses.fields(Limits)]
    assert list(LimitsWire.__annotations__) == names
    assert limits_wire(Limits()) == dataclasses.asdict(Limits())
