"""The sandbox, through the real grader: hostile and broken notebooks against the real assignment.

Every case hands in the correct answers to attention_numpy plus one hostile cell appended at the
end (cell HOSTILE), grades it with ``Grader.grade`` through real student processes, and checks
that the grader survived, the scorecard says what happened, and the questions answered before the
hostile cell are still graded. Where a hostile cell has to tell us what it managed to do, it
raises ``RuntimeError("probe {json}")``, which the scorecard carries back as that cell's error.

The test assignment is attention_numpy with small limits (10 s per cell, or 3 s where a cell is
meant to hang; 32 processes; 2 GB of memory) and no variant re-runs, so the whole file stays fast.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from conftest import IN_ORDER, NUMPY_CORRECT, ROOT, question

from grader.course.model import Limits
from grader.judge.grading import Grader
from grader.judge.jobs import build_job
from grader.notebook import analyse, read
from grader.outputs.yaml import write_yaml
from grader.run import sandbox, worker
from grader.run.job import Job, JobCell
from grader.run.sandbox import host
from grader.run.subprocess_executor import SubprocessExecutor
from grader.testing import fill, write

FEATURES = sandbox.features()
ACTIVE = set(FEATURES.active())
# the appended cell's number: cells are numbered among all the notebook's cells, markdown included
HOSTILE = 1 + len(nbformat.read(str(ROOT / "assignments/attention_numpy/attention_numpy.ipynb"), as_version=4).cells)
ALL_QUESTIONS = ("qkv", "scores", "scaled", "softmax", "weights", "output")

needs = {
    name: pytest.mark.skipif(
        name not in ACTIVE,
        reason=f"this platform gives no {sandbox.FEATURES[name]!r} "
        f"({'; '.join(FEATURES.missing()) or 'see sandbox.features()'})",
    )
    for name in sandbox.FEATURES
}

# How a TCP connection to the host's loopback ends, by the first layer that stops it: seccomp refuses
# the socket, Landlock the connection, a network namespace has nobody listening.
if "no_sockets" in ACTIVE:
    NET_REFUSED = "PermissionError: [Errno 1] Operation not permitted"
elif "landlock_net" in ACTIVE:
    NET_REFUSED = "PermissionError: [Errno 13] Permission denied"
else:
    NET_REFUSED = "ConnectionRefusedError: [Errno 111] Connection refused"
private_files = pytest.mark.skipif(
    not FEATURES.private_files,
    reason=f"this platform has neither a mount namespace nor Landlock ({'; '.join(FEATURES.missing())})",
)
reaches_no_network = pytest.mark.skipif(
    not ({"network", "landlock_net", "no_sockets"} & ACTIVE),
    reason=f"this platform has no network namespace, seccomp or Landlock ({'; '.join(FEATURES.missing())})",
)

# For hostile cells: what an attempt gave, in a word (or the system's message for a plain OSError).
TRY = """
def attempt(f):
    try:
        f()
        return "done"
    except Exception as e:
        return e.strerror if type(e) is OSError else type(e).__name__
"""


@pytest.fixture(scope="module")
def small(course):
    a = course.assignment("attention_numpy")
    limits = dataclasses.replace(
        a.limits, cell_timeout=10.0, notebook_timeout=60.0, processes=32, memory_mb=2048, capture_mb=4, output_kb=256
    )
    return dataclasses.replace(a, limits=limits, variants=dataclasses.replace(a.variants, count=0))


@pytest.fixture(scope="module")
def quick(small):
    """For cells meant to hang: 3 s per cell."""
    return dataclasses.replace(small, limits=dataclasses.replace(small.limits, cell_timeout=3.0))


@pytest.fixture
def hand_in(tmp_path, grader, small):
    """hand_in(*cells, answers=..., name=..., assignment=...) -> Scorecard of the answers plus these cells."""

    def _hand_in(*cells: str, answers: dict[str, str] = NUMPY_CORRECT, name: str = "hostile", assignment=None):
        path = write(fill(small.skeleton, answers, append=list(cells)), tmp_path / f"{name}.ipynb")
        return grader.grade(assignment or small, path)

    return _hand_in


def probe(card) -> dict:
    execution = card if isinstance(card, dict) else card.execution.to_dict()
    for e in execution["errors"]:
        if e["error"].startswith("RuntimeError: probe "):
            return json.loads(e["error"][len("RuntimeError: probe ") :])
    raise AssertionError(f"the hostile cell reported nothing: {execution['errors']}")


def assert_all_questions_passed(card) -> None:
    assert {q.id: q.status for q in card.questions} == dict.fromkeys(ALL_QUESTIONS, "passed")


def soon(condition, timeout: float = 5.0) -> bool:
    """Whether the condition holds within the timeout (an executor may end a tree off its critical path)."""
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def running_with(marker: str) -> list[int]:
    """Processes on this machine whose command line contains the marker."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


# --------------------------------------------------------------------------------------------
# What is in force, and where it is reported


def test_scorecard_names_the_protections_the_run_had(hand_in):
    card = hand_in("x = 1")
    assert card.status == "graded"
    assert card.execution.to_dict()["sandbox"] == list(FEATURES.active())
    assert {"session", "env", "limits", "cleanup"} <= set(card.execution.to_dict()["sandbox"])


def test_report_header_shows_the_sandbox(pytester):
    result = pytester.runpytest_subprocess(
        *IN_ORDER,
        "--grader-config",
        str(ROOT / "config.yaml"),
        "--scorecard-dir",
        str(pytester.path / "cards"),
        "--submission",
        str(ROOT / "assignments/attention_numpy/attention_numpy.ipynb"),
        "--collect-only",
    )
    result.stdout.fnmatch_lines([f"grader sandbox: {FEATURES.describe()}"])
    for line in FEATURES.missing():
        result.stdout.fnmatch_lines([f"grader sandbox, not enforced here: {line}"])


def test_as_root_student_code_gets_a_user_and_a_process_limit_of_its_own(hand_in):
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("the grader is not root here: student code runs as the grader's own user")
    if not FEATURES.drop_user:
        pytest.skip("Python is not readable by another user and there is no mount namespace to show it")
    card = hand_in(
        "import os, json, resource\nraise RuntimeError('probe ' + json.dumps("
        "{'ids': os.getresuid() + os.getresgid(), 'groups': os.getgroups(), "
        "'nproc': resource.getrlimit(resource.RLIMIT_NPROC)}))"
    )
    found = probe(card)
    uid = found["ids"][0]
    assert uid >= sandbox.UID_BASE and found["ids"] == [uid] * 6
    # Where runs are forks of a session's zygote, the zygote and the next run's process (forked ahead
    # of its job) share the uid: the limit counts them, and leaves the run at least its 32.
    extra = 2 if sandbox.zygote.possible(FEATURES) else 0
    assert found["groups"] == [] and found["nproc"] == [32 + extra, 32 + extra]
    assert {"user", "processes"} <= set(card.execution.to_dict()["sandbox"])


# --------------------------------------------------------------------------------------------
# Outcomes


