"""The layout docs/architecture.md describes, held against the code: imports point down, no cycles.

Every import in the package is read (at module level, inside functions and under ``if
TYPE_CHECKING:``), resolved to a module of the package, and placed in its layer. A module may
import from its own layer or a lower one, and no imports close a circle.
"""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "grader"

# Lowest first. A module belongs to the longest prefix that names it.
LAYERS: list[tuple[str, ...]] = [
    (
        "grader",
        "grader.errors",
        "grader.vocab",
        "grader.names",
        "grader.seeding",
        "grader.files",
        "grader.capture",
        "grader.nose_tools",
    ),
    ("grader.notebook", "grader.testing"),
    ("grader.course",),
    ("grader.run",),
    ("grader.judge",),
    ("grader.outputs",),
    ("grader.authoring", "grader.batch", "grader.packaging", "grader.review", "grader.similarity"),
    ("grader.cli", "grader.cli_parser", "grader.console", "grader.plugin", "grader.selfcheck"),
]
# ``grader.check()``, the notebook-side entry point, lives in the package's __init__ and imports the
# self-check when it is called: the one import allowed to point up.
ALLOWED_UP = {("grader", "grader.selfcheck")}
LONG = 420  # lines ("about 400"); a longer module says why at its top ("Why one module")
# A module's size in lines that hold code or text: blank lines and lines holding only closing
# brackets, which ``ruff format`` places, do not count, so a size does not change with the formatter.
_FILLER = re.compile(r"^\s*[\])}]*,?:?\s*$")


def size(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if not _FILLER.match(line))


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


def imports(module: str, path: Path) -> list[tuple[str, int, bool]]:
    """(imported module of the package, line, at module level) for every import in the file,
    those inside functions and under ``if TYPE_CHECKING:`` included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    out = []
    for node in ast.walk(tree):
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


def import_graph() -> dict[str, set[str]]:
    """Every module's imports of the package: at module level, inside functions and under ``if
    TYPE_CHECKING:`` alike (a circle is a circle wherever its import sits). A package's imports of its
    own submodules, which re-export them, are left out."""
    graph = {m: {t for t, _, _ in imports(m, p)} for m, p in MODULES.items()}
    return {m: {t for t in ts if (m, t) not in ALLOWED_UP and not t.startswith(m + ".")} for m, ts in graph.items()}


def cycles(graph: dict[str, set[str]]) -> list[str]:
    """One line per import cycle found (``a -> b -> a``)."""
    seen: dict[str, int] = {}  # 1: on the current path, 2: done
    found = []

    def visit(m: str, path: list[str]) -> None:
        seen[m] = 1
        for t in sorted(graph.get(m, ())):
            if seen.get(t) == 1:
                found.append(" -> ".join(path[path.index(t) :] + [m, t]) if t in path else f"{m} -> {t}")
            elif t not in seen:
                visit(t, path + [m])
        seen[m] = 2

    for m in sorted(graph):
        if m not in seen:
            visit(m, [])
    return found


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(found)


def test_imports_for_annotations_and_inside_functions_count(tmp_path: Path):
    """A cycle closed by an ``if TYPE_CHECKING:`` import or by an import inside a function is still a
    cycle: the session and its executor once imported each other that way."""
    source = tmp_path / "session.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from grader.run.forking.executor import ForkingExecutor\n"
        "def run():\n"
        "    from grader.run.execute import run_with_retries\n",
        encoding="utf-8",
    )
    found = {target for target, _, _ in imports("grader.run.forking.session", source)}
    assert found == {"grader.run.forking.executor", "grader.run.execute"}
    graph = import_graph()
    graph["grader.run.forking.session"] = graph["grader.run.forking.session"] | found
    assert "grader.run.forking.executor -> grader.run.forking.session -> grader.run.forking.executor" in cycles(graph)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_long_modules_say_why(module: str):
    path = MODULES[module]
    lines = size(path)
    if lines <= LONG:
        return
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert "Why one module" in doc, (
        f"{path.relative_to(PACKAGE.parent)} has {lines} lines and does not say why at its top"
    )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_past_500_lines(module: str):
    lines = size(MODULES[module])
    assert lines <= 500, f"{MODULES[module].relative_to(PACKAGE.parent)} has {lines} lines: split it by what it does"


def exception_classes(tree: ast.Module, known: set[str]) -> list[ast.ClassDef]:
    """The classes of a module that derive from an exception: a builtin one, or one of ``known``."""

    def is_exception(base: ast.expr) -> bool:
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
        builtin = getattr(builtins, name, None)
        return name in known or (isinstance(builtin, type) and issubclass(builtin, BaseException))

    found: list[ast.ClassDef] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(is_exception(b) for b in node.bases):
            found.append(node)
            known.add(node.name)
    return found


def test_every_exception_class_is_in_the_tree_of_errors_py():
    """errors.py holds every exception class, each with a docstring and drawn in the module's tree."""
    tree = ast.parse(MODULES["grader.errors"].read_text(encoding="utf-8"))
    ours = exception_classes(tree, set())
    drawn = {
        line.strip(" │├└─").split()[0]
        for line in (ast.get_docstring(tree) or "").splitlines()
        if line.startswith("    ") and line.strip()
    }
    for cls in ours:
        assert ast.get_docstring(cls), f"grader.errors.{cls.name} has no docstring"
        assert cls.name in drawn, f"grader.errors.{cls.name} is not drawn in the module's tree"
    known = {cls.name for cls in ours}
    outside = {
        f"{module}.{cls.name}"
        for module, path in MODULES.items()
        if module != "grader.errors"
        for cls in exception_classes(ast.parse(path.read_text(encoding="utf-8")), set(known))
    }
    assert not outside, f"exception classes outside grader/errors.py: {sorted(outside)}"


