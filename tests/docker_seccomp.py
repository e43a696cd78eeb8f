"""Docker's default seccomp profile, loaded around a command: the setting of a grader run by
Docker as Gradescope and most CI run it (``tests/test_settings.py``).

    python tests/docker_seccomp.py PROFILE.json COMMAND ARGS...

reads a profile in Docker's JSON format (``defaultAction``, ``archMap``, ``syscalls`` with their
``includes`` and ``excludes`` conditions on capabilities, architectures and the kernel version),
builds the filter the way Docker does for a container with Docker's default capabilities
(``DOCKER_CAPS``), with libseccomp through ``pyseccomp``, loads it into this process, and runs
the command under it. As Docker does, without no_new_privs (this process is root, with
``CAP_SYS_ADMIN``, when it loads the filter), and a rule naming a system call this libseccomp or
architecture does not know is left out.

The profile itself is not in this repository: ``make test-setup`` takes Docker's own (Debian's package
of Docker, ``golang-github-docker-docker-dev``: its ``profiles/seccomp/default.json`` alone,
without installing the package) to ``PROFILE`` below.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import sys

PROFILE = "/usr/local/share/grader-tests/docker-default-seccomp.json"  # where `make test-setup` puts it
# Docker's default capabilities (moby's defaults), as the profile's conditions name them.
DOCKER_CAPS = frozenset(
    {
        "CAP_CHOWN",
        "CAP_DAC_OVERRIDE",
        "CAP_FSETID",
        "CAP_FOWNER",
        "CAP_MKNOD",
        "CAP_NET_RAW",
        "CAP_SETGID",
        "CAP_SETUID",
        "CAP_SETFCAP",
        "CAP_SETPCAP",
        "CAP_NET_BIND_SERVICE",
        "CAP_SYS_CHROOT",
        "CAP_KILL",
        "CAP_AUDIT_WRITE",
    }
)
# This machine's architecture in the profile's words, and libseccomp's names for the others.
NATIVE = {
    "x86_64": "SCMP_ARCH_X86_64",
    "aarch64": "SCMP_ARCH_AARCH64",
    "s390x": "SCMP_ARCH_S390X",
    "riscv64": "SCMP_ARCH_RISCV64",
}
ARCH_NAMES = {
    "SCMP_ARCH_X86": "x86",
    "SCMP_ARCH_X86_64": "amd64",
    "SCMP_ARCH_X32": "x32",
    "SCMP_ARCH_ARM": "arm",
    "SCMP_ARCH_AARCH64": "arm64",
    "SCMP_ARCH_S390": "s390",
    "SCMP_ARCH_S390X": "s390x",
    "SCMP_ARCH_RISCV64": "riscv64",
}


def _kernel() -> tuple[int, int]:
    major, minor = platform.release().split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def applies(rule: dict, caps: frozenset[str], arch: str, kernel: tuple[int, int]) -> bool:
    """Whether a rule of the profile is part of the filter for a container with ``caps`` on ``arch``
    (the profile's own conditions: every included capability present, no excluded one, the
    architecture among those included and not among those excluded, the kernel new enough)."""
    inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
    short = ARCH_NAMES.get(arch, arch)
    if not set(inc.get("caps") or ()) <= caps or set(exc.get("caps") or ()) & caps:
        return False
    if inc.get("arches") and short not in inc["arches"]:
        return False
    if short in (exc.get("arches") or ()):
        return False
    if exc.get("minKernel") and kernel >= tuple(int(x) for x in exc["minKernel"].split(".")[:2]):
        return False
    if inc.get("minKernel"):
        want = tuple(int(x) for x in inc["minKernel"].split(".")[:2])
        if kernel < want:
            return False
    return True


def build(profile: dict, caps: frozenset[str] = DOCKER_CAPS):  # -> pyseccomp.SyscallFilter
    import pyseccomp as sc

    def action(name: str, errno_ret: int | None) -> int:
        if name == "SCMP_ACT_ALLOW":
            return sc.ALLOW
        if name == "SCMP_ACT_ERRNO":
            return sc.ERRNO(errno.EPERM if errno_ret is None else errno_ret)
        if name in ("SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD"):
            return sc.KILL
        if name == "SCMP_ACT_KILL_PROCESS":
            return sc.KILL_PROCESS
        if name == "SCMP_ACT_LOG":
            return sc.LOG
        raise ValueError(f"the profile has an action this loader does not know: {name}")

    ops = {
        "SCMP_CMP_NE": sc.NE,
        "SCMP_CMP_LT": sc.LT,
        "SCMP_CMP_LE": sc.LE,
        "SCMP_CMP_EQ": sc.EQ,
        "SCMP_CMP_GE": sc.GE,
        "SCMP_CMP_GT": sc.GT,
        "SCMP_CMP_MASKED_EQ": sc.MASKED_EQ,
    }
    arch = NATIVE[os.uname().machine]
    f = sc.SyscallFilter(action(profile["defaultAction"], profile.get("defaultErrnoRet")))
    f.set_attr(sc.Attr.CTL_NNP, 0)  # Docker sets no_new_privs only when asked to
    for entry in profile.get("archMap") or ():
        if entry["architecture"] == arch:
            for sub in entry.get("subArchitectures") or ():
                try:
                    f.add_arch(getattr(sc.Arch, sub.removeprefix("SCMP_ARCH_")))
                except (AttributeError, OSError):
                    pass  # an architecture this libseccomp cannot add
    kernel = _kernel()
    for rule in profile["syscalls"]:
        if not applies(rule, caps, arch, kernel):
            continue
        act = action(rule["action"], rule.get("errnoRet"))
        args = [sc.Arg(a["index"], ops[a["op"]], a["value"], a.get("valueTwo", 0)) for a in rule.get("args") or ()]
        for name in rule.get("names") or [rule["name"]]:
            try:
                f.add_rule(act, name, *args)
            except (OSError, ValueError, RuntimeError):
                pass  # a system call this libseccomp or architecture does not have, as Docker skips it
    return f


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        raise SystemExit("usage: docker_seccomp.py PROFILE.json COMMAND ARGS...")
    with open(argv[1]) as f:
        profile = json.load(f)
    build(profile).load()
    os.execvp(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv)