def test_infinite_loop_ignoring_alarms_times_out_and_earlier_questions_are_graded(hand_in, quick):
    card = hand_in(
        "import signal\n"
        "for s in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT):\n    signal.signal(s, signal.SIG_IGN)\n"
        "signal.alarm(0)\nsignal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())\n"
        "while True:\n    pass",
        assignment=quick,
    )
    assert card.status == "timeout"
    assert card.reason == f"cell {HOSTILE} ran past the 3 s limit and was stopped"
    assert card.execution.to_dict()["errors"][0]["status"] == "timeout"
    assert_all_questions_passed(card)


def test_memory_bomb_is_a_memory_error_in_that_cell(hand_in, small):
    # Under 512 MB, not the 2048 of the other tests here: the same error, with a tenth of the pages
    # to touch before it (well inside the cell's time on a loaded machine too).
    limited = dataclasses.replace(small, limits=dataclasses.replace(small.limits, memory_mb=512))
    card = hand_in("s = 'x'\nwhile True:\n    s = s + s  # doubles until the memory limit", assignment=limited)
    assert card.status == "graded"
    [error] = card.execution.to_dict()["errors"]
    assert (error["cell"], error["status"]) == (HOSTILE, "error")
    assert error["error"].startswith("MemoryError")
    assert_all_questions_passed(card)


def test_file_size_disk_and_open_files_are_limited(hand_in, small):
    limits = small.limits
    card = hand_in(
        TRY + "import json\n"
        f"mb = b'x' * 2**20\n"
        f"found = {{'file_size': attempt(lambda: open('big.bin', 'wb').write(mb * {limits.file_size_mb + 1}))}}\n"
        f"found['open_files'] = attempt(lambda: [open('/dev/null') for _ in range({limits.open_files + 10})])\n"
        "raise RuntimeError('probe ' + json.dumps(found))",
        # more than disk_mb in files each within the file size limit
        f"mb = b'x' * 2**20\nfor i in range({limits.disk_mb // limits.file_size_mb + 2}):\n"
        f"    with open(f'part{{i}}.bin', 'wb') as f:\n"
        f"        for _ in range({limits.file_size_mb - 1}):\n"
        "            f.write(mb)",
    )
    found = probe(card)
    assert found["file_size"] == "File too large"
    assert found["open_files"] == "Too many open files"
    [disk] = [e for e in card.execution.to_dict()["errors"] if e["cell"] == HOSTILE + 1]
    notes = card.execution.to_dict().get("notes", [])
    assert f"cell {HOSTILE} wrote a file up to the {limits.file_size_mb} MB a file may hold: its write past that" in (
        " ".join(notes)
    ), notes
    if "filesystem" in ACTIVE:  # the working directory is a tmpfs of disk_mb
        assert disk["error"].startswith("OSError: [Errno 28] No space left on device"), disk
        assert f"cell {HOSTILE + 1} filled its working directory ({limits.disk_mb} MB, the {limits.disk_mb} MB" in (
            " ".join(notes)
        ), notes
    elif "disk" in ACTIVE:  # the grader watches the working directory, the only place it can write, and fills it
        assert disk["status"] == "error" and disk["error"].startswith("OSError: [Errno 27] File too large"), disk
        assert any(n.startswith("the notebook filled its working directory: it held ") for n in notes), notes
    else:
        assert any(n.startswith("disk: ") for n in card.execution.to_dict()["sandbox_not_enforced"])
    assert_all_questions_passed(card)


def test_a_fresh_process_per_notebook_gets_the_same_sandbox(course, small, tmp_path):
    """The subprocess executor (``python -m grader.run.worker``) enters the sandbox the same way."""
    grader = Grader(course, executor=SubprocessExecutor())
    path = write(
        fill(
            small.skeleton,
            NUMPY_CORRECT,
            append=[
                TRY + "import os, json, socket\n"
                f"found = {{'solutions': attempt(lambda: os.listdir({str(ROOT / 'solutions')!r})),\n"
                "         'uid': os.getuid(), 'pid': os.getpid(),\n"
                "         'net': attempt(lambda: socket.create_connection(('127.0.0.1', 9), timeout=1))}\n"
                "raise RuntimeError('probe ' + json.dumps(found))"
            ],
        ),
        tmp_path / "fresh.ipynb",
    )
    card = grader.grade(small, path)
    assert card.execution.to_dict()["executor"] == "subprocess"
    assert card.execution.to_dict()["sandbox"] == list(FEATURES.active())
    found = probe(card)
    if "filesystem" in ACTIVE:
        assert found["solutions"] == "FileNotFoundError"
    elif "landlock" in ACTIVE:
        assert found["solutions"] == "PermissionError"
    if {"network", "landlock_net", "no_sockets"} & ACTIVE:
        assert found["net"] == NET_REFUSED.split(":")[0]
    if "user" in ACTIVE:
        assert found["uid"] >= sandbox.UID_BASE
    assert_all_questions_passed(card)


@needs["processes"]
@pytest.mark.parametrize("kind", ["fork loop", "thousands of processes", "daemon escaping its group"])
def test_process_floods_are_stopped_and_nothing_is_left_running(hand_in, kind):
    marker = f"{secrets.randbelow(10**6) + 10**6}.5"  # `sleep 1234567.5`: ours alone
    body = {
        "fork loop": "while True:\n    os.fork()",
        "thousands of processes": f"procs = [subprocess.Popen(['sleep', '{marker}']) for _ in range(3000)]",
        "daemon escaping its group": (
            "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            f"        os.execvp('sleep', ['sleep', '{marker}'])\n    os._exit(0)\n"
            "os.wait()\nimport time\ntime.sleep(0.2)\nraise RuntimeError('probe ' + json.dumps({'uid': uid}))"
        ),
    }[kind]
    card = hand_in(
        "import os, subprocess, json\nuid = os.getuid()\ntry:\n"
        + "".join("    " + line + "\n" for line in body.splitlines())
        + "except BlockingIOError as e:\n    raise RuntimeError('probe ' + json.dumps({'uid': uid, 'error': str(e)}))"
    )
    assert card.status == "graded"
    assert_all_questions_passed(card)
    found = probe(card)
    if kind != "daemon escaping its group":
        assert found["error"] == "[Errno 11] Resource temporarily unavailable"
    assert soon(lambda: running_with(f"sleep\0{marker}") == []), running_with(f"sleep\0{marker}")
    if found["uid"] >= sandbox.UID_BASE:
        assert soon(lambda: host.processes_of(found["uid"]) == []), host.processes_of(found["uid"])


