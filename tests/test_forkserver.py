"""The warm forking executor: what its server holds before it forks, what each child starts from,
and that a server which dies or stops answering is replaced without losing a notebook."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT

from grader.course.model import Limits
from grader.errors import ExecutorError
from grader.run import sandbox
from grader.run.forking import ForkingExecutor
from grader.run.job import CaptureSpec, Job, JobCell

LIMITS = Limits(cell_timeout=20, notebook_timeout=40)


def job(*cells: str, capture: tuple[str, ...] = (), files: tuple = (), limits: Limits = LIMITS) -> Job:
    return Job(
        cells=tuple(JobCell(index=i + 1, source=src) for i, src in enumerate(cells)),
        captures=tuple(CaptureSpec(id=name, kind="value", target=name, point=None) for name in capture),
        limits=limits,
        files=files,
    )


def value(run, name):
    got = run.captures[name]
    assert got.value is not None, (name, got)
    v = got.value
    if v.kind == "array":
        return v.data.tolist()
    if v.kind in ("list", "tuple"):
        return [item.data if item.kind != "array" else item.data.tolist() for item in v.data]
    return v.data


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def executor():
    with ForkingExecutor() as ex:
        ex.start()
        yield ex


def test_server_preloads_the_libraries_on_a_single_thread(executor):
    server = executor.start()
    assert server.preloaded == ["numpy", "torch", "pandas", "matplotlib.pyplot"]
    assert server.threads == 1
    assert len(os.listdir(f"/proc/{server.pid}/task")) == 1  # still one thread after forking children
    assert server.ping()["threads"] == 1


def test_child_starts_warm_without_cuda_or_grader_state(executor):
    run = executor.run(
        job(
            textwrap.dedent("""\
        import sys, os
        warm = sorted(m for m in ("numpy", "torch", "pandas", "matplotlib.pyplot") if m in sys.modules)
        import torch
        cuda_initialised = torch.cuda.is_initialized()
        threads = torch.get_num_threads()
        grader_modules = sorted(m for m in sys.modules if m.startswith("grader."))
        gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
        """),
            capture=("warm", "cuda_initialised", "threads", "grader_modules", "gpu"),
        )
    )
    assert run.status == "ok", run
    assert value(run, "warm") == ["matplotlib.pyplot", "numpy", "pandas", "torch"]
    assert value(run, "cuda_initialised") is False
    assert value(run, "threads") == 1
    assert value(run, "gpu") == ""
    # only the student side: no grading, no references, no config in the process that runs student code
    assert not {
        "grader.judge.grading",
        "grader.judge.checks",
        "grader.judge.compare",
        "grader.course.config",
        "grader.run.execute",
    } & set(value(run, "grader_modules"))


def test_no_secret_of_the_grader_reaches_a_child(monkeypatch):
    monkeypatch.setenv("GRADER_TEST_SECRET", "hunter2")
    with ForkingExecutor(preload=("numpy",)) as ex:  # started after the secret was set
        run = ex.run(
            job(
                "import os\n"
                "environ = sorted(os.environ)\n"
                "initial = open('/proc/self/environ', 'rb').read().decode(errors='replace')\n"
                "leaked = 'hunter2' in initial or 'GRADER_TEST_SECRET' in initial",
                capture=("environ", "leaked"),
            )
        )
    assert run.status == "ok", run
    assert "GRADER_TEST_SECRET" not in value(run, "environ")
    assert value(run, "leaked") is False


def test_each_child_has_fresh_random_state_and_its_own_working_directory(executor, tmp_path):
    helper = tmp_path / "helper.py"
    helper.write_text("ANSWER = 42\n")
    cells = (
        "import numpy as np, torch, random, os, helper\n"
        "draws = [float(np.random.rand()), float(torch.rand(1)), random.random()]\n"
        "answer = helper.ANSWER\n"
        "here = sorted(os.listdir('.'))",
    )
    first = executor.run(job(*cells, capture=("draws", "answer", "here"), files=((helper, "helper.py"),)))
    second = executor.run(job(*cells, capture=("draws", "answer", "here"), files=((helper, "helper.py"),)))
    assert first.status == second.status == "ok", (first, second)
    assert value(first, "answer") == value(second, "answer") == 42  # imported from its working directory
    assert "helper.py" in value(first, "here")
    a, b = value(first, "draws"), value(second, "draws")
    assert all(x != y for x, y in zip(a, b, strict=True)), (a, b)  # numpy, torch and random each reseeded per child


def test_a_killed_server_is_replaced_and_the_running_notebook_finishes():
    with ForkingExecutor(preload=("numpy",)) as ex:
        first_pid = ex.start().pid
        result = {}
        runner = threading.Thread(
            target=lambda: result.setdefault(
                "run", ex.run(job("import time\ntime.sleep(1.5)\ndone = 'yes'", capture=("done",)))
            )
        )
        runner.start()
        time.sleep(0.7)
        os.kill(first_pid, signal.SIGKILL)  # as a student, the OOM killer or an operator could
        runner.join(30)
        assert value(result["run"], "done") == "yes"  # the child keeps its own pipe to the grader
        again = ex.run(job("x = 1 + 1", capture=("x",)))
        assert value(again, "x") == 2
        assert ex.restarts == 1 and ex.server.pid != first_pid
        assert wait_gone(first_pid)


def test_a_notebook_that_kills_the_server_only_loses_its_own_cell():
    # Without a pid namespace the student can find the server through /proc; kill it from a cell.
    weak = sandbox.Features(linux=True, root=os.geteuid() == 0)
    with ForkingExecutor(preload=("numpy",), features=weak) as ex:
        server = ex.start().pid
        hostile = textwrap.dedent("""\
            import os, signal
            pid, killed = os.getpid(), None
            while pid > 1:  # the topmost ancestor running grader.run.forking.server is the server itself
                pid = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])
                if b"grader.run.forking.server" in open(f'/proc/{pid}/cmdline', 'rb').read():
                    killed = pid
            os.kill(killed, signal.SIGKILL)
            """)
        run = ex.run(job("before = 1", hostile, "after = 2", capture=("before", "killed", "after")))
        assert (value(run, "before"), value(run, "killed"), value(run, "after")) == (1, server, 2)
        assert wait_gone(server)
        again = ex.run(job("x = 3", capture=("x",)))
        assert value(again, "x") == 3 and ex.restarts == 1


def test_a_stopped_server_is_replaced_after_the_reply_timeout():
    with ForkingExecutor(preload=("numpy",), reply_timeout=1.0) as ex:
        stuck = ex.start().pid
        os.kill(stuck, signal.SIGSTOP)
        started = time.monotonic()
        run = ex.run(job("x = 2 * 21", capture=("x",)))
        assert value(run, "x") == 42
        assert time.monotonic() - started < 20
        assert ex.restarts == 1 and ex.server.pid != stuck
        assert wait_gone(stuck)


def test_no_descriptor_or_child_is_left_behind_after_many_notebooks(executor):
    executor.run(job("pass"))
    executor.settle()
    fds = len(os.listdir("/proc/self/fd"))
    threads = threading.active_count()
    for i in range(25):
        run = executor.run(job(f"x = {i}", "raise ValueError('no')" if i % 5 == 0 else "y = 1", capture=("x",)))
        assert value(run, "x") == i
    executor.settle()  # finished notebooks are ended in the background; wait for that
    assert len(os.listdir("/proc/self/fd")) == fds
    assert threading.active_count() == threads
    deadline = time.monotonic() + 5  # a killed child is reaped once it has finished dying
    while (status := executor.server.ping())["children"] != status["idle"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert status["children"] == status["idle"] == 2  # every finished child was reaped


def test_a_stopped_executor_refuses_work_and_its_server_is_gone():
    ex = ForkingExecutor(preload=("numpy",))
    pid = ex.start().pid
    ex.close()
    assert wait_gone(pid)
    with pytest.raises(ExecutorError, match="stopped"):
        ex.run(job("x = 1"))


def descendants(pid: int) -> set[int]:
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            kids = {
                int(c)
                for t in os.listdir(f"/proc/{p}/task")
                for c in Path(f"/proc/{p}/task/{t}/children").read_text().split()
            }
        except OSError:
            continue
        todo.extend(kids - out)
        out |= kids
    return out


def _script(body: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(body)]


def test_server_and_children_end_when_the_grader_process_is_killed(tmp_path):
    marker = tmp_path / f"marker-{os.getpid()}-{time.monotonic_ns()}.txt"
    marker.write_text("x")
    proc = subprocess.Popen(
        _script(f"""
        import sys, threading
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from grader.course.model import Limits
        from grader.run.forking import ForkingExecutor
        from grader.run.job import Job, JobCell
        ex = ForkingExecutor(preload=("numpy",))
        print(ex.start().pid, flush=True)
        job = Job(cells=(JobCell(1, "import time\\nopen('started', 'w').close()\\ntime.sleep(120)"),),
                  captures=(), limits=Limits(cell_timeout=200, notebook_timeout=300),
                  files=((Path({str(marker)!r}), {marker.name!r}),))
        threading.Thread(target=ex.run, args=(job,), daemon=True).start()
        threading.Event().wait()
        """),
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    server = int(proc.stdout.readline())
    deadline = time.monotonic() + 30
    tree: set[int] = set()
    while time.monotonic() < deadline and len(tree) < 5:  # two idle children + the notebook's three
        tree = descendants(server)
        time.sleep(0.1)
    assert len(tree) >= 3, tree
    workdirs = glob.glob(os.path.join(tempfile.gettempdir(), f"{sandbox.WORKDIR_PREFIX}*", marker.name))
    assert len(workdirs) == 1, workdirs
    proc.kill()
    proc.wait()
    proc.stdout.close()
    assert wait_gone(server)
    assert all(wait_gone(p) for p in tree)  # the notebook's whole process tree, not only the child
    assert not os.path.exists(os.path.dirname(workdirs[0])), "the server removes what the grader could not"


def test_exit_without_close_does_not_hang_or_leave_a_server(tmp_path):
    started = time.monotonic()
    out = subprocess.run(
        _script(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from grader.run.forking import ForkingExecutor
        print(ForkingExecutor(preload=("numpy",)).start().pid)
        """),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert time.monotonic() - started < 60
    assert wait_gone(int(out.stdout))


