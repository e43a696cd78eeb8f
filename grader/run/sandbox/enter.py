"""Entering the sandbox, in the student process: ``enter`` for one run, ``enter_session`` for
the runs of one submission, and what a process with threads can do to itself instead.

``_isolate`` is the whole sequence: own session, namespaces, the keeper (and init), the private
root, a clean descriptor table and environment, the student's uid or a user namespace without
capabilities, no_new_privs, and the limits.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import sys
import tempfile
import time
from typing import TYPE_CHECKING

from grader.errors import SandboxError, SessionSetupError
from grader.run.sandbox import cgroup, zygote
from grader.run.sandbox.disk import Watch
from grader.run.sandbox.disk import watched as disk_watched
from grader.run.sandbox.harden import harden
from grader.run.sandbox.host import environment, tasks_of
from grader.run.sandbox.linux import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    drop_capabilities,
    forget_keys_of,
    loopback_up,
    map_ids,
    new_session_keyring,
    prctl,
    unshare,
)
from grader.run.sandbox.probe import Features, features, job_uid, sessions_possible
from grader.run.sandbox.root import build_root, build_view, finish_view
from grader.run.sandbox.tree import await_run, close_fds, fork_init, fork_keeper, serve_runs

if TYPE_CHECKING:  # the job's shape, for the type checker only: the student process never imports grader.run.job
    from grader.run.job import JobWire, LimitsWire, SessionSetup


def enter(job: JobWire, channel: int | None = None) -> tuple[str, ...]:
    """Isolate this fresh process before any student code runs; returns the protections in force.

    ``job["sandbox"]`` is ``Features.to_wire()`` (what to apply; absent: the probe's answer),
    ``job["limits"]`` the Limits as a dict, ``job["workdir"]`` the prepared directory. ``channel``
    is the descriptor of the event pipe to the grader: the only one the student process keeps.
    Raises SandboxError if a planned protection cannot be applied (nothing is run without it).
    """
    wanted = job.get("sandbox")
    plan = Features.from_wire(wanted) if wanted is not None else features()
    limits, workdir = job["limits"], job["workdir"]
    if not plan.linux or _threads() > 1:
        return _in_place(limits, workdir)
    try:
        return _isolate(plan, limits, workdir, channel)[0]
    except OSError as exc:
        raise SandboxError(f"{exc.strerror or exc} ({type(exc).__name__})") from None


def enter_session(plan_wire: dict[str, bool], channel: int) -> tuple[tuple[str, ...], JobWire, int, int | None]:
    """Isolate this fresh process for the runs of one submission, as far as possible before the
    submission is even known; returns in each run's process.

    Called in a child of the forking server as soon as it is forked, while it waits to be handed
    a job. The namespaces, the keeper, the namespace's init and the submission-independent part
    of the new root (``build_view``) are set up at once, off the grader's critical path. Init
    then waits on ``channel`` for the session: a job pipe (``{"workdir", "limits", "sandbox"}``)
    and the session's control socket (Unix, from the grader). It adds the working directory to
    the view, pivots into it, and serves runs: for each ``(job pipe, event pipe)`` pair the grader
    sends on the control socket, it forks the run's process, which drops to the student's uid,
    takes the limits and returns ``(protections, the run's job, its event fd)`` here. When that
    process has exited, init kills every other process in the namespace, empties the working
    directory (putting the given submission and data files back as given), /tmp and /dev/shm, and
    writes ``ready``. So a run starts as fresh as a run in a sandbox of its own. The grader closing the
    control socket ends the session.
    """
    plan = Features.from_wire(plan_wire)
    if not sessions_possible(plan) or _threads() > 1:
        raise SandboxError("runs can share a sandbox only with a pid namespace and a private root")
    view = tempfile.mkdtemp(prefix="grader-view-")  # where the new root is mounted (in its namespace only)
    try:
        applied, run = _isolate(plan, None, "", None, ahead=(channel, view))
    except OSError as exc:
        raise SandboxError(f"{exc.strerror or exc} ({type(exc).__name__})") from None
    assert run is not None  # with ``ahead``, _isolate returns in a run's process, with the run
    return applied, *run


def _await_session(channel: int, plan: Features) -> tuple[SessionSetup, int]:
    """In init: the session's setup and control socket, once the server hands them over."""
    sock = socket.socket(fileno=channel)
    _, fds, _, _ = socket.recv_fds(sock, 16, 2)
    sock.close()
    if len(fds) != 2:  # the server ended before this child got a job
        os._exit(0)
    job_fd, control = fds
    try:
        with os.fdopen(job_fd, "rb") as f:
            setup: SessionSetup = json.loads(f.read())
        wanted = setup["sandbox"]
        if wanted is None or Features.from_wire(wanted) != plan:
            raise SandboxError("the session asks for other protections than this child was prepared with")
        return setup, control
    except (SandboxError, OSError, ValueError, KeyError, TypeError) as exc:
        raise SessionSetupError(f"the session's setup cannot be read: {exc}", control) from None


def _isolate(
    plan: Features, limits: LimitsWire | None, workdir: str, channel: int | None, ahead: tuple[int, str] | None = None
) -> tuple[tuple[str, ...], tuple[JobWire, int, int | None] | None]:
    """The protections in force, and for a session (``ahead``: the server's channel and the
    directory to build the view on; ``limits``: None, they come with the session's setup) the
    run's job, event fd and, if its process stays for the next run, the control socket; else None."""
    control: int | None = None  # a session's control socket, once the grader has handed it over
    ends: int | None = None  # the zygote's pipe to init (``zygote``), in a session's zygote
    use_zygote = ahead is not None and zygote.possible(plan)
    _own_session()
    keeper = os.getpid()
    uid = job_uid(keeper) if plan.drop_user else None
    real_uid, real_gid = os.getuid(), os.getgid()
    # The keeper takes only what its child needs from it (a user namespace for privileges, a pid
    # namespace to be born into); the child takes the rest, so the keeper keeps the host's view.
    first = (CLONE_NEWUSER if plan.user_ns else 0) | (CLONE_NEWPID if plan.pid_ns else 0)
    rest = (
        (CLONE_NEWNS if plan.mount_ns else 0)
        | (CLONE_NEWNET if plan.net_ns else 0)
        | (CLONE_NEWIPC if plan.ipc_ns else 0)
    )
    memory = cgroup.create(keeper) if plan.memory_cgroup else None  # made by the keeper, outside it
    if memory is not None and limits is not None:
        memory.set_limit(int(limits["memory_mb"]))
    if first:
        unshare(first)
    if plan.user_ns:
        map_ids(real_uid, real_gid)
    if uid is not None:
        forget_keys_of(uid)  # a uid used before (pids wrap around) starts with no key of an earlier run
    watch = Watch(workdir, int(limits["disk_mb"])) if disk_watched(plan) and limits is not None else None
    counted = int(limits["processes"]) if plan.processes_watched and limits is not None else None
    fork_keeper(
        channel,
        workdir,
        subreaper=not plan.pid_ns,
        view=ahead[1] if ahead else None,
        uid=uid,
        memory=memory is not None,
        disk=watch,
        processes=counted,
    )
    if memory is not None:
        memory.join()  # before anything else: every process of the run is born in it
    if plan.pid_ns:
        _die_with_parent()  # the namespace's init goes with the keeper, and everything in it with init
    # Without a pid namespace the student outlives a keeper it killed and finishes the notebook; the
    # grader ends it afterwards through its group (and its uid, as root).
    if rest:
        unshare(rest)
    if plan.net_ns:
        loopback_up()
    owner, group = (uid, uid) if uid is not None else (real_uid, real_gid)
    disk_mb = int(limits.get("disk_mb", 256)) if limits is not None else 256
    if ahead is not None:  # pid 1 of a session: the view now, the submission when it comes
        build_view(ahead[1], disk_mb, fresh_proc=True)
        setup, control = _await_session(ahead[0], plan)
        try:
            limits, workdir = setup["limits"], setup["workdir"]
            if memory is not None:  # through descriptors opened before the view hid /sys/fs/cgroup
                memory.set_limit(int(limits["memory_mb"]))
            finish_view(ahead[1], workdir, int(limits.get("disk_mb", 256)), owner, group=group)
        except (OSError, SandboxError, KeyError, TypeError, ValueError) as exc:
            raise SessionSetupError(f"the working directory cannot be set up: {exc}", control) from None
        ends = zygote.start(control, workdir) if use_zygote else None  # in the zygote, its pipe to init
        if ends is None:
            serve_runs(control, workdir)  # in a run's process, forked by init
        channel = control  # until its job comes (await_run, below)
        if plan.ipc_ns:
            unshare(CLONE_NEWIPC)  # no System V object of an earlier run either
        _die_with_parent()
    elif plan.pid_ns:  # this is pid 1: it mounts the namespace's /proc, then stays as its init
        if plan.mount_ns:
            build_root(workdir, disk_mb, owner, fresh_proc=True, group=group)
        fork_init()
        _die_with_parent()
    elif plan.mount_ns:
        build_root(workdir, disk_mb, owner, fresh_proc=False, group=group)
    elif uid is not None:
        _chown_tree(workdir, uid)
    assert limits is not None  # the job's, or the session's from its setup (above)
    if ends is not None and channel is not None:
        zygote.keep_fds(channel, ends)
    else:
        close_fds(channel)
    _quiet_stdio()
    _student_environment(workdir)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        prctl(PR_SET_DUMPABLE, 1)  # /proc/self stays the student's own after the uid change
        if plan.pid_ns:
            _die_with_parent()  # cleared by the uid change
    elif plan.user_ns:
        drop_capabilities()
    new_session_keyring()  # not the grader's session keyring: its keys are not the student's to use
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if uid is not None or plan.user_ns:
        nproc = int(limits["processes"]) + (0 if uid is not None else 1 + plan.pid_ns) + (2 if ends is not None else 0)
    elif not plan.root:
        # The user's other processes and threads count too (this process among them, which is the
        # run's own first); where runs take turns (host.turn) no other student's are among them.
        # Zombies are left out: collected during the run, they would leave it room beyond its limit
        # (an earlier run's keeper, say); while they last, the run has that much less.
        # An earlier run's processes are mostly collected soon after its end: wait for that (a second
        # at most) rather than start with less room than ``processes`` (an honest notebook graded
        # just after a fork bomb could otherwise not start a single subprocess).
        settled = time.monotonic() + 1.0
        while tasks_of(real_uid) > tasks_of(real_uid, zombies=False) and time.monotonic() < settled:
            time.sleep(0.01)
        nproc = tasks_of(real_uid, zombies=False) - 1 + int(limits["processes"])
    else:
        nproc = None
    _apply_limits(limits, nproc)
    os.chdir(workdir)
    # the layers that need no privilege: capabilities, seccomp, Landlock
    harden(plan, workdir, memfd=bool(limits.get("memfd", False)))
    if control is not None and ends is not None:  # a session's zygote: each run a fork of it
        return plan.active(), zygote.serve(control, ends)
    if control is not None:  # a session's run, ready: now wait for its job
        return plan.active(), await_run(control)
    return plan.active(), None


def _student_environment(workdir: str) -> None:
    """The student's environment, in place of the grader's. ``tempfile`` forgets the folder it chose
    from the grader's (a forking server's temporary folder, not there for the student): the next
    ``tempfile`` call takes the student's ``TMPDIR``."""
    os.environ.clear()
    os.environ.update(environment(workdir))
    tempfile.tempdir = None


def _in_place(limits: LimitsWire, workdir: str) -> tuple[str, ...]:
    """What a process with threads (or not on Linux) can do to itself."""
    _student_environment(workdir)
    _apply_limits(limits, None)
    applied = ["env", "limits"]
    try:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        applied.append("no_new_privs")
    except (SandboxError, AttributeError, OSError):
        pass
    return tuple(applied)


def _apply_limits(limits: LimitsWire, nproc: int | None) -> None:
    mb = 1024 * 1024
    _set(resource.RLIMIT_CPU, int(limits["cpu_time"]))
    _set(resource.RLIMIT_AS, int(limits["memory_mb"]) * mb)
    _set(resource.RLIMIT_FSIZE, min(int(limits["file_size_mb"]), int(limits.get("disk_mb", 256))) * mb)
    _set(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    _set(resource.RLIMIT_CORE, 0)
    if nproc is not None:
        _set(resource.RLIMIT_NPROC, nproc)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))


def _set(limit: int, value: int) -> None:
    try:
        soft, hard = resource.getrlimit(limit)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(limit, (value, value))
    except (ValueError, OSError):
        pass


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _own_session() -> None:
    try:
        os.setsid()
    except PermissionError:  # already a process group leader (started with start_new_session)
        pass


def _die_with_parent() -> None:
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _quiet_stdio() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    if null > 2:
        os.close(null)


def _chown_tree(path: str, uid: int) -> None:
    for base, _dirs, files in os.walk(path):
        os.chown(base, uid, uid)
        for name in files:
            os.chown(os.path.join(base, name), uid, uid)
