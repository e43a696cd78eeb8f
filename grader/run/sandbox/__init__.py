"""Isolation of the student process: what it can see, reach, use, and leave behind.

Any executor uses the same few calls. On the grader's side:

    features()             what this platform allows, probed once (the report header shows it)
    prepare_workdir(files) a fresh private directory with the submission and the data files
    environment(workdir)   the whole environment of a student process (an allow-list)
    terminate(pid)         end a student process and everything it started, wherever it went
    turn(plan)             where runs share one uid's process limit, the run's turn (a context)
    oom_kills(pid)         how many of the run's processes its memory cgroup ended (0: none, or no cgroup)
    limit_reached(...)     which limit of the whole run ended it, if one did (its memory cgroup, the disk watch)
    cpu_waits(pid)         how long each thread of a run waited for a CPU other work held (a time limit's credit)
    tree_cpu(pid)          the CPU seconds a run's processes used, and the CPUs it may use (that credit's bound)
    disk_filled(workdir)   the most a run's folder held if the keeper's watch filled its disk (None: it did not)
    cgroup.remove(pid)     remove a run's memory cgroup (the forking server, for children it ended)
    prepare_seccomp(...)   build the seccomp filters before forking the processes that load them
    remove_workdir(path)

In the student process, first thing, before any student code and before the job's cells are even
looked at, ``enter(job, channel=fd)``. It must run in a fresh single-threaded process: one just
started (``python -m grader.run.worker``) or just forked (the warm forking server's child). It forks
twice and returns only in the process that runs the notebook:

    keeper      (the grader's uid)   waits; if the grader stops reading the channel, kills the rest
      init      (root, pid 1 of a new pid namespace)   builds the filesystem view, reaps orphans
        student (an unprivileged uid of its own, pid 2)   returns from enter() and runs the cells

Everything the student starts lives in that pid namespace, so when init ends, the kernel ends
every one of them, whatever they did with sessions, process groups or double forks.

``enter_session(plan, channel)`` is the same with pid and mount namespaces, for the runs of one
submission: the forking server's child calls it before any submission exists, init then serves
one run after another (a student process each, forked ahead of its job) and resets the sandbox
between them; it returns in each run's process.

What enter() puts in place, each where the platform allows it (``features()`` says which):

* own session and process group; stdin, stdout and stderr on /dev/null; no inherited descriptors
  but the channel; a scrubbed environment;
* rlimits: CPU time, address space, file size, open files, processes (as root, counted for a
  uid used by this run only, so the limit holds even though the grader is root);
* a memory cgroup of its own where the grader can make one (``cgroup``): one limit for all its
  processes and everything they hold in memory, files on its tmpfs, memfd and shared memory too;
* a new network namespace: no network at all, and the host's loopback servers unreachable (its
  own loopback is up and empty, so a connection is refused);
* a new mount namespace and a new root: read-only system and Python directories, the grader
  package, a fresh /dev, /proc of its own, and a size-limited tmpfs as working directory (holding
  the run's own copies of the submission and the data files, which it may overwrite; read-only
  binds of them under ``/.grader-given``) and as /tmp. The course, solutions/, the
  reference cache, other submissions and scorecards are simply not there;
* as root: an unprivileged uid and gid of its own (``job_uid``), no supplementary groups;
  not root but user namespaces allowed: a user namespace, every capability dropped;
* as root without a uid of its own (no namespaces, Python not readable by other users): uid 0
  with every capability dropped, the bounding set emptied and the securebits locked;
* no_new_privs, so no setuid program gives privileges back;
* the layers that need no privilege, last (``harden``): a seccomp filter (no ptrace, keyrings,
  System V IPC, new namespaces; no new sockets without a network namespace and a private view)
  and Landlock (files: read the system and Python, write only the working directory; no TCP;
  no signal or abstract socket beyond its own processes), each where the kernel has it.

A process that has threads already (a Jupyter kernel) cannot fork-isolate itself; there enter()
applies the limits, the environment and no_new_privs in place, and reports exactly that.
Reference values never reach this package: the job holds the student's cells, what to capture,
and the given inputs, nothing of the solution's results.

The package, in the order a run meets it:

    probe   what the platform allows (``Features``, ``features()``, ``job_uid``)
    cgroup  the run's memory cgroup: made by the keeper, joined by the run, read and removed by the grader
    disk    without a tmpfs of its own, the keeper's watch on what the run writes (``disk_mb``)
    host    the grader's side: working directory, environment, ``terminate`` and its /proc helpers
    enter   the student's side: ``enter``, ``enter_session``, the limits, the in-place fallback
    tree    the keeper, the namespace's init and a session's runs, as processes
    root    the private filesystem view (what is bound into the new root, and the pivot)
    harden  the unprivileged layers, applied last: root's capabilities, ``seccomp``, ``landlock``
    linux   the kernel calls Python has no function for (unshare, mount, pivot_root, prctl, ...)

Only the names below are for the rest of the grader; the modules' other names are shared
within the package alone.
"""

from __future__ import annotations

from grader.errors import SandboxError, SessionSetupError
from grader.run.sandbox import cgroup
from grader.run.sandbox.cgroup import oom_kills
from grader.run.sandbox.disk import filled as disk_filled
from grader.run.sandbox.enter import enter, enter_session
from grader.run.sandbox.host import (
    WORKDIR_PREFIX,
    Turn,
    cpu_waits,
    environment,
    limit_reached,
    prepare_workdir,
    remove_workdir,
    terminate,
    tree_cpu,
    turn,
)
from grader.run.sandbox.linux import set_name
from grader.run.sandbox.probe import (
    FEATURES,
    UID_BASE,
    Features,
    features,
    header,
    job_uid,
    not_enforced,
    sessions_possible,
)
from grader.run.sandbox.seccomp import prepare as prepare_seccomp
from grader.run.sandbox.tree import LAST_RUN, await_run, empty_places, writable_places
from grader.run.sandbox.zygote import settle

__all__ = [
    "FEATURES",
    "LAST_RUN",
    "UID_BASE",
    "WORKDIR_PREFIX",
    "cgroup",
    "cpu_waits",
    "tree_cpu",
    "Features",
    "SandboxError",
    "SessionSetupError",
    "await_run",
    "disk_filled",
    "empty_places",
    "enter",
    "enter_session",
    "environment",
    "features",
    "header",
    "job_uid",
    "not_enforced",
    "oom_kills",
    "prepare_seccomp",
    "prepare_workdir",
    "remove_workdir",
    "sessions_possible",
    "set_name",
    "settle",
    "terminate",
    "limit_reached",
    "Turn",
    "turn",
    "writable_places",
]