def test_torch_in_a_numpy_course_runs_in_a_server_that_has_it_loaded(course, tmp_path, monkeypatch):
    """A submission importing a slow library its assignment does not (torch in the NumPy course)
    is served by a server with it loaded: one import for the batch, not one in each of its runs.
    Only the libraries of ``WARM`` that are installed are ever named; past ``WARM_SERVERS`` servers
    the assignment's own set serves it."""
    import dataclasses

    from grader.course.imports import warm_for
    from grader.judge.grading import Grader
    from grader.run.forking import executor as executor_module

    assert warm_for(
        ("numpy",),
        [
            "import torch.nn as nn\nimport numpy as np",
            "import matplotlib.pyplot as plt",
            "import mymodule, os",
            "from jax import numpy",
            "x = ?",
        ],
    ) == ("matplotlib.pyplot", "torch.nn")
    assert warm_for(("torch", "torch.nn"), ["import torch"]) == ()
    numpy_a = course.assignment("attention_numpy")
    alice = ROOT / "examples" / "attention_numpy" / "alice_torch.ipynb"
    probe = dataclasses.replace(
        job("import sys\ntorch = 'torch' in sys.modules", capture=("torch",)), preload=("numpy",), warm=("torch",)
    )
    with ForkingExecutor() as ex:
        card = Grader(dataclasses.replace(course, cache_dir=tmp_path / "cache"), ex).grade(numpy_a, alice)
        assert card.score == numpy_a.max_score
        assert set(ex.servers) == {("numpy",), ("numpy", "torch")}
        assert ex.servers[("numpy", "torch")].preloaded == ["numpy", "torch"]
        assert value(ex.run(probe), "torch") is True  # imported before the run began
        monkeypatch.setattr(executor_module, "WARM_SERVERS", 1)
        assert ex.preload_for(probe) == ("numpy", "torch")  # a server it already has
        assert ex.preload_for(dataclasses.replace(probe, warm=("matplotlib.pyplot",))) == ("numpy",)