@pytest.mark.parametrize(
    "code, status, error",
    [
        ("import sys\nsys.exit(3)", "graded", "SystemExit: 3"),
        ("import os\nos._exit(0)", "crashed", "ProcessExit: cell {n} ended the Python process"),
        (
            "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
            "graded",
            "PermissionError: [Errno 1] Operation not permitted",
        ),
        (
            "import os, signal\nos.killpg(os.getpgid(0), signal.SIGKILL)",
            "crashed",
            "ProcessExit: cell {n} ended the Python process",
        ),
    ],
    ids=["sys.exit", "os._exit", "kill parent", "kill own group"],
)
def test_exits_and_kills_end_at_most_the_notebook(hand_in, code, status, error):
    card = hand_in(code)
    if "getppid" in code and "user" not in ACTIVE:
        # Without a user of its own the parent may be the student's to kill, and the run ends with it.
        assert card.status == "graded" or card.status == "crashed" and card.reason
        return
    assert_all_questions_passed(card)  # graded up to that point, and past it
    [item] = card.execution.to_dict()["errors"]
    assert item["cell"] == HOSTILE
    assert card.status == status
    assert item["error"].startswith(error.format(n=HOSTILE))
    if card.status == "crashed":
        assert card.reason.startswith(f"cell {HOSTILE} ended the Python process")
    assert hand_in("y = 2", name="next").status == "graded"  # and the grader goes on


def test_100_mb_of_output_is_truncated_with_a_note(hand_in):
    card = hand_in(
        "import sys\nline = 'x' * (2**20 - 1)\nfor _ in range(50):\n    print(line)\n    print(line, file=sys.stderr)"
    )
    assert card.status == "graded"
    assert card.execution.to_dict()["output_truncated_in_cells"] == [HOSTILE]
    assert card.execution.to_dict()["notes"] == [
        f"cell {HOSTILE} printed 100 MB of output, more than the 256 KB limit; the rest was discarded"
    ]
    assert_all_questions_passed(card)


def test_patched_libraries_and_lying_objects_earn_nothing(hand_in):
    card = hand_in(
        "import numpy, torch, builtins, grader.judge.compare\n"
        "numpy.allclose = lambda *a, **k: True\nnumpy.testing.assert_allclose = lambda *a, **k: None\n"
        "torch.allclose = lambda *a, **k: True\nbuiltins.abs = lambda x: 0\n"
        "grader.judge.compare.compare = lambda *a, **k: None\n"
        "class Evil(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return True\n"
        "    def __eq__(self, other): return True\n"
        "    def __array__(self, *a, **k): return numpy.ones((3, 2))\n"
        "class Liar(numpy.ndarray):\n"
        "    def __eq__(self, other): return numpy.ones(self.shape, bool)\n"
        "    def __array__(self, *a, **k): return numpy.ones(self.shape)\n"
        "output = torch.zeros(3, 2).as_subclass(Evil)\n"
        "attention_weights = numpy.zeros((3, 3)).view(Liar)\n"
        "print('score: 11/11\\nstatus: graded')",
    )
    assert question(card, "output").status == "failed"
    assert question(card, "weights").status == "failed"
    assert card.score == card.max_score - 4
    assert card.execution.to_dict()["errors"] == []


@private_files
def test_course_files_other_submissions_and_scorecards_are_out_of_reach(hand_in, tmp_path, small, course, grader):
    grader.references.get(small)
    cache = sorted(str(p) for p in Path(course.cache_dir).rglob("*.json"))
    assert cache, "the reference cache should hold something to steal"
    other = write(fill(small.skeleton, NUMPY_CORRECT), tmp_path / "classmate.ipynb")
    cards = tmp_path / "cards"
    cards.mkdir()
    targets = {
        "solution": str(small.solution),
        "solutions": str(ROOT / "solutions"),
        "config": str(ROOT / "config.yaml"),
        "cache": cache[0],
        "classmate": str(other),
        "relative": "../solutions",
    }
    card = hand_in(
        TRY + "import json, os\n"
        f"targets = {targets!r}\n"
        "found = {k: attempt(lambda p=p: os.listdir(p) if os.path.isdir(p) else open(p).read())"
        " for k, p in targets.items()}\n"
        f"found['write_cards'] = attempt(lambda: open({str(cards / 'hostile.yaml')!r}, 'w').write('score: 11'))\n"
        "found['write_root'] = attempt(lambda: open('/grader-was-here', 'w'))\n"
        "found['cwd'] = os.getcwd()\n"
        "raise RuntimeError('probe ' + json.dumps(found))"
    )
    found = probe(card)
    workdir = found.pop("cwd")
    assert {k: v for k, v in found.items() if v == "done"} == {}
    assert found["solution"] in ("FileNotFoundError", "PermissionError")
    assert list(cards.iterdir()) == []
    assert [oct(os.stat(p).st_mode & 0o777) for p in cache] == ["0o640"] * len(cache), "closed to other users"
    assert not os.path.exists(workdir), "the working directory is removed afterwards"
    assert_all_questions_passed(card)


# A notebook that answers nothing itself: in its first answer cell it finds the course's solution
# notebook (where the grader's course is, and where Gradescope unpacks it) and runs its cells,
# answers included; every other answer cell is emptied.
THEFT = (
    "import glob, json, os\n"
    "bases = [{root!r}, '/autograder/source/course', os.getcwd(), *[str(p) for p in __import__('pathlib')"
    ".Path(os.getcwd()).parents]]\n"
    "found, refused = [], []\n"
    "for base in bases:\n"
    "    try:\n"
    "        found += glob.glob(os.path.join(base, 'solutions', '**', '*.ipynb'), recursive=True)\n"
    "    except OSError as e:\n"
    "        refused.append(type(e).__name__)\n"
    "for path in [p for p in found if p.endswith('/attention_numpy.ipynb')]:\n"
    "    try:\n"
    "        cells = json.load(open(path))['cells']\n"
    "    except OSError as e:\n"
    "        refused.append(type(e).__name__)\n"
    "        continue\n"
    "    for cell in cells:\n"
    "        if cell['cell_type'] == 'code':\n"
    "            try:\n"
    "                exec(''.join(cell['source']), globals())\n"
    "            except Exception:\n"
    "                pass\n"
)


def theft(skeleton: Path, *append: str) -> nbformat.NotebookNode:
    """The skeleton with THEFT in its first answer cell, the other answer cells emptied."""
    code = [c for c in nbformat.read(str(skeleton), as_version=4).cells if c.cell_type == "code"]
    blanks = [n for n, c in enumerate(code, 1) if "?" in c.source]
    edit = {n: "pass" for n in blanks} | {blanks[0]: THEFT.format(root=str(ROOT))}
    return fill(skeleton, {}, edit=edit, append=list(append))


def test_a_notebook_that_runs_the_solution_it_finds_scores_nothing(grader, small, tmp_path):
    path = write(
        theft(small.skeleton, "raise RuntimeError('probe ' + json.dumps({'found': found, 'refused': refused}))"),
        tmp_path / "theft.ipynb",
    )
    card = grader.grade(small, path)
    found = probe(card)
    assert card.status == "graded"
    assert card.score == 0, f"the solution was found and run: {found}"
    assert found["found"] == [] or found["refused"], found


