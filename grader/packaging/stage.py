"""The library versions an autograder package installs, pinned on the instructor's machine.

Gradescope's zip (grader.packaging.gradescope) and Classroom 50's autograder folder
(grader.packaging.classroom50) carry, beside the grading materials and the grader's source
(``gradescope.stage_grading``, ``gradescope.stage_grader``),

- ``constraints.txt``: the exact versions of the libraries grading depends on (NumPy, pandas,
  nbconvert, ...) as installed where the package was built, which is where the reference values
  were computed. The install there uses them (``pip install -c``), so two builds of the image grade
  alike, and alike with the instructor's machine. torch is pinned by its own install line.
"""

from __future__ import annotations

from pathlib import Path

# The distributions whose versions can change a grade or a run: the project's dependencies and the
# libraries a notebook computes with. torch is left out: its install line pins it (CPU build).
PINNED = ("numpy", "pandas", "matplotlib", "nbformat", "nbclient", "nbconvert", "ipykernel", "ipython", "pyyaml",
          "pytest", "pytest-xdist", "tqdm", "scipy")


def constraints() -> str:
    """``name==version`` for each of PINNED installed here, one a line."""
    from importlib import metadata

    lines = []
    for name in PINNED:
        try:
            lines.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return "# The versions the reference values were computed with (grader.packaging.stage).\n" + "\n".join(lines) + "\n"


def stage_constraints(dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(constraints(), encoding="utf-8")
    return dest
