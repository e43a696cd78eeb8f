"""The student's self-check, and the promise behind it: nothing handed to students reveals a hidden
reference value."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import math
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import numpy as np
import pytest
from conftest import NUMPY_CORRECT, ROOT, question

from grader import selfcheck
from grader.authoring.public import public_checks
from grader.capture import Value
from grader.testing import fill, write

EXAMPLES = ROOT / "examples/attention_numpy"
SKELETON = ROOT / "assignments/attention_numpy/attention_numpy.ipynb"
PUBLIC = ROOT / "assignments/attention_numpy/public_checks.json"
K_TRANSPOSED = {**NUMPY_CORRECT, "K": "(X @ W_k.T).T", "scores": "Q @ K"}


@pytest.fixture
def student_dir(tmp_path):
    """What a student has: assignments/ only (no solutions/, no config.yaml)."""
    shutil.copytree(ROOT / "assignments", tmp_path / "assignments")
    (tmp_path / "work").mkdir()
    return tmp_path


def check_cli(*args, cwd):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", "check", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


def test_check_in_a_terminal_with_only_the_assignment_folder(student_dir):
    skeleton = student_dir / "assignments/attention_numpy/attention_numpy.ipynb"
    proc = check_cli(str(skeleton), cwd=student_dir)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == 'Public checks for attention_numpy: Self-attention by hand in NumPy ("I am Batman")'
    assert lines[3:6] == [
        "⬜ qkv      Queries, keys and values: not answered",
        "           - `Q` is not answered yet: fill in the blank `?` at cell 8, line 1: `Q = ?`.",
        "           - `K` is not answered yet: fill in the blank `?` at cell 8, line 2: `K = ?`.",
    ]
    assert lines[-1] == "0 of 6 questions pass the public checks."

    answered = write(fill(SKELETON, NUMPY_CORRECT), student_dir / "work/attention_numpy.ipynb")
    proc = check_cli(str(answered), cwd=student_dir / "work")
    assert (proc.returncode, proc.stdout.splitlines()[-1]) == (0, "6 of 6 questions pass the public checks.")
    proc = check_cli(str(answered), "scaled", cwd=student_dir / "work")
    assert proc.stdout.splitlines()[3:] == [
        "✅ scaled  Scaled scores: passes the public checks",
        "",
        "1 of 1 question passes the public checks.",
    ]


def test_check_usage_errors(student_dir):
    proc = check_cli(str(student_dir / "work/nope.ipynb"), "--assignment", "attention_numpy", cwd=student_dir)
    assert (proc.returncode, proc.stderr) == (2, f"grader: {student_dir / 'work/nope.ipynb'} does not exist.\n")
    proc = check_cli(str(SKELETON), "q9", cwd=student_dir)
    assert proc.returncode == 2 and proc.stderr.startswith(
        "grader: attention_numpy has no question 'q9'; its questions are: qkv, scores,"
    )
    lonely = student_dir / "elsewhere"
    lonely.mkdir()
    (lonely / "mine.ipynb").write_text("{}")
    proc = check_cli(str(lonely / "mine.ipynb"), cwd=lonely)
    assert (proc.returncode, proc.stderr) == (
        2,
        "grader: No public_checks.json found next to the notebook, here, or "
        "in assignments/mine/ above; pass --checks PATH (or checks=PATH).\n",
    )
    (student_dir / "work/broken.ipynb").write_text("not json")
    proc = check_cli(str(student_dir / "work/broken.ipynb"), "-a", "attention_numpy", cwd=student_dir / "work")
    assert (proc.returncode, proc.stdout) == (
        1,
        "broken.ipynb cannot be checked: The file is not JSON, so not a notebook (line 1: Expecting value).\n",
    )


def test_messages_are_the_real_graders(tmp_path, grader, numpy_assignment):
    public = selfcheck.load(PUBLIC)
    for path in (
        SKELETON,
        EXAMPLES / "frank_raises.ipynb",
        write(fill(SKELETON, K_TRANSPOSED), tmp_path / "k_transposed.ipynb"),
    ):
        card = grader.grade(numpy_assignment, path)
        for v in selfcheck.check_notebook(path, public):
            real = question(card, v.id)
            if v.status in ("unanswered", "error"):
                # The grader also says, once and under the question whose cell raised, which later
                # questions the same error left without a value: the whole notebook's view, not one question's.
                feedback = [m for m in real.lines if not m.startswith("The same error in cell ")]
                assert v.status == real.status and v.lines == feedback, (path.name, v.id)
            for m in v.lines:
                assert m in real.lines, (path.name, v.id, m)
    k = {v.id: v for v in selfcheck.check_notebook(tmp_path / "k_transposed.ipynb", public)}["qkv"]
    assert k.lines == ["`K` has shape (2, 3); expected shape (3, 2) (the transpose of the expected shape)."]


@pytest.mark.parametrize("name", ["carol_no_sqrt", "dave_wrong_axis", "erin_untransposed", "grace_half_done"])
def test_a_question_that_fails_the_self_check_fails_the_grader(name, grader, numpy_assignment):
    path = EXAMPLES / f"{name}.ipynb"
    card = grader.grade(numpy_assignment, path)
    verdicts = selfcheck.check_notebook(path, selfcheck.load(PUBLIC))
    for v in verdicts:
        if v.status != "passed":
            assert question(card, v.id).status != "passed", (name, v.id)
    if name == "carol_no_sqrt":  # passing the public checks is not passing: the hidden values still decide
        # 9/11: she loses `scaled`; weights and output are right given her scaled scores (carried forward).
        assert {v.status for v in verdicts} == {"passed"} and card.score == 9


def test_public_values_are_compared_with_the_graders_message(tmp_path, grader, numpy_assignment):
    spec = dataclasses.replace(numpy_assignment.question("scores").checks[0], public=True)
    a = dataclasses.replace(
        numpy_assignment,
        questions=tuple(
            dataclasses.replace(q, checks=(spec,)) if q.id == "scores" else q for q in numpy_assignment.questions
        ),
    )
    path = tmp_path / "public_checks.json"
    path.write_text(json.dumps(public_checks(a, grader.references.get(numpy_assignment).captures)))
    sub = write(fill(SKELETON, {**NUMPY_CORRECT, "scores": "K @ Q.T"}), tmp_path / "sub.ipynb")
    v = {v.id: v for v in selfcheck.check_notebook(sub, selfcheck.load(path))}["scores"]
    real = question(grader.grade(numpy_assignment, sub), "scores")
    assert v.status == "failed" and v.lines == real.lines[:1]
    assert v.lines[0].startswith("`scores`: 2 / 9 elements (22.2%) differ beyond tolerance")


def test_check_inside_a_running_notebook(student_dir):
    """`from grader import check; check("qkv")` in a real Jupyter kernel, reading its live variables."""
    from nbclient import NotebookClient

    nb = fill(SKELETON, {**NUMPY_CORRECT, "K": "(X @ W_k.T).T", "scores": "Q @ K"})
    nb.cells.append(nbformat.v4.new_code_cell("np.random.seed(0)\nfrom grader import check\ncheck('qkv')"))
    nb.cells.append(nbformat.v4.new_code_cell("check('softmax')\ncheck('nope')\nprint(np.random.rand())"))
    folder = student_dir / "assignments/attention_numpy"
    client = NotebookClient(
        nb, timeout=60, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(folder)}}
    )
    asyncio.run(client.async_execute())  # an event loop of its own, closed at the end (execute() leaves one open)
    out = [
        "".join(o.get("text", "") for o in c.outputs if o.output_type == "stream" and o.name == "stdout")
        for c in nb.cells[-2:]
    ]
    # printed, no Out[] (the kernel may split one cell's output into several stream messages)
    assert {o.output_type for c in nb.cells[-2:] for o in c.outputs} == {"stream"}
    assert out[0].splitlines()[3:] == [
        "❌ qkv  Queries, keys and values: does not pass",
        "       - `K` has shape (2, 3); expected shape (3, 2) (the transpose of the expected shape).",
        "",
        "0 of 1 question passes the public checks.",
    ]
    lines = out[1].splitlines()
    assert lines[3] == "✅ softmax  Softmax of a vector: passes the public checks"
    assert (
        lines[6] == "check: attention_numpy has no question 'nope'; its questions are: qkv, scores, scaled, softmax, "
        "weights, output."
    )
    assert float(lines[7]) == np.random.RandomState(0).rand()  # check() drew no random numbers of its own


def test_live_check_leaves_the_sessions_random_numbers_alone(tmp_path):
    seeded = {
        "id": "r/0",
        "kind": "expr",
        "target": "np.random.rand(3)",
        "properties": [],
        "seed": 5,
        "type": "array",
        "shape": [3],
        "dtype_kind": "float",
    }
    path = tmp_path / "public_checks.json"
    path.write_text(
        json.dumps(
            {
                "assignment": "rng",
                "title": "t",
                "questions": [{"id": "r", "title": "Random", "points": 1, "checks": [seeded]}],
            }
        )
    )
    ns = {"np": np}
    np.random.seed(1)
    verdicts = selfcheck.check(checks=path, namespace=ns)
    assert [v.status for v in verdicts] == ["passed"]
    assert np.random.rand() == np.random.RandomState(1).rand()


# --------------------------------------------------------------------------------------------
# No file given to students holds a hidden reference value


def distinctive(x: float) -> bool:
    """A number whose printed digits identify it: not an integer, not a short decimal like 0.5."""
    return math.isfinite(x) and 1e-4 <= abs(x) < 1e7 and abs(float(f"{x:.2g}") - x) > 1e-9 * abs(x)


def numbers_in(data: bytes) -> np.ndarray:
    """Every decimal number printed with at least 4 significant digits, and every float in an array file."""
    import re

    out = []
    for m in re.finditer(rb"-?\d+\.\d+(?:[eE][-+]?\d+)?", data):
        mantissa = re.split(rb"[eE]", m.group())[0].lstrip(b"-").replace(b".", b"").lstrip(b"0")
        if len(mantissa) >= 4:
            out.append(float(m.group()))
    return np.array(sorted(out))


def array_numbers(path: Path) -> list[float]:
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):  # not an array file
        return []
    arrays = [loaded[k] for k in loaded.files] if hasattr(loaded, "files") else [loaded]
    return [float(v) for a in arrays if a.dtype.kind in "fc" for v in np.ravel(a.real)]


def found(x: float, pool: np.ndarray) -> bool:
    """Whether x was printed (to 4 significant digits or more) somewhere in the pool."""
    if not len(pool):
        return False
    tol = 0.51 * 10 ** (math.floor(math.log10(abs(x))) - 3)
    i = np.searchsorted(pool, x)
    return any(abs(pool[j] - x) <= tol for j in (i - 1, i) if 0 <= j < len(pool))


def plain(value: Value):
    """Strings, and lists or tuples of them (with numbers), as the Python value a notebook would print."""
    if value.kind in ("str", "bool"):
        return value.data
    if value.kind == "array" and value.data.ndim == 0:
        return value.data.item()
    if value.kind in ("list", "tuple"):
        items = [plain(v) for v in value.data]
        if any(i is None for i in items):
            return None
        return items if value.kind == "list" else tuple(items)
    return None


def leaks(value: Value, data: bytes, pool: np.ndarray) -> list[str]:
    """How ``value`` shows in a file: printed numbers, raw or base64 array bytes, or printed text.

    Single words and short strings are not evidence (a vocabulary holds every word an answer can
    be); a whole list of them printed the way Python or JSON prints it is."""
    out = []
    p = plain(value)
    if isinstance(p, str) and len(p) >= 12 and p.encode() in data:
        out.append("text")
    if isinstance(p, (list, tuple)) and len(p) >= 2 and any(isinstance(x, str) for x in p):
        forms = {repr(p), repr(list(p)), json.dumps(list(p)), json.dumps(list(p), ensure_ascii=False)}
        if any(f.encode() in data for f in forms):
            out.append("printed list")
    if value.kind in ("list", "tuple"):
        for v in value.data:
            out += leaks(v, data, pool) if v.kind != "str" else []
    if value.kind == "dict":
        for v in value.data.values():
            out += leaks(v, data, pool)
    arr = value.data if value.kind == "array" else value.data.data if value.kind in ("frame", "series") else None
    if arr is None or arr.dtype.kind not in "fc":
        return out
    xs = [float(v) for v in np.ravel(arr.real) if distinctive(float(v))]
    hits = sum(found(x, pool) for x in xs)
    if xs and hits >= max(1, math.ceil(len(xs) / 2)):
        out.append(f"printed ({hits} of {len(xs)} distinctive numbers)")
    if xs and arr.size >= 2:
        for dtype in ("<f8", "<f4"):
            raw = np.ascontiguousarray(arr.real).astype(dtype).tobytes()
            if raw in data:
                out.append(f"raw {dtype} bytes")
            if base64.b64encode(raw) in data:
                out.append(f"base64 {dtype} bytes")
    return out


def scan(folder: Path, hidden: dict[str, Value]) -> dict[str, list[str]]:
    """check id -> the files (and forms) in ``folder`` where its reference value shows."""
    out: dict[str, list[str]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        pool = np.sort(np.concatenate([numbers_in(data), np.array(array_numbers(path))]))
        for cid, value in hidden.items():
            for how in leaks(value, data, pool):
                out.setdefault(cid, []).append(f"{path.relative_to(folder)}: {how}")
    return out


@pytest.fixture(scope="module")
def hidden_values(grader, course):
    """Every reference value students must not see, computed by the grader from the solutions."""
    out = {}
    for a in course.assignments.values():
        ref = grader.references.get(a)
        for check in a.checks:
            if not check.public and ref.captures[check.id].value is not None:
                out[f"{a.name}:{check.id}"] = ref.captures[check.id].value
    return out


# Found by the scan below and left for the assignment's author: the tokenizer's instructions give the
# worked example "The loan, approved!" -> ['the', 'loan', ',', 'approved', '!'], which is exactly what
# the hidden check tokenizer.tokenize('The LOAN, approved!') expects. Pinned here so the finding stays
# visible; once the check uses another sentence (or is marked public), this entry must go.


def test_no_file_given_to_students_holds_a_hidden_reference_value(hidden_values):
    assert len(hidden_values) >= 9
    assert scan(ROOT / "assignments", hidden_values) == {}


def test_the_scan_finds_a_planted_value(hidden_values, tmp_path):
    target = "attention_numpy:output/0"
    value = hidden_values[target]
    planted = tmp_path / "assignments"
    shutil.copytree(ROOT / "assignments/attention_numpy", planted / "attention_numpy")
    nb = nbformat.read(str(planted / "attention_numpy/attention_numpy.ipynb"), as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell(f"Expected output:\n\n{np.array2string(value.data)}"))
    nbformat.write(nb, str(planted / "attention_numpy/attention_numpy.ipynb"))
    np.save(planted / "attention_numpy/expected.npy", value.data)
    found_in = scan(planted, {target: value})[target]
    assert found_in == [
        "attention_numpy/attention_numpy.ipynb: printed (4 of 4 distinctive numbers)",
        "attention_numpy/expected.npy: printed (4 of 4 distinctive numbers)",
        "attention_numpy/expected.npy: raw <f8 bytes",
    ]
    listed = Value("list", (Value("str", "interest"), Value("str", "bank")))
    (planted / "attention_numpy/notes.md").write_text("The top two: ['interest', 'bank']\n")
    assert scan(planted, {"words": listed}) == {"words": ["attention_numpy/notes.md: printed list"]}


def test_public_checks_carry_values_only_for_checks_marked_public(course):
    for a in course.assignments.values():
        path = a.skeleton.parent / "public_checks.json"
        data = json.loads(path.read_text())
        for q in data["questions"]:
            for c in q["checks"]:
                assert ("value" in c) == next(x for x in a.checks if x.id == c["id"]).public, (a.name, c["id"])


def test_self_check_output_shows_no_hidden_value(hidden_values):
    import contextlib
    import io

    public = selfcheck.load(PUBLIC)
    report = io.StringIO()
    for name in ("carol_no_sqrt", "dave_wrong_axis", "erin_untransposed"):
        with contextlib.redirect_stdout(report):
            print(selfcheck.format_report(public, selfcheck.check_notebook(EXAMPLES / f"{name}.ipynb", public)))
    text = report.getvalue().encode()
    mine = {k: v for k, v in hidden_values.items() if k.startswith("attention_numpy:")}
    assert {cid: ways for cid, v in mine.items() if (ways := leaks(v, text, numbers_in(text)))} == {}


def test_a_worker_started_ahead_runs_its_job_in_its_own_directory_or_ends_unused(tmp_path):
    from grader.course.model import Limits
    from grader.run import worker_process
    from grader.run.job import CaptureSpec, Job, JobCell
    from grader.run.subprocess_executor import SubprocessExecutor

    unused = worker_process.start(sys.executable, None)
    worker_process.discard(unused)
    assert unused.proc.poll() is not None  # it ended at the end of its stdin, without a job
    # `grader check` starts the worker before the notebook's working directory exists; the
    # notebook still imports a module from there, as it does in a worker started for it.
    (tmp_path / "helper.py").write_text("VALUE = 7\n")
    job = Job(
        cells=(JobCell(1, "import helper, sys\nx = helper.VALUE\nfirst = sys.path[0]"),),
        captures=(CaptureSpec("x", "value", "x", None), CaptureSpec("first", "value", "first", None)),
        limits=Limits(cell_timeout=20, notebook_timeout=60),
        files=((tmp_path / "helper.py", "helper.py"),),
    )
    executor = SubprocessExecutor(ahead=worker_process.start(sys.executable, None))
    run = executor.run(job)
    assert run.status == "ok", run.reason
    assert run.captures["x"].value.data == 7
    assert run.captures["first"].value.data != worker_process.tempfile.gettempdir()
    executor.close()