@pytest.mark.skipif("seccomp" not in ACTIVE, reason=f"no seccomp filter here ({'; '.join(FEATURES.missing())})")
def test_kernel_interfaces_numerical_code_never_needs_are_refused(hand_in):
    keyctl = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine, -1)
    card = hand_in(
        "import ctypes, json, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def errno_of(result):\n"
        "    return os.strerror(ctypes.get_errno()) if result == -1 else 'done'\n"
        "found = {\n"
        "    'ptrace': errno_of(libc.ptrace(0, 0, None, None)),\n"
        f"    'keyctl': errno_of(libc.syscall({keyctl}, 0, -3, 1, 0)),\n"
        "    'shmget': errno_of(libc.shmget(0, 4096, 0o1600)),\n"
        "    'msgget': errno_of(libc.msgget(0, 0o1600)),\n"
        "    'unshare': errno_of(libc.unshare(0x10000000)),\n"
        "}\n"
        "raise RuntimeError('probe ' + json.dumps(found))"
    )
    assert probe(card) == dict.fromkeys(["ptrace", "keyctl", "shmget", "msgget", "unshare"], "Operation not permitted")
    assert_all_questions_passed(card)


def test_printing_or_writing_a_fake_scorecard_changes_nothing(hand_in, tmp_path):
    cards = tmp_path / "cards"
    fake = "assignment: attention_numpy\\nsubmission: fake.ipynb\\nstatus: graded\\nscore: 11\\nmax_score: 11\\n"
    card = hand_in(
        "import os\n"
        f"print('{fake}')\n"
        f"for where in ('fake.yaml', os.path.expanduser('~/fake.yaml'), {str(cards / 'fake.yaml')!r}):\n"
        "    try:\n"
        f"        open(where, 'w').write('{fake}')\n"
        "    except OSError:\n        pass",
        answers={**NUMPY_CORRECT, "output": "np.zeros((3, 2))"},
        name="fake",
    )
    write_yaml(card, cards / "fake.yaml")
    assert card.score == card.max_score - 2
    assert "score: 9" in (cards / "fake.yaml").read_text()


@reaches_no_network
def test_loopback_server_of_the_host_is_refused(hand_in):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(5)
        server.setblocking(False)
        port = server.getsockname()[1]
        card = hand_in(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)")
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody knocked
    [error] = card.execution.to_dict()["errors"]
    assert error["cell"] == HOSTILE
    assert error["error"] == NET_REFUSED
    assert_all_questions_passed(card)