def test_each_assignment_gets_a_server_with_what_it_imports(course, tmp_path):
    """A NumPy assignment's notebooks run in children of a numpy server that never mapped torch;
    assignments importing the same libraries share a server; the course's preload: list adds to it."""
    import dataclasses

    from grader.course.imports import preload_for
    from grader.judge.grading import Grader

    numpy_a, torch_a, french = (
        course.assignment(n) for n in ("attention_numpy", "attention_from_scratch", "attention_french")
    )
    assert preload_for(numpy_a) == ("numpy",)
    assert preload_for(torch_a) == preload_for(french) == ("torch", "torch.nn")
    assert preload_for(dataclasses.replace(numpy_a, preload=("pandas",))) == ("numpy", "pandas")
    submission = tmp_path / "mine.ipynb"
    submission.write_bytes(numpy_a.solution.read_bytes())
    with ForkingExecutor() as ex:
        card = Grader(dataclasses.replace(course, cache_dir=tmp_path / "cache"), ex).grade(numpy_a, submission)
        assert card.score == numpy_a.max_score
        assert set(ex.servers) == {("numpy",)}
        mapped = ex.run(
            dataclasses.replace(
                job(
                    "import sys\ntorch = 'torch' in sys.modules\nmaps = 'libtorch' in open('/proc/self/maps').read()",
                    capture=("torch", "maps"),
                ),
                preload=("numpy",),
            )
        )
        assert (value(mapped, "torch"), value(mapped, "maps")) == (False, False)
        assert ex.servers[("numpy",)].preloaded == ["numpy"]
