"""The library versions an autograder package installs, pinned on the instructor's machine.

Gradescope's zip (grader.packaging.gradescope) and Classroom 50's autograder folder
(grader.packaging.classroom50) carry, beside the grading materials and the grader's source
(``gradescope.stage_grading``, ``gradescope.stage_grader``),

- ``constraints.txt``: the exact versions of the libraries grading depends on (NumPy, pandas,
  nbconvert, ...) as installed where the package was built, which is where the reference values
  were computed. The install there uses them (``pip install -c``), so two builds of the image grade
  alike, and alike with the instructor's machine.
- ``requirements.txt`` (Gradescope): what grading the one assignment installs besides the grader's
  own light dependencies: the distributions its notebooks import (``grader.course.imports``), pinned
  likewise, and the sandbox's seccomp binding. A NumPy assignment never installs torch, pandas or
  the instructor's tooling (nbconvert, matplotlib, pytest): grading needs none of them.
"""

from __future__ import annotations

from pathlib import Path

# The distributions whose versions can change a grade or a run: the project's dependencies and the
# libraries a notebook computes with. torch is left out: its install line pins it (CPU build).
PINNED = (
    "numpy",
    "pandas",
    "matplotlib",
    "nbformat",
    "nbclient",
    "nbconvert",
    "ipykernel",
    "ipython",
    "pyyaml",
    "pytest",
    "pytest-xdist",
    "tqdm",
    "scipy",
)


def constraints() -> str:
    """``name==version`` for each of PINNED installed here, one a line."""
    from importlib import metadata

    lines = []
    for name in PINNED:
        try:
            lines.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return (
        "# The versions the reference values were computed with (grader.packaging.stage).\n" + "\n".join(lines) + "\n"
    )


def stage_constraints(dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(constraints(), encoding="utf-8")
    return dest


# What grading itself needs beyond the grader's own dependencies (the instructor extra's, without
# the rest of that extra), with the platforms it is for: the student process's seccomp filter, and
# the grader's BLAS on one thread while it replays a test.
GRADING_EXTRAS = {"pyseccomp": "; sys_platform == 'linux'", "threadpoolctl": ""}
# The grader's own distribution: installed from grader-src, never from an index.
OWN = "notebook-grader"


def requirements(modules: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The distributions that provide ``modules`` (what an assignment's notebooks import) and
    GRADING_EXTRAS, as ``name==version`` lines pinned at the versions installed here (a local
    version such as torch's ``+cpu`` left out: the install line picks the build); and the modules no
    distribution installed here provides (a notebook's optional imports, such as google.colab)."""
    from importlib import metadata

    providers = metadata.packages_distributions()
    lines: dict[str, str] = {}
    missing: list[str] = []
    for module in sorted(set(modules)):
        top = module.partition(".")[0]
        if top not in providers:
            missing.append(module)
        for name in providers.get(top, []):
            if name == OWN:
                continue
            lines[name.lower()] = f"{name}=={metadata.version(name).split('+')[0]}"
    for name, marker in GRADING_EXTRAS.items():
        try:
            lines[name] = f"{name}=={metadata.version(name)}{marker}"
        except metadata.PackageNotFoundError:
            continue
    return sorted(lines.values(), key=str.lower), missing


def stage_requirements(dest: Path, assignment_name: str, modules: tuple[str, ...]) -> Path:
    """``requirements.txt`` for an autograder package: what grading ``assignment_name`` installs."""
    lines, missing = requirements(modules)
    head = [
        f"# What grading {assignment_name} installs besides the grader's own light dependencies "
        "(grader.packaging.stage):",
        "# the libraries its notebooks import, at the versions the reference values were computed with.",
    ]
    if missing:
        head.append(
            f"# Imported by a notebook but not installed where this package was built, so not installed "
            f"here either: {', '.join(missing)}."
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("\n".join(head + lines) + "\n", encoding="utf-8")
    return dest