def test_the_student_side_imports_nothing_of_the_graders():
    """The worker runs in the sandboxed student process: it may import values, errors, frames and
    the vocabulary (names shared across the boundary, statuses, the seeding rule) only."""
    allowed = {
        "grader",
        "grader.capture",
        "grader.capture.encoding",
        "grader.capture.decoding",
        "grader.capture.plain",
        "grader.capture.values",
        "grader.capture.classes",
        "grader.errors",
        "grader.run",
        "grader.run.frames",
        "grader.run.sandbox",
        "grader.run.worker",
        "grader.run.fast_cells",
        "grader.run.student_values",
        "grader.run.calls",
        "grader.run.test_recorder",
        "grader.run.student_state",
        "grader.run.course_modules",
        "grader.run.figures",
        "grader.run.injections",
        "grader.names",
        "grader.nose_tools",
        "grader.vocab",
        "grader.seeding",
    }
    for module in (
        "grader.run.worker",
        "grader.run.student_values",
        "grader.run.frames",
        "grader.capture",
        "grader.capture.encoding",
        "grader.capture.decoding",
        "grader.capture.plain",
        "grader.capture.values",
        "grader.capture.classes",
        "grader.run.jupyter_kernel",
        "grader.run.test_recorder",
        "grader.run.student_state",
        "grader.run.course_modules",
        "grader.run.injections",
        "grader.run.figures",
    ):
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


# The tools a course can be imported from. Their semantics live in their packages under
# grader/authoring/ and are lowered, when a course is imported, to generic settings of config.yaml
# (``stderr_fails``, ``seed_each_cell``, ``inert_lines``, ...): no other module names one, in its
# code, its comments or its docstrings, so that nothing else can decide by which tool a course came from.
PEERS = re.compile(r"nbgrader|(?<![a-z])otter", re.IGNORECASE)
ADAPTERS = PACKAGE / "authoring"


def test_no_module_outside_the_adapters_names_a_peer():
    named = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(ADAPTERS):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PEERS.search(line):
                named.append(f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}")
    assert not named, "modules outside grader/authoring/ that name nbgrader or otter:\n" + "\n".join(named)


def test_each_peer_is_one_package_of_the_adapters():
    from grader.authoring.peers import PEERS as REGISTERED

    for name in REGISTERED:
        assert (ADAPTERS / name / "__init__.py").is_file(), (
            f"{name}'s adapter is not the package grader/authoring/{name}/"
        )
    loose = sorted(p.name for p in ADAPTERS.glob("*.py") if PEERS.search(p.stem))
    assert not loose, f"modules of a peer outside its package: {loose}"


NOSE_HELPERS = {"assert_equal", "assert_not_equal", "assert_almost_equal", "assert_raises", "ok_", "eq_"}


def _defines_a_nose_helper(tree: ast.Module) -> bool:
    """A function of a nose helper's name, or one bound to it as a keyword (``module.__dict__.update(ok_=...)``)."""
    return any(
        (isinstance(n, ast.FunctionDef) and n.name.lstrip("_") in NOSE_HELPERS)
        or (isinstance(n, ast.keyword) and n.arg in NOSE_HELPERS)
        for n in ast.walk(tree)
    )


def _holds_the_formula_starts(tree: ast.Module) -> bool:
    """A tuple of the characters a spreadsheet reads as the start of a formula."""
    return any(
        isinstance(n, ast.Tuple) and {"=", "+", "-", "@"} <= {e.value for e in n.elts if isinstance(e, ast.Constant)}
        for n in ast.walk(tree)
    )


@pytest.mark.parametrize(
    ("what", "found", "home"),
    [
        ("nose's assert helpers", _defines_a_nose_helper, "grader.nose_tools"),
        ("the spreadsheet formula guard", _holds_the_formula_starts, "grader.outputs.spreadsheet"),
    ],
)
def test_shared_helpers_exist_once(what, found, home):
    where = [m for m, p in MODULES.items() if found(ast.parse(p.read_text(encoding="utf-8")))]
    assert where == [home], f"{what} are defined in {where}, not only in {home}"
