"""The small course this corpus grades: one assignment, `given_data`, with two data files.

Written from docs/config.md and README.md only (`data:` lists files next to the solution; `grader
assign` puts them in `assignments/given_data/data/`; every sandboxed run finds them in `data/`).

- data/table.txt: four numbers (a few bytes): a given file the run gets as its own writable copy.
- data/big.bin: 5 MiB, past a quarter of disk_mb (16 MB here): docs/security.md says it stays a
  read-only bind.

cell_timeout is 3 s (docs/config.md: `limits.cell_timeout`), so the time cases stay fast.
"""

import hashlib
import json
import subprocess
from pathlib import Path

TABLE = b"1.5\n2.5\n3.0\n4.0\n"
BIG = bytes(range(256)) * (5 * 4096)  # 5 MiB
BIG_SUM = sum(range(256)) * 5 * 4096
CELL_TIMEOUT = 3
NOTEBOOK_TIMEOUT = 90
DISK_MB = 16
POINTS = {"total": 1, "y": 1, "big_sum": 1, "f": 1, "output": 2}
FULL = sum(POINTS.values())

SHA = {
    "data/table.txt": hashlib.sha256(TABLE).hexdigest(),
    "data/big.bin": hashlib.sha256(BIG).hexdigest(),
}

CONFIG = f"""course:
  name: Red team course for given files and time limits
  defaults:
    variants: 2
    limits:
      cell_timeout: {CELL_TIMEOUT}
      notebook_timeout: {NOTEBOOK_TIMEOUT}
      cpu_time: 120
      memory_mb: 2048
      processes: 64
      disk_mb: {DISK_MB}
scorecard:
  formats: [yaml]
assignments:
  given_data:
    title: A table read from a given data file
    data: [data/table.txt, data/big.bin]
    given: [x]
    questions:
      - id: total
        title: Sum of the table in data/table.txt
        points: 1
        checks:
          - value: total
      - id: y
        title: x scaled by the total
        points: 1
        checks:
          - value: y
      - id: big_sum
        title: Sum of the bytes of data/big.bin
        points: 1
        checks:
          - value: big_sum
      - id: f
        title: A function that triples
        points: 1
        checks:
          - expr: "f(np.array([1.0, 2.0]))"
      - id: output
        title: The sum of x plus one
        points: 2
        checks:
          - value: output
"""

# A second assignment whose notebook writes the given file it read ("a course's cell writes the
# file its test reads back", docs/security.md): the table doubled, saved over data/table.txt, read
# back; and a file of its own, data/yy_sol.txt. Every run, the solution's included (its session is
# kept from one submission to the next), must start from the shipped table; yy_sol.txt is no given
# data, so no student's run may find it.
REWRITE_CONFIG = """  given_rewrite:
    title: The same table, written back doubled by the notebook
    data: [data/table.txt, data/big.bin]
    given: [x]
    questions:
      - id: total
        title: Sum of the doubled table, read back from data/table.txt
        points: 1
        checks:
          - value: total
      - id: y
        title: x scaled by the total
        points: 1
        checks:
          - value: y
      - id: big_sum
        title: Sum of the bytes of data/big.bin
        points: 1
        checks:
          - value: big_sum
      - id: f
        title: A function that triples
        points: 1
        checks:
          - expr: "f(np.array([1.0, 2.0]))"
      - id: output
        title: The sum of x plus one
        points: 2
        checks:
          - value: output
"""
CONFIG += REWRITE_CONFIG

REWRITE_SOLUTION_CELLS = None  # set below from SOLUTION_CELLS

SOLUTION_CELLS = [
    "import numpy as np\n\nx = np.array([1.0, 2.0, 3.0])",
    "table = np.loadtxt('data/table.txt')\ntotal = float(table.sum())  # SOLUTION",
    "y = x * total  # SOLUTION",
    "big = np.fromfile('data/big.bin', dtype=np.uint8)\nbig_sum = int(big.astype(np.int64).sum())  # SOLUTION",
    "def f(v):\n    # BEGIN SOLUTION\n    return v * 3.0\n    # END SOLUTION",
    "output = x.sum() + 1.0  # SOLUTION",
]

REWRITE_SOLUTION_CELLS = list(SOLUTION_CELLS)
REWRITE_SOLUTION_CELLS[1] = (
    "table = np.loadtxt('data/table.txt')\n"
    "np.savetxt('data/table.txt', table * 2)\n"
    "with open('data/yy_sol.txt', 'w') as fh:\n"
    "    fh.write('written by the notebook')\n"
    "total = float(np.loadtxt('data/table.txt').sum())  # SOLUTION"
)

# the student's answers, the solution's code without the markers
ANSWER_CELLS = [
    c.replace("  # SOLUTION", "").replace("    # BEGIN SOLUTION\n", "").replace("\n    # END SOLUTION", "")
    for c in SOLUTION_CELLS
]
REWRITE_ANSWER_CELLS = list(ANSWER_CELLS)
REWRITE_ANSWER_CELLS[1] = (
    REWRITE_SOLUTION_CELLS[1]
    .replace("  # SOLUTION", "")
    .replace("with open('data/yy_sol.txt', 'w') as fh:\n    fh.write('written by the notebook')\n", "")
)


def notebook(cells):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    for c in nb.cells:
        c.pop("id", None)
    nb.nbformat_minor = 4
    return nb


def write_course(root: Path, grader: str, wrap=lambda cmd: cmd) -> None:
    """The course folder: config.yaml, the solution and its data; then `grader assign`."""
    import nbformat

    (root / "config.yaml").write_text(CONFIG)
    for name, cells in (("given_data", SOLUTION_CELLS), ("given_rewrite", REWRITE_SOLUTION_CELLS)):
        sol = root / "solutions" / name
        (sol / "data").mkdir(parents=True)
        (sol / "data" / "table.txt").write_bytes(TABLE)
        (sol / "data" / "big.bin").write_bytes(BIG)
        nbformat.write(notebook(cells), sol / f"{name}.ipynb")
    if wrap([]) != []:  # another user grades: the course is theirs
        subprocess.run(["chown", "-R", wrap([])[2], str(root)], check=True)
    cmd = [grader, "assign", "given_data", "given_rewrite"]
    p = subprocess.run(wrap(cmd), cwd=root, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"grader assign failed: {p.stdout}{p.stderr}")


def tree_digest(root: Path) -> dict:
    """sha256, mode and kind of every file under solutions/ and assignments/ and config.yaml."""
    out = {}
    for top in ("solutions", "assignments", "config.yaml"):
        p = root / top
        paths = [p] if p.is_file() else sorted(p.rglob("*"))
        for q in paths:
            rel = str(q.relative_to(root))
            st = q.lstat()
            if q.is_symlink():
                out[rel] = ["link", str(q.readlink())]
            elif q.is_dir():
                out[rel] = ["dir", oct(st.st_mode)]
            else:
                out[rel] = ["file", oct(st.st_mode), st.st_nlink, hashlib.sha256(q.read_bytes()).hexdigest()]
    return json.loads(json.dumps(out))
