"""The process tree a sandboxed run lives in: the keeper, the namespace's init, and the run.

``fork_keeper`` leaves the keeper behind (it watches the grader's channel), ``fork_init`` makes
pid 1 of a new pid namespace reap until the student has ended, and ``serve_runs`` is pid 1 of a
session: it forks each run's process ahead of its job and cleans the sandbox after it.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import shutil
import signal
import socket
import stat
import time
from typing import TYPE_CHECKING

from grader.errors import SandboxError
from grader.run.sandbox import cgroup
from grader.run.sandbox.disk import Watch, fill, mark
from grader.run.sandbox.host import remove_workdir, send_signal, stop_tree, tasks_in_tree
from grader.run.sandbox.linux import PR_SET_CHILD_SUBREAPER, forget_keys_of, prctl, set_name
from grader.run.sandbox.root import put_back

if TYPE_CHECKING:  # the job's shape, for the type checker only: the student process never imports grader.run.job
    from grader.run.job import JobWire


def fork_keeper(
    channel: int | None,
    workdir: str,
    *,
    subreaper: bool,
    view: str | None = None,
    uid: int | None = None,
    memory: bool = False,
    disk: Watch | None = None,
    processes: int | None = None,
) -> None:
    """Fork; the parent stays behind as the keeper and never returns. It removes ``view`` (the
    empty directory a session's root was mounted on, in the child's namespace) at the end, and
    when the run had a ``uid`` of its own, every key that uid left in the kernel's keyrings. The
    run's ``memory`` cgroup is the grader's to read and remove, unless the grader has gone. With a
    ``disk`` watch, it refuses the run's writes once the working directory holds more than its limit
    (``disk.fill``), and ends the run if it holds twice that anyway; with ``processes`` (uid 0, which
    the kernel's process limit exempts), it ends the run once its tree holds more processes and
    threads than that."""
    if subreaper:
        prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of the student come back to the keeper
    pid = os.fork()
    if pid == 0:
        return
    set_name("grader-keeper")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    close_fds(channel)
    code, abandoned = _wait_watching(pid, channel, disk, processes, workdir, uid)
    if subreaper:
        for p in stop_tree(os.getpid()):
            send_signal(p, signal.SIGKILL)
        _reap_all()
    if uid is not None:
        try:
            forget_keys_of(uid)
        except (OSError, SandboxError):
            pass
    if abandoned:  # the grader may be gone for good: do not leave its working directory behind
        try:
            remove_workdir(workdir)
        except OSError:
            pass
        if memory:
            cgroup.remove(os.getpid())
    if view is not None:
        try:
            os.rmdir(view)
        except OSError:
            pass
    os._exit(code)


def _reap_all(timeout: float = 5.0) -> None:
    """Collect every child (orphans come back to a subreaper), so none is left as a zombie."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not done:
            time.sleep(0.005)


def _wait_watching(
    pid: int,
    channel: int | None,
    disk: Watch | None = None,
    processes: int | None = None,
    workdir: str = "",
    uid: int | None = None,
) -> tuple[int, bool]:
    """Wait for the child; kill it if nobody reads the channel any more (the grader has gone); fill
    the run's disk once it writes more than ``disk`` allows (its processes, of ``uid`` if it has its
    own, can write no more), and end the whole run if it goes on past twice that, or once it holds
    more than ``processes`` tasks.

    Returns the child's exit code, and whether the channel was abandoned."""
    abandoned = False
    poller = select.poll()
    try:
        pidfd = os.pidfd_open(pid)
        poller.register(pidfd, select.POLLIN)
    except (OSError, AttributeError):
        pidfd = None
    if channel is not None:
        poller.register(channel, 0)  # a pipe's write end reports POLLERR once its reader is closed
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 1, abandoned
        if done:
            return _exit_code(status), abandoned
        seen = disk.look() if disk is not None else ""
        why = "disk_end" if seen == "end" else ""
        if seen == "fill":
            stopped = stop_tree(os.getpid())  # nothing of it writes or forks meanwhile
            fill(stopped, uid)
            for p in stopped:
                send_signal(p, signal.SIGCONT)
        if not why and processes is not None and tasks_in_tree(os.getpid()) > processes:
            why = "processes"
        if why:
            mark(workdir, why)
            for p in stop_tree(os.getpid()):  # stopped first: nothing of it writes or forks meanwhile
                send_signal(p, signal.SIGKILL)
            disk = processes = None
        wait = 200 if pidfd is None else None
        if disk is not None or processes is not None:
            wait = int(disk.interval * 1000) if disk is not None else 20
        try:
            events = poller.poll(wait)
        except InterruptedError:
            continue
        for fd, ev in events:
            if fd == channel and ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                send_signal(pid, signal.SIGKILL)
                poller.unregister(channel)
                abandoned = True


def fork_init() -> None:
    """In pid 1 of the new namespace: fork the student, then reap until it has ended."""
    pid = os.fork()
    if pid == 0:
        set_name("grader-run")
        return
    set_name("grader-init")
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # pid 1 ignores whatever it has no handler for
    close_fds(None)
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if done == pid:
            os._exit(_exit_code(status))  # and the kernel ends everything left in the namespace


NO_MORE_RUNS = 3  # exit code of a run's process that found the session over before its job came
LAST_RUN = 4  # exit code of a run's process whose job said it was the session's last (``Job.last``)


def serve_runs(control: int, workdir: str) -> None:
    """pid 1 of a session's namespace: fork the process for the next run before its job comes,
    and clean up after each run. Returns in that process (which finishes its setup, then takes its
    job from ``control`` with ``await_run``); never returns here."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # pid 1 ignores whatever it has no handler for
    close_fds(control)
    places = writable_places(workdir)
    set_name("grader-init")
    while True:
        pid = os.fork()
        if pid == 0:
            set_name("grader-run")
            return
        code = 0
        while True:  # until the run's process ends, collecting orphans on the way
            try:
                done, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            if done == pid:
                code = _exit_code(status)
                break
        if code in (NO_MORE_RUNS, LAST_RUN):  # the grader closed the session, or will: no process ahead
            os._exit(0)  # and the kernel ends everything left in the namespace
        _end_others()
        empty_places(places)
        try:  # the grader may send the next run; the process forked next takes it
            os.write(control, b"ready")
        except OSError:
            os._exit(0)


def await_run(control: int) -> tuple[JobWire, int, int | None]:
    """In a run's process, set up already: its job, its event fd and, for a job that says it
    stays (``Job.stay``: the trusted solution's), the session's control socket to take the next
    run from; any other job's process keeps no way to the session's later runs."""
    sock = socket.socket(fileno=control)
    try:
        _, fds, _, _ = socket.recv_fds(sock, 64, 2)
    except (OSError, ValueError):
        fds = []
    if len(fds) != 2:  # end of the session (the grader closed its end), or nonsense
        os._exit(NO_MORE_RUNS)
    job_fd, event_fd = fds
    try:
        with os.fdopen(job_fd, "rb") as f:
            job: JobWire = json.loads(f.read())
        stays = job.get("stay") is True
    except BaseException:
        sock.close()
        raise
    if not stays:
        sock.close()
        return job, event_fd, None
    return job, event_fd, sock.detach()


def _end_others() -> None:
    """In pid 1 of a namespace: kill every other process in it and collect them all."""
    while True:
        try:
            os.kill(-1, signal.SIGKILL)  # from pid 1: every process of the namespace but itself
        except ProcessLookupError:
            pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            pass


def writable_places(workdir: str) -> list[tuple[str, os.stat_result]]:
    """Where a run may write (the working directory, /tmp, /dev/shm), with their owner and mode now."""
    return [(p, os.stat(p)) for p in (workdir, "/tmp", "/dev/shm") if os.path.isdir(p)]


def empty_places(places: list[tuple[str, os.stat_result]]) -> None:
    """Remove what a run wrote (in the working directory, /tmp and /dev/shm), keeping the mounted
    submission and data files, give each place back its owner and mode, and put the given files
    (the run's copies of the submission and data files) back in the working directory as given."""
    for place, st in places:
        with contextlib.suppress(OSError):
            os.chown(place, st.st_uid, st.st_gid)
        with contextlib.suppress(OSError):
            os.chmod(place, stat.S_IMODE(st.st_mode))
        try:
            entries = list(os.scandir(place))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_dev != st.st_dev:
                    continue  # a mount point: a submission or data file, or the working directory in /tmp
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)  # never follows a symlink; mounted files stay
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
        if place not in ("/tmp", "/dev/shm"):
            put_back(place, st.st_uid, st.st_gid)


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def close_fds(keep: int | None) -> None:
    top = max(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1024)
    if top == resource.RLIM_INFINITY:
        top = 1 << 20
    if keep is None or keep < 3:
        os.closerange(3, top)
    else:
        os.closerange(3, keep)
        os.closerange(keep + 1, top)
