"""The layers that need no privilege, applied last in the student process, before any student code.

``harden(plan, workdir)`` is the one hook ``enter`` calls, once the process has its uid, limits
and no_new_privs: it drops whatever capabilities a root without a uid of its own still has, loads
the seccomp filter (``memfd_create`` refused unless the course's limits allow it) and restricts
the process with Landlock, each as ``plan`` says (the probe found it works here). Each is set up once per process and
inherited by everything it starts.
"""

from __future__ import annotations

import ctypes

from grader.errors import SandboxError
from grader.run.sandbox import landlock, seccomp
from grader.run.sandbox.linux import drop_capabilities, libc
from grader.run.sandbox.probe import Features

PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 28, 47, 4
# noroot, no_setuid_fixup, keep_caps and no_cap_ambient_raise, each set and locked: uid 0 is an
# ordinary uid from now on, for this process and whatever it runs.
SECUREBITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80


def harden(plan: Features, workdir: str, *, memfd: bool = False) -> None:
    """Apply the unprivileged layers ``plan`` names; raises SandboxError if one cannot be.
    ``memfd``: the course lets student code make memfd files (``limits.memfd``)."""
    if plan.root and not plan.drop_user and not plan.user_ns:
        drop_root_capabilities()
    if plan.seccomp:
        seccomp.install(deny_sockets=plan.seccomp_sockets, deny_memfd=not memfd)
    if plan.landlock:
        landlock.restrict(workdir, private_tmp=plan.mount_ns)


def drop_root_capabilities() -> None:
    """Root keeps its uid but loses every capability, for good: ``DAC_OVERRIDE``, ``KILL``,
    ``SETUID`` and the rest never reach student code, and no program it runs gives them back."""
    c = libc()
    c.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)
    c.prctl(PR_SET_SECUREBITS, ctypes.c_ulong(SECUREBITS), 0, 0, 0)  # needs CAP_SETPCAP (Docker keeps it)
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        c.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0)  # refused without CAP_SETPCAP: no_new_privs still holds
    drop_capabilities()
    with open("/proc/self/status") as f:
        effective = next((line.split()[1] for line in f if line.startswith("CapEff:")), "0")
    if int(effective, 16):
        raise SandboxError(f"capabilities {effective} remain after dropping them all")
