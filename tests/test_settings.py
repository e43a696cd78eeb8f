"""The hostile suite in every setting this machine can reproduce, not only the one pytest runs in.

The rest of the suite runs as whoever runs pytest (on the development machine: root with every
capability). Here the whole of ``tests/test_sandbox.py`` runs again, in a fresh pytest, as the
grader would run in

* a Docker container with the default capabilities: root, but only Docker's 14 capabilities
  (no ``CAP_SYS_ADMIN``, so no namespaces), through ``capsh --drop``;
* a non-root user (a user made for the purpose), with user namespaces where the kernel allows
  them, and without them (a GitHub Actions runner on Ubuntu 24.04 forbids them: reproduced by a
  seccomp filter on ``unshare``/``clone`` that the row starts under).

Each row must pass: every hostile notebook gets the same outcome as on a privileged machine,
or, where a protection is missing, its test is skipped with the reason the scorecard gives. What
``sandbox.features()`` finds in each row (what its report header and scorecards list) is checked
against the protections the setting must have.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from grader.run.sandbox.probe import usable_by_another_user
from grader.run.sandbox.root import python_paths

# Docker's default capability set (moby's defaults); capsh drops every other one from the bounding set.
DOCKER_CAPS = {"cap_chown", "cap_dac_override", "cap_fsetid", "cap_fowner", "cap_mknod", "cap_net_raw",
               "cap_setgid", "cap_setuid", "cap_setfcap", "cap_setpcap", "cap_net_bind_service",
               "cap_sys_chroot", "cap_kill", "cap_audit_write"}
SUITE = ["tests/test_sandbox.py"]
STUDENT_USER = "grader-ci"
# Run before the row's pytest: what an Ubuntu 24.04 runner does to unprivileged user namespaces.
NO_USERNS = (
    "import errno, os, sys, pyseccomp as sc\n"
    "f = sc.SyscallFilter(sc.ALLOW)\n"
    "f.add_rule(sc.ERRNO(errno.EPERM), 'unshare', sc.Arg(0, sc.MASKED_EQ, 0x10000000, 0x10000000))\n"
    "f.add_rule(sc.ERRNO(errno.EPERM), 'clone', sc.Arg(0, sc.MASKED_EQ, 0x10000000, 0x10000000))\n"
    "f.add_rule(sc.ERRNO(errno.ENOSYS), 'clone3')\n"
    "f.load()\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


def run_row(prefix: list[str], env: dict[str, str] | None = None) -> tuple[str, dict[str, int]]:
    """Run the hostile suite under ``prefix``; its output and its counts (passed, failed, skipped...)."""
    cmd = [*prefix, sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *SUITE]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=540,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    out = proc.stdout + proc.stderr
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error|errors)", out.splitlines()[-1])}
    assert proc.returncode == 0, out[-6000:]
    return out, counts


def found_there(prefix: list[str], env: dict[str, str] | None = None) -> set[str]:
    """The protections ``sandbox.features()`` finds in that setting (what its scorecards list)."""
    code = "import json; from grader.run import sandbox; print(json.dumps(sandbox.features().active()))"
    proc = subprocess.run([*prefix, sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, check=True)
    return set(json.loads(proc.stdout))


def docker_drop() -> str:
    found = subprocess.run(["capsh", "--print"], capture_output=True, text=True, check=True).stdout
    bounding = next(line for line in found.splitlines() if line.startswith("Bounding set ="))
    caps = bounding.split("=", 1)[1].strip().split(",")
    return ",".join(c for c in caps if c and c not in DOCKER_CAPS)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can drop to Docker's capability set")
def test_hostile_suite_in_a_container_with_dockers_default_capabilities():
    if shutil.which("capsh") is None:
        pytest.skip("capsh is missing: `make setup` installs libcap2-bin where it runs as root")
    prefix = ["capsh", f"--drop={docker_drop()}", "--", "-c", 'exec "$0" "$@"']
    found = found_there(prefix)
    _, counts = run_row(prefix)
    # No namespaces there: the unprivileged layers carry the protections instead.
    assert not {"network", "filesystem"} & found
    assert {"landlock", "landlock_net", "scoped", "seccomp", "no_sockets", "no_new_privs"} <= found
    assert "user" in found or "no_caps" in found
    assert counts["passed"] >= 30 and counts.get("failed", 0) == 0


def _user() -> pwd.struct_passwd:
    """The unprivileged user the rows below run as, made where the tests run as root."""
    if not usable_by_another_user(python_paths(), sys.executable):
        pytest.skip(f"the Python installation ({sys.base_prefix}) is not readable by another user on this "
                    "machine, so a non-root grader cannot start here")
    try:
        return pwd.getpwnam(STUDENT_USER)
    except KeyError:
        if os.geteuid() != 0 or shutil.which("useradd") is None:
            pytest.skip("not root (or no useradd): cannot make a user for the non-root rows")
        subprocess.run(["useradd", "--system", "--no-create-home", STUDENT_USER], check=True)
        return pwd.getpwnam(STUDENT_USER)


@pytest.mark.parametrize("userns", [True, False], ids=["with user namespaces", "without user namespaces"])
def test_hostile_suite_as_a_non_root_user(userns, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the suite already runs as a non-root user here")
    user = _user()
    if not usable_by_another_user([str(ROOT)]):
        pytest.skip(f"the project ({ROOT}) is not readable by another user here")
    prefix = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--"]
    if not userns:
        prefix += [sys.executable, "-c", NO_USERNS]
    tmp_path.chmod(0o777)
    env = {"HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    found = found_there(prefix, env)
    _, counts = run_row(prefix, env)
    assert "user" not in found and "no_caps" not in found
    if not userns:
        assert "userns" not in found
    assert {"landlock", "seccomp"} <= found
    assert counts.get("failed", 0) == 0