def test_secret_in_the_graders_environment_is_absent(tmp_path, course):
    """A grader started with a secret in its environment, as CI starts it."""
    secret = secrets.token_hex(16)
    a = course.assignment("attention_numpy")
    path = write(
        fill(
            a.skeleton,
            NUMPY_CORRECT,
            append=[
                "import os, json\n"
                f"seen = [k for k, v in os.environ.items() if {secret!r} in v]\n"
                "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
                "    try:\n"
                f"        if {secret!r}.encode() in open(f'/proc/{{pid}}/environ', 'rb').read():\n"
                "            seen.append('/proc/' + pid + '/environ')\n"
                "    except OSError:\n        pass\n"
                "raise RuntimeError('probe ' + json.dumps({'seen': seen, 'env': sorted(os.environ)}))"
            ],
        ),
        tmp_path / "env.ipynb",
    )
    script = (
        "import dataclasses, json, sys\nfrom pathlib import Path\nfrom grader.course import config\n"
        "from grader.judge.grading import Grader\n"
        f"course = dataclasses.replace(config.load(Path({str(ROOT / 'config.yaml')!r})), "
        f"cache_dir=Path({str(course.cache_dir)!r}))\n"
        "a = course.assignment('attention_numpy')\n"
        "a = dataclasses.replace(a, variants=dataclasses.replace(a.variants, count=0))\n"
        f"card = Grader(course).grade(a, Path({str(path)!r}))\n"
        "print(json.dumps(card.execution.to_dict()))\n"
    )
    env = {**os.environ, "GRADER_TEST_SECRET": secret, "GITHUB_TOKEN": secret, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = probe(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "GRADER_TEST_SECRET" not in found["env"] and "GITHUB_TOKEN" not in found["env"]
    if {"user", "filesystem"} & ACTIVE:  # the grader's own /proc/PID/environ is out of sight or out of reach
        assert found["seen"] == []
    else:
        assert not [s for s in found["seen"] if not s.startswith("/proc/")]


@pytest.mark.parametrize(
    "value, message",
    [
        (
            "np.zeros((1024, 1024))",
            "is an array of 8.4 MB, more than the grader will carry (4 MB at a time, `limits.capture_mb`)",
        ),
        ("np.array([object(), 1.0], dtype=object)", "is a builtins.object, which cannot be compared as data"),
        ("(row for row in attention_weights @ V)", "is a builtins.generator, which cannot be compared as data"),
        ("[]\noutput.append(output)", "is nested more than 24 levels deep"),
        # 26 MB as a frame: refused in the student process, before it is encoded or sent
        ("[[None] * 100_000 for _ in range(20)]", worker.TOO_MANY_ITEMS),
    ],
    ids=["huge", "object dtype", "generator", "recursive", "millions of items"],
)
def test_values_that_cannot_be_captured_fail_their_check_with_a_reason(hand_in, value, message):
    card = hand_in(answers={**NUMPY_CORRECT, "output": value})
    q = question(card, "output")
    assert q.status == "failed"
    assert q.lines[0] == f"`output` cannot be graded: output {message}."
    assert card.score == card.max_score - 2


@pytest.mark.parametrize(
    "content, reason",
    [
        (
            b"print('this is a script, not a notebook')\n",
            "The file is not JSON, so not a notebook (line 1: Expecting value).",
        ),
        (
            None,
            "The notebook is 52.4 MB, larger than the 20 MB limit; clear large outputs or embedded images and "
            "submit again.",
        ),
    ],
    ids=["not a notebook", "50 MB"],
)
def test_unreadable_submissions_are_invalid_with_the_reason(grader, small, tmp_path, content, reason):
    path = tmp_path / "odd.ipynb"
    if content is None:
        nb = fill(small.skeleton, NUMPY_CORRECT, append=["big = '" + "x" * (50 * 2**20) + "'"])
        write(nb, path)
    else:
        path.write_bytes(content)
    card = grader.grade(small, path)
    assert card.status == "invalid_notebook"
    assert card.reason == reason
    assert [q.status for q in card.questions] == ["unanswered"] * len(ALL_QUESTIONS)


# --------------------------------------------------------------------------------------------
# Invariants


FIND_CHANNEL = (
    "import os, struct, json\n"
    "def pipes():\n"
    "    for fd in map(int, os.listdir('/proc/self/fd')):\n"
    "        try:\n"
    "            if fd > 2 and os.readlink(f'/proc/self/fd/{fd}').startswith('pipe:'):\n"
    "                yield fd\n"
    "        except OSError:\n"
    "            pass\n"
    "def forge(body):\n"
    "    for fd in list(pipes()):\n"
    "        try:\n            os.write(fd, body)\n        except OSError:\n            pass\n"
)


@pytest.mark.parametrize(
    "body, why",
    [
        (
            "struct.pack('>I', 2**31 - 1)",
            "the student process sent a message of 2,147,483,647 bytes, over the limit of 9,437,184",
        ),
        ("struct.pack('>I', 7) + b'{oops!}'", "the student process sent a message that is not valid JSON"),
        (
            "(lambda b: struct.pack('>I', len(b)) + b)(json.dumps({'ev': 'capture', 'id': 'output/0', "
            "'value': {'t': 'array', 'dtype': 'float64', 'shape': [3, 2], 'b64': 'AAAA'}}).encode())",
            "a captured array's data does not match its shape",
        ),
        (
            "(lambda b: struct.pack('>I', len(b)) + b)(json.dumps({'ev': 'capture', 'id': 'stolen'}).encode())",
            "the student process sent a value nobody asked for",
        ),
        (
            '(lambda b: struct.pack(\'>I\', len(b)) + b)(b\'{"ev":"capture","id":"output/0","value":[\' + b\'{},\' * 1_000_000'
            " + b'{}]}')",
            "the student process sent a message of more than 300,000 items, over the limit",
        ),
    ],
    ids=["oversized", "not json", "forged value", "unknown capture", "millions of items"],
)
def test_forged_channel_messages_crash_the_run_with_a_reason_not_the_grader(hand_in, body, why):
    card = hand_in(FIND_CHANNEL + f"forge({body})\nimport time\ntime.sleep(0.5)")
    assert card.status == "crashed"
    assert card.reason == f"cell {HOSTILE} interfered with the grader's channel ({why}); it was not graded"
    assert_all_questions_passed(card)  # the notebook ran again without that cell


@needs["filesystem"]
def test_every_tmpfs_of_a_run_holds_a_bounded_number_of_files(hand_in, small):
    # Empty files take no space a size limit counts, but each is kernel memory. Filling three
    # tmpfs to their file limits is tens of thousands of system calls: the cell has 30 s, not 10, so
    # a loaded machine (load 45 on two cores) does not stop it before it reports.
    roomy = dataclasses.replace(small, limits=dataclasses.replace(small.limits, cell_timeout=30.0))
    card = hand_in(
        TRY
        + (
            "import json, os\n"
            "def many(where):\n"
            "    for i in range(100_000):\n"
            "        open(os.path.join(where, f'e{i}'), 'w').close()\n"
            "found = {where: attempt(lambda: many(where)) for where in ('.', '/tmp', '/dev/shm')}\n"
            "found['counts'] = [len(os.listdir(w)) for w in ('/tmp', '/dev/shm')]\n"
            "raise RuntimeError('probe ' + json.dumps(found))"
        ),
        assignment=roomy,
    )
    found = probe(card)
    assert found["."] == found["/tmp"] == found["/dev/shm"] == "No space left on device", found
    assert all(n < 20_000 for n in found["counts"]), found
    assert_all_questions_passed(card)


def test_a_forged_fatal_reason_is_escaped_wherever_it_is_shown(hand_in, tmp_path):
    forged = "evil\\n11 of 11 graded\\x1b[2J"
    body = "(lambda b: struct.pack('>I', len(b)) + b)(json.dumps({'ev': 'fatal', 'reason': '" + forged + "'}).encode())"
    card = hand_in(FIND_CHANNEL + f"forge({body})\nimport time\ntime.sleep(0.5)")
    assert card.status == "crashed"
    assert "\n" not in card.reason and "\x1b" not in card.reason
    assert "evil\\n11 of 11 graded\\x1b[2J" in card.reason  # shown, as escapes, in every output


KEYS = """
import ctypes, json, platform
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, KEYCTL = {'x86_64': (248, 250), 'aarch64': (217, 219)}[platform.machine()]
def keyctl(*args):
    return libc.syscall(KEYCTL, *args)
def read_key(serial):
    buf = ctypes.create_string_buffer(256)
    n = keyctl(11, serial, buf, 256)  # KEYCTL_READ
    return buf.raw[:n].decode() if n >= 0 else None
def listed(text):
    try:
        with open('/proc/keys') as f:
            return text in f.read()
    except OSError:
        return False
"""


@pytest.fixture(scope="module")
def unfiltered(course):
    """A grader whose runs have the namespaces and uids but no seccomp filter or Landlock, which
    refuse keyrings, System V IPC and abstract sockets outright: what isolates them without those."""
    return Grader(
        course, executor=SubprocessExecutor(features=dataclasses.replace(FEATURES, seccomp=False, landlock=0))
    )


@pytest.fixture
def hand_in_unfiltered(tmp_path, unfiltered, small):
    def _hand_in(*cells: str, name: str):
        return unfiltered.grade(
            small, write(fill(small.skeleton, NUMPY_CORRECT, append=list(cells)), tmp_path / f"{name}.ipynb")
        )

    return _hand_in


@needs["user"]
def test_a_key_in_the_kernel_keyring_reaches_no_later_run(hand_in_unfiltered):
    # One submission stores its answers as world-readable keys in its user, user-session and
    # session keyrings; a later submission looks for them in /proc/keys and by serial.
    hand_in = hand_in_unfiltered
    token = secrets.token_hex(8)
    store = hand_in(
        KEYS
        + (
            "found = {}\n"
            "for where, spec in (('user', -4), ('user_session', -5), ('session', -3)):\n"
            f"    serial = libc.syscall(ADD_KEY, b'user', b'answers-{token}-' + where.encode(), b'Q = {token}', 20, spec)\n"
            "    keyctl(5, serial, 0x3f3f3f3f)  # KEYCTL_SETPERM: everything, for everyone\n"
            "    found[where] = [serial, read_key(serial)]\n"
            "raise RuntimeError('probe ' + json.dumps(found))"
        ),
        name="stores",
    )
    stored = probe(store)
    serials = [serial for serial, value in stored.values() if value == f"Q = {token}"]
    assert serials, stored  # the run could use a keyring of its own: so the test means something
    later = hand_in(
        KEYS
        + (
            f"found = {{'listed': listed('answers-{token}'), 'read': [read_key(s) for s in {serials!r}]}}\n"
            "raise RuntimeError('probe ' + json.dumps(found))"
        ),
        name="reads",
    )
    assert probe(later) == {"listed": False, "read": [None] * len(serials)}
    with open("/proc/keys") as f:
        assert f"answers-{token}" not in f.read()  # nor is it left on the host after the batch


@needs["network"]
def test_shared_memory_queues_and_abstract_sockets_reach_no_later_submission(hand_in_unfiltered):
    # One submission leaves its answers in System V shared memory, a POSIX shared memory file and
    # an abstract Unix socket (with a daemon serving it); a later one looks for each.
    hand_in = hand_in_unfiltered
    token = secrets.token_hex(6)
    key = int(token[:6], 16)
    leave = hand_in(
        TRY
        + (
            "import ctypes, json, os, socket\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            f"shm = libc.shmget({key}, 4096, 0o1666)  # IPC_CREAT, readable by everyone\n"
            f"open('/dev/shm/answers-{token}', 'w').write('Q')\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            f"    s.bind('\\0answers-{token}')\n"
            "    s.listen()\n"
            "    while True:\n"
            "        c, _ = s.accept(); c.send(b'Q')\n"
            "raise RuntimeError('probe ' + json.dumps({'shm': shm}))"
        ),
        name="leaves",
    )
    assert probe(leave)["shm"] >= 0  # the segment was made: the later look means something
    look = hand_in(
        TRY
        + (
            "import ctypes, json, os, socket\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "def connect():\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            f"    s.connect('\\0answers-{token}')\n"
            f"found = {{'shm': libc.shmget({key}, 0, 0), 'file': os.path.exists('/dev/shm/answers-{token}'), "
            "'socket': attempt(connect)}\n"
            "raise RuntimeError('probe ' + json.dumps(found))"
        ),
        name="looks",
    )
    assert probe(look) == {"shm": -1, "file": False, "socket": "ConnectionRefusedError"}


def memfd_hoard(files: int, mb: int) -> str:
    """A cell that fills ``files`` memfd files of ``mb`` MB each and reports what it held, and how it stopped."""
    return (
        "import json, os\n"
        "held, fds, stop = 0, [], 'done'\n"
        "chunk = b'x' * (8 << 20)\n"
        "try:\n"
        f"    for i in range({files}):\n"
        "        fd = os.memfd_create(f'hoard{i}')\n"
        "        fds.append(fd)\n"
        f"        for _ in range({mb} // 8):\n"
        "            held += os.write(fd, chunk)\n"
        "except OSError as e:\n"
        "    stop = type(e).__name__\n"
        "raise RuntimeError('probe ' + json.dumps({'held_mb': held >> 20, 'stop': stop}))"
    )


@pytest.fixture(scope="module")
def hoard_limits(small):
    """1 GB of address space, files of at most 64 MB: 17 memfd files would hold more than the limit."""
    return dataclasses.replace(small, limits=dataclasses.replace(small.limits, memory_mb=1024, file_size_mb=64))


@pytest.fixture(scope="module")
def bare(course):
    """No seccomp filter, no Landlock and no memory cgroup: per-process limits alone."""
    return Grader(
        course,
        executor=SubprocessExecutor(
            features=dataclasses.replace(FEATURES, seccomp=False, landlock=0, memory_cgroup=False)
        ),
    )


def stopped_for_memory(card, megabytes: int) -> bool:
    """Whether the appended cell was ended by the run's memory cgroup, and the rest graded all the same."""
    words = f"cell {HOSTILE} used more memory than the run may hold ({megabytes} MB for all its processes and files"
    return any(e["cell"] == HOSTILE and words in e["error"] for e in card.execution.to_dict()["errors"])


@needs["seccomp"]
def test_memfd_files_are_refused_so_they_hold_no_memory_beyond_the_limit(
    grader, bare, unfiltered, hoard_limits, tmp_path
):
    path = write(fill(hoard_limits.skeleton, NUMPY_CORRECT, append=[memfd_hoard(18, 64)]), tmp_path / "hoard.ipynb")
    # The threat, with per-process limits alone: 18 files of 64 MB, 1152 MB held under a 1024 MB
    # limit, and the scorecard says that neither memfd nor the run's memory was bounded.
    card = bare.grade(hoard_limits, path)
    assert probe(card) == {"held_mb": 1152, "stop": "done"}
    assert "seccomp" not in card.execution.to_dict()["sandbox"]
    assert any(n.startswith("memfd: no seccomp filter") for n in card.execution.to_dict()["sandbox_not_enforced"])
    assert any(n.startswith("memory: bounded per process") for n in card.execution.to_dict()["sandbox_not_enforced"])
    # A memory cgroup without the filter: the files count, and the cell is ended at the run's limit.
    if "memory" in ACTIVE:
        card = unfiltered.grade(hoard_limits, path)
        assert stopped_for_memory(card, 1024), card.execution.to_dict()["errors"]
        assert_all_questions_passed(card)
        assert card.execution.to_dict()["sandbox_not_enforced"] == []
    # With the filter: the first memfd_create fails with EPERM in the student's cell, nothing is
    # held, and the notebook is graded as usual.
    card = grader.grade(hoard_limits, path)
    assert probe(card) == {"held_mb": 0, "stop": "PermissionError"}
    assert card.status == "graded" and card.score == card.max_score
    assert_all_questions_passed(card)
    assert "seccomp" in card.execution.to_dict()["sandbox"]
    assert not any(n.startswith("memfd") for n in card.execution.to_dict()["sandbox_not_enforced"])
    memory_line = any(
        n.startswith("memory: bounded per process") for n in card.execution.to_dict()["sandbox_not_enforced"]
    )
    assert memory_line == ("memory" not in ACTIVE)


def spread(children: int, child_mb: int, own_mb: int) -> str:
    """A cell that starts children holding ``child_mb`` MB each, then holds ``own_mb`` MB itself,
    16 MB at a time, and reports what it held and how many children are still there. It goes on
    once every child has said (through a pipe) that it holds its memory, or has ended (the kernel
    ends the largest processes of a cgroup over its limit): no sleep that a loaded machine outlasts."""
    return f"""
import json, os, select, time
def hold(mb):
    block = bytearray(mb << 20)
    block[::4096] = b'y' * len(block[::4096])
    return block
said, done = os.pipe()
children = []
for _ in range({children}):
    pid = os.fork()
    if pid == 0:
        os.close(said)
        kept = hold({child_mb})
        os.write(done, b'%d\\n' % os.getpid())
        time.sleep(30)
        os._exit(0)
    children.append(pid)
os.close(done)
holding, ended, heard, deadline = set(), set(), b'', time.monotonic() + 60
while len(holding | ended) < len(children) and time.monotonic() < deadline:
    if select.select([said], [], [], 0.05)[0]:
        heard += os.read(said, 4096)
        holding = {{int(p) for p in heard.split()}}
    ended |= {{p for p in set(children) - ended if os.waitpid(p, os.WNOHANG) != (0, 0)}}
held = [hold(16) for _ in range({own_mb} // 16)]
ended |= {{p for p in set(children) - ended if os.waitpid(p, os.WNOHANG) != (0, 0)}}
raise RuntimeError('probe ' + json.dumps({{'held_mb': 16 * len(held), 'children': len(children) - len(ended)}}))
"""


@needs["memory"]
def test_all_processes_of_a_run_share_one_memory_limit(grader, bare, small, tmp_path):
    place = sandbox.cgroup.place()
    assert place is not None

    def left_over() -> set[str]:  # the runs' cgroups whose keeper has ended
        return {
            n
            for n in os.listdir(place.path)
            if n.startswith(sandbox.cgroup.PREFIX) and not os.path.exists(f"/proc/{n[len(sandbox.cgroup.PREFIX) :]}")
        }

    # A grader killed outright elsewhere on the machine (another checkout's tests) may have left
    # its own behind; only this test's runs are looked at.
    before = left_over()
    limited = dataclasses.replace(small, limits=dataclasses.replace(small.limits, memory_mb=512))
    # Eight children of 40 MB, then 256 MB in the cell's own process: about 600 MB in all, and no
    # process near its own 512 MB of address space. Per-process limits alone let it all be held.
    path = write(fill(limited.skeleton, NUMPY_CORRECT, append=[spread(8, 40, 256)]), tmp_path / "spread.ipynb")
    card = bare.grade(limited, path)
    assert probe(card) == {"held_mb": 256, "children": 8}
    assert any(n.startswith("memory: bounded per process") for n in card.execution.to_dict()["sandbox_not_enforced"])
    # One limit for the whole run: the cell's process, by then the largest, is ended at 512 MB;
    # the scorecard says why, and the notebook is graded without that cell.
    card = grader.grade(limited, path)
    assert stopped_for_memory(card, 512), card.execution.to_dict()["errors"]
    assert_all_questions_passed(card)
    assert "memory" in card.execution.to_dict()["sandbox"] and card.execution.to_dict()["sandbox_not_enforced"] == []
    # Six children of 96 MB: the kernel ends the largest processes (children) until the rest fit,
    # and the cell, still under the limit, goes on.
    path = write(fill(limited.skeleton, NUMPY_CORRECT, append=[spread(6, 96, 0)]), tmp_path / "children.ipynb")
    assert probe(bare.grade(limited, path)) == {"held_mb": 0, "children": 6}
    held = probe(grader.grade(limited, path))
    assert held["children"] < 6, held
    # The runs' cgroups are gone with them: none is left whose keeper has ended (other tests' runs
    # may be under way).
    assert soon(lambda: not left_over() - before), left_over() - before


@needs["seccomp"]
def test_a_course_may_allow_memfd_files(grader, hoard_limits, tmp_path):
    allowed = dataclasses.replace(hoard_limits, limits=dataclasses.replace(hoard_limits.limits, memfd=True))
    path = write(fill(allowed.skeleton, NUMPY_CORRECT, append=[memfd_hoard(2, 8)]), tmp_path / "memfd.ipynb")
    card = grader.grade(allowed, path)
    assert probe(card) == {"held_mb": 16, "stop": "done"}
    assert_all_questions_passed(card)


def test_reference_values_never_reach_the_student_process(grader, small, tmp_path, monkeypatch):
    ref = grader.references.get(small)
    encoded = [
        json.dumps(c.value.data.tolist())
        for c in ref.captures.values()
        if c.value is not None and c.value.kind == "array" and c.value.data.size > 1
    ]
    from grader.capture import to_wire

    encoded += [
        to_wire(c.value)["b64"]
        for c in ref.captures.values()
        if c.value is not None and c.value.kind == "array" and c.value.data.size > 1
    ]
    assert encoded
    path = write(fill(small.skeleton, NUMPY_CORRECT), tmp_path / "sub.ipynb")
    cells = read(path)
    job: Job = build_job(small, cells, analyse(cells), path, hints=False, skip=set())
    workdir = sandbox.prepare_workdir(job.files)
    try:
        wire = json.dumps(job.to_wire(workdir)) + json.dumps(sandbox.environment(workdir))
        names = sorted(str(p.relative_to(workdir)) for p in Path(workdir).rglob("*"))
    finally:
        sandbox.remove_workdir(workdir)
    assert not [e for e in encoded if e in wire]
    assert names == ["sub.ipynb"]  # the submission, and the assignment's data files (none here)


def test_a_run_is_ended_when_the_grader_stops_listening(small):
    """If the grader dies, nobody reads the channel any more: the keeper ends the run and cleans up."""
    executor = SubprocessExecutor()
    job = Job(cells=(JobCell(1, "import time\ntime.sleep(120)"),), captures=(), limits=small.limits)
    workdir = sandbox.prepare_workdir(())
    wire = job.to_wire(workdir)
    wire["sandbox"] = FEATURES.to_wire()
    proc, fd = executor.spawn(wire, workdir)
    try:
        seen = b""
        while b'"phase":"start"' not in seen:  # the cell is running
            chunk = os.read(fd, 4096)
            assert chunk, "the worker ended early"
            seen += chunk
        time.sleep(0.5)
        assert proc.poll() is None  # the sleeping cell writes nothing, so only the keeper can end it
        os.close(fd)
        assert proc.wait(timeout=10) is not None
        assert not os.path.exists(workdir), "the keeper removes the working directory of an abandoned run"
    finally:
        sandbox.terminate(proc.pid)
        proc.wait()
        sandbox.remove_workdir(workdir)


def test_the_sandbox_refuses_to_run_what_it_cannot_isolate(tmp_path):
    """A planned protection that fails is an error, never a quieter run."""
    job = {"limits": dataclasses.asdict(Limits()), "workdir": str(tmp_path / "gone"), "sandbox": FEATURES.to_wire()}
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            sandbox.enter(job, channel=w)
            os.write(w, b"ran")
        except sandbox.SandboxError as exc:
            os.write(w, f"refused: {exc}".encode())
        finally:
            os._exit(0)
    os.close(w)
    said = b""
    while chunk := os.read(r, 4096):
        said += chunk
    os.close(r)
    sandbox.terminate(pid)
    os.waitpid(pid, 0)
    if "filesystem" not in ACTIVE:
        pytest.skip("nothing here needs the working directory before the student runs")
    assert said.decode().startswith("refused: No such file or directory")


def test_a_batch_goes_on_after_hostile_submissions(hand_in):
    cards = [
        hand_in("import os\nos._exit(1)", name="a"),
        hand_in("import os, signal\nos.killpg(0, signal.SIGKILL)", name="b"),
        hand_in("z = 3", name="c"),
    ]
    assert [c.status for c in cards] == ["crashed", "crashed", "graded"]
    assert [c.score for c in cards] == [11, 11, 11]


# --------------------------------------------------------------------------------------------
# Where the platform gives less


def test_without_namespaces_limits_cleanup_and_environment_still_hold(course, quick, tmp_path, monkeypatch):
    """The fallback: no namespaces and no other user (what a locked-down container gives)."""
    weak = sandbox.Features(linux=True, root=os.geteuid() == 0)
    grader = Grader(course, executor=SubprocessExecutor(features=weak))
    secret = secrets.token_hex(16)
    monkeypatch.setenv("GRADER_TEST_SECRET", secret)
    marker = f"{secrets.randbelow(10**6) + 10**6}.25"
    path = write(
        fill(
            quick.skeleton,
            NUMPY_CORRECT,
            append=[
                "import os, json\n"
                "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                f"        os.execvp('sleep', ['sleep', '{marker}'])\n    os._exit(0)\n"
                "os.wait()\n"
                "raise RuntimeError('probe ' + json.dumps({'env': sorted(os.environ)}))",
                "while True:\n    pass",
            ],
        ),
        tmp_path / "weak.ipynb",
    )
    card = grader.grade(quick, path)
    assert card.execution.to_dict()["sandbox"] == list(weak.active())
    assert (
        "network" not in card.execution.to_dict()["sandbox"] and "filesystem" not in card.execution.to_dict()["sandbox"]
    )
    assert "GRADER_TEST_SECRET" not in probe(card)["env"]
    assert card.status == "timeout"
    assert card.reason == f"cell {HOSTILE + 1} ran past the 3 s limit and was stopped"
    assert soon(lambda: running_with(f"sleep\0{marker}") == []), running_with(f"sleep\0{marker}")
    assert_all_questions_passed(card)
    assert weak.missing()[:2] == [
        "network: no network namespace, seccomp filter or Landlock network rules here, so student code can "
        "reach the network",
        "filesystem: no mount namespace or Landlock here, so student code can read whatever its user can read",
    ]


def test_without_namespaces_or_landlock_the_theft_works_and_the_scorecard_says_so(course, small, tmp_path):
    """The control for the test below: with neither a private view nor Landlock (an old kernel in a
    container), the solution can be found and run, and the scorecard and report name what is missing."""
    bare = sandbox.Features(linux=True, root=os.geteuid() == 0)
    card = Grader(course, executor=SubprocessExecutor(features=bare)).grade(
        small, write(theft(small.skeleton), tmp_path / "theft.ipynb")
    )
    assert card.score == card.max_score
    assert not {"filesystem", "landlock"} & set(card.execution.to_dict()["sandbox"])
    assert any(line.startswith("filesystem: no mount namespace or Landlock") for line in bare.missing())


@pytest.mark.skipif(
    not (FEATURES.landlock >= 6 and FEATURES.seccomp and FEATURES.root),
    reason="needs root, Landlock ABI 6 and seccomp (the layers a Docker container still allows)",
)
def test_as_root_without_namespaces_the_unprivileged_layers_hold(course, small, tmp_path):
    """What a Docker container with the default capabilities gives: no namespace, but root drops
    every capability, and Landlock and seccomp keep the course, the scorecards, the grader's
    processes and the loopback out of reach. Emulated here in any setting where the grader is root."""
    docker = sandbox.Features(linux=True, root=True, landlock=FEATURES.landlock, seccomp=True)
    grader = Grader(course, executor=SubprocessExecutor(features=docker))
    grader.references.get(small)
    cache = sorted(str(p) for p in Path(course.cache_dir).rglob("*.json"))
    cards = tmp_path / "cards"
    cards.mkdir()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(5)
        server.setblocking(False)
        port = server.getsockname()[1]
        path = write(
            theft(
                small.skeleton,
                TRY + "import json, os, signal, socket\n"
                "caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')][0]\n"
                "probe = {'found': found, 'refused': refused, 'caps': caps,\n"
                f"  'cache': attempt(lambda: open({cache[0]!r}).read()),\n"
                f"  'cards': attempt(lambda: open({str(cards / 'x.yaml')!r}, 'w')),\n"
                "  'etc': attempt(lambda: open('/etc/grader-was-here', 'w')),\n"
                f"  'signal': attempt(lambda: os.kill({os.getpid()}, signal.SIGTERM)),\n"
                f"  'environ': attempt(lambda: open('/proc/{os.getpid()}/environ').read()),\n"
                f"  'net': attempt(lambda: socket.create_connection(('127.0.0.1', {port}), timeout=1)),\n"
                "  'uid': os.getuid()}\n"
                "raise RuntimeError('probe ' + json.dumps(probe))",
            ),
            tmp_path / "docker.ipynb",
        )
        card = grader.grade(small, path)
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody knocked
    found = probe(card)
    assert card.execution.to_dict()["sandbox"] == list(docker.active())
    assert {"no_caps", "landlock", "landlock_net", "scoped", "seccomp", "no_sockets"} <= set(
        card.execution.to_dict()["sandbox"]
    )
    assert card.score == 0, f"the solution was found and run: {found}"
    assert found["found"] == [] or found["refused"]
    assert found["uid"] == 0 and found["caps"] == "0000000000000000"
    assert {k: found[k] for k in ("cache", "cards", "etc", "signal", "environ", "net")} == {
        "cache": "PermissionError",
        "cards": "PermissionError",
        "etc": "PermissionError",
        "signal": "PermissionError",
        "environ": "PermissionError",
        "net": "PermissionError",
    }
    assert list(cards.iterdir()) == []


def test_unprivileged_grader_uses_a_user_namespace(hand_in):
    if os.geteuid() == 0:
        pytest.skip("the grader runs as root here; the user-namespace path is the one taken when it is not")
    if not FEATURES.user_ns:
        pytest.skip("user namespaces are not available to this user: " + "; ".join(FEATURES.missing()))
    card = hand_in(
        "import os, json\nraise RuntimeError('probe ' + json.dumps({'uid': os.getuid(), "
        "'caps': [l for l in open('/proc/self/status') if l.startswith('CapEff')]}))"
    )
    found = probe(card)
    assert found["uid"] == os.getuid()
    assert found["caps"] == ["CapEff:\t0000000000000000\n"]
    assert {"userns", "network", "filesystem", "processes"} <= set(card.execution.to_dict()["sandbox"])


def test_a_grader_installed_under_tmp_stays_visible_to_the_student(tmp_path):
    """CI often checks a project out under /tmp; the student's empty /tmp must not hide it."""
    assert str(tmp_path).startswith("/tmp/")
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "grader", copy / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    # grader.testing is never imported by the worker itself, so this import reads the bound copy.
    submission = write(
        fill(
            ROOT / "assignments/attention_numpy/attention_numpy.ipynb",
            NUMPY_CORRECT,
            append=["import grader.testing\nprint(grader.testing.__file__)"],
        ),
        tmp_path / "sub.ipynb",
    )
    script = (
        "import sys, json, dataclasses, pathlib\n"
        f"sys.path.insert(0, {str(copy)!r})\n"
        "import grader\n"
        f"assert grader.__file__.startswith({str(copy)!r}), grader.__file__\n"
        "from grader.course import config\n"
        "from grader.run.subprocess_executor import SubprocessExecutor\n"
        "from grader.judge.grading import Grader\n"
        f"course = dataclasses.replace(config.load({str(ROOT / 'config.yaml')!r}), "
        f"cache_dir=pathlib.Path({str(tmp_path / 'cache')!r}))\n"
        "a = course.assignment('attention_numpy')\n"
        "a = dataclasses.replace(a, variants=dataclasses.replace(a.variants, count=0))\n"
        f"card = Grader(course, executor=SubprocessExecutor()).grade(a, pathlib.Path({str(submission)!r}))\n"
        "print(json.dumps([card.score, card.max_score, card.execution.to_dict()['errors'], card.execution.to_dict().get('sandbox')]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    score, max_score, errors, features = json.loads(proc.stdout.splitlines()[-1])
    assert errors == []
    assert score == max_score
    assert features == list(FEATURES.active())


def test_temporary_files_are_made_in_the_students_own_folder(submit):
    """``tempfile`` in the student's code (matplotlib's ``to_html5_video``, a saved model): the folder it
    uses is the run's ``TMPDIR``, in every run of the notebook, not the grader's temporary folder."""
    probe = (
        "import os, tempfile\n"
        "with tempfile.TemporaryDirectory() as d:\n"
        "    open(os.path.join(d, 'frame.png'), 'w').write('x')\n"
        "with tempfile.NamedTemporaryFile('w', suffix='.csv') as f:\n"
        "    f.write('a,b')\n"
        "fd, name = tempfile.mkstemp()\n"
        "os.close(fd)\n"
        "assert os.path.dirname(name) == os.environ['TMPDIR'] == os.getcwd(), (name, os.environ['TMPDIR'])"
    )
    card = submit(NUMPY_CORRECT, append=[probe])
    assert card.execution.to_dict()["errors"] == []
    assert all(q.status == "passed" for q in card.questions)
