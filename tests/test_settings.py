"""The hostile suite in every setting this machine can reproduce, not only the one pytest runs in.

The rest of the suite runs as whoever runs pytest (on the development machine: root with every
capability). Here a representative part of it (``ROW``: theft, the network, the kernel's
interfaces, a fork loop, the disk, a fork bomb beside an honest notebook, what the scorecard
says) runs again, in a fresh pytest, as the grader would run in

* a Docker container with the default capabilities: root, but only Docker's 14 capabilities
  (no ``CAP_SYS_ADMIN``, so no namespaces), through ``capsh --drop``;
* the same container under Docker's default seccomp profile as well, loaded before the grader
  starts (``tests/docker_seccomp.py``);
* an ordinary user (a user made for the purpose), with user namespaces where the kernel allows
  them, and without them (a GitHub Actions runner on Ubuntu 24.04 forbids them: reproduced by a
  seccomp filter on ``unshare``/``clone`` that the row starts under).

Every row runs Debian's ``/usr/bin/python3.11`` through a virtual environment outside /root
(``user_python``), as a CI image or Gradescope's ``setup.sh`` has it, so that another uid can run
it. Each row must pass: every hostile notebook gets the same outcome as on a privileged machine,
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
import tempfile
from pathlib import Path

import docker_seccomp
import pytest
import readable

from grader.run.sandbox.probe import usable_by_another_user

# Docker's default capability set (moby's defaults); capsh drops every other one from the bounding set.
DOCKER_CAPS = {
    "cap_chown",
    "cap_dac_override",
    "cap_fsetid",
    "cap_fowner",
    "cap_mknod",
    "cap_net_raw",
    "cap_setgid",
    "cap_setuid",
    "cap_setfcap",
    "cap_setpcap",
    "cap_net_bind_service",
    "cap_sys_chroot",
    "cap_kill",
    "cap_audit_write",
}
DEBIAN_PYTHON = "/usr/bin/python3.11"  # `make test-setup` installs it where it runs as root
# The part of the hostile suite each setting runs: one case of each kind of threat.
ROW = [
    "tests/test_sandbox.py::test_scorecard_names_the_protections_the_run_had",
    "tests/test_sandbox.py::test_as_root_student_code_gets_a_user_and_a_process_limit_of_its_own",
    "tests/test_sandbox.py::test_unprivileged_grader_uses_a_user_namespace",
    "tests/test_sandbox.py::test_process_floods_are_stopped_and_nothing_is_left_running[fork loop]",
    "tests/test_sandbox.py::test_exits_and_kills_end_at_most_the_notebook[kill parent]",
    "tests/test_sandbox.py::test_course_files_other_submissions_and_scorecards_are_out_of_reach",
    "tests/test_sandbox.py::test_a_notebook_that_runs_the_solution_it_finds_scores_nothing",
    "tests/test_sandbox.py::test_kernel_interfaces_numerical_code_never_needs_are_refused",
    "tests/test_sandbox.py::test_loopback_server_of_the_host_is_refused",
    "tests/test_sandbox.py::test_file_size_disk_and_open_files_are_limited",
    "tests/test_limits.py::test_a_fork_bomb_beside_an_honest_notebook_costs_it_no_point",
    "tests/test_limits.py::test_a_fork_and_thread_burst_never_holds_more_than_the_limit",
]
STUDENT_USERS = ("grader-ci", "grader-ci-2")  # one for each ordinary-user row
# Run before the row's pytest: what an Ubuntu 24.04 runner does to unprivileged user namespaces.
NO_USERNS = (
    "import errno, os, sys, pyseccomp as sc\n"
    "f = sc.SyscallFilter(sc.ALLOW)\n"
    "f.add_rule(sc.ERRNO(errno.EPERM), 'unshare', sc.Arg(0, sc.MASKED_EQ, 0x10000000, 0x10000000))\n"
    "f.add_rule(sc.ERRNO(errno.EPERM), 'clone', sc.Arg(0, sc.MASKED_EQ, 0x10000000, 0x10000000))\n"
    "f.add_rule(sc.ERRNO(errno.ENOSYS), 'clone3')\n"
    "f.load()\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


@pytest.fixture(scope="module")
def place():
    """A folder every user may search (``/tmp`` need not be), for the rows' Python and temporary files."""
    base = Path(tempfile.mkdtemp(prefix="grader-settings-", dir="/var/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def checkout(place) -> Path:
    """This checkout where every user may read it (``readable``: a copy of it if need be)."""
    return readable.checkout(place)


@pytest.fixture(scope="module")
def user_python(place, checkout) -> Path:
    """Debian's python3.11 in a virtual environment outside /root that another uid can run. Its
    packages are this checkout's own (``.venv``'s site-packages, added as a site directory, or
    their copy where another user cannot read them), so making it downloads nothing and takes a
    second or two; torch is never imported."""
    if not os.path.exists(DEBIAN_PYTHON):
        pytest.skip(f"{DEBIAN_PYTHON} is missing: `make test-setup` installs Debian's python3.11 where it runs as root")
    packages = str(readable.site_packages(place))
    venv = place / "python"
    subprocess.run([DEBIAN_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    own = subprocess.run(
        [str(venv / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(own, "grader-packages.pth").write_text(f"import site; site.addsitedir({packages!r})\n")
    if not usable_by_another_user([packages, str(checkout)], str(venv / "bin/python")):
        pytest.skip(f"this checkout ({checkout}) or its packages ({packages}) are not readable by another user here")
    return venv / "bin/python"


def found_there(python: Path, prefix: list[str], env: dict[str, str], root: Path) -> set[str]:
    """The protections ``sandbox.features()`` finds in that setting (what its scorecards list)."""
    code = "import json; from grader.run import sandbox; print(json.dumps(sandbox.features().active()))"
    proc = subprocess.run(
        [*prefix, str(python), "-c", code], cwd=root, capture_output=True, text=True, timeout=60, env=env, check=True
    )
    return set(json.loads(proc.stdout))


def row_env(place: Path, root: Path, name: str, owner: int | None = None) -> dict[str, str]:
    """The environment of a row: its own home and temporary folder, the checkout on the path."""
    home = place / name
    home.mkdir(mode=0o755)
    if owner is not None:
        os.chown(home, owner, owner)
    return {**os.environ, "HOME": str(home), "TMPDIR": str(home), "PYTHONPATH": str(root)}


class Skip(Exception):
    """A setting this machine cannot reproduce, and why."""


def docker_prefix(python: Path, root: Path, profile: bool) -> list[str]:
    if os.geteuid() != 0:
        raise Skip("only root can drop to Docker's capability set")
    if shutil.which("capsh") is None:
        raise Skip("capsh is missing: `make test-setup` installs libcap2-bin where it runs as root")
    if profile and not os.path.exists(docker_seccomp.PROFILE):
        raise Skip(f"{docker_seccomp.PROFILE} is missing: `make test-setup` takes it from Debian's package of Docker")
    found = subprocess.run(["capsh", "--print"], capture_output=True, text=True, check=True).stdout
    bounding = next(line for line in found.splitlines() if line.startswith("Bounding set ="))
    caps = bounding.split("=", 1)[1].strip().split(",")
    drop = ",".join(c for c in caps if c and c not in DOCKER_CAPS)
    prefix = ["capsh", f"--drop={drop}", "--", "-c", 'exec "$0" "$@"']
    return [str(python), str(root / "tests/docker_seccomp.py"), docker_seccomp.PROFILE, *prefix] if profile else prefix


def user(name: str) -> pwd.struct_passwd:
    """An ordinary user for a row, made where the tests run as root. Each row that runs as one has
    a user of its own: rows run at once, and two graders of one user share its process count."""
    if os.geteuid() != 0:
        raise Skip("the suite already runs as an ordinary user here")
    try:
        return pwd.getpwnam(name)
    except KeyError:
        if shutil.which("useradd") is None:
            raise Skip("no useradd: cannot make a user for the ordinary-user rows") from None
        subprocess.run(["useradd", "--system", "--no-create-home", name], check=True)
        return pwd.getpwnam(name)


def user_prefix(python: Path, who: pwd.struct_passwd, userns: bool) -> list[str]:
    prefix = ["setpriv", f"--reuid={who.pw_uid}", f"--regid={who.pw_gid}", "--clear-groups", "--"]
    return prefix if userns else [*prefix, str(python), "-c", NO_USERNS]


class Rows:
    """Every setting's row, started at once: a row mostly waits (on forks, sleeps, a fork bomb's
    hold), so together they take about as long as the longest. ``result`` waits for one."""

    def __init__(self, python: Path, place: Path, root: Path):
        self.python, self.skipped, self.running = python, {}, {}
        settings = {}
        for name, profile in (("docker", False), ("docker-seccomp", True)):
            settings[name] = lambda profile=profile, name=name: (
                docker_prefix(python, root, profile),
                row_env(place, root, name),
            )
        for name, userns, login in (("user", True, STUDENT_USERS[0]), ("user-no-userns", False, STUDENT_USERS[1])):

            def make(userns: bool = userns, login: str = login, name: str = name) -> tuple[list[str], dict[str, str]]:
                who = user(login)
                return user_prefix(python, who, userns), row_env(place, root, name, who.pw_uid)

            settings[name] = make
        for name, make in settings.items():
            try:
                prefix, env = make()
            except Skip as why:
                self.skipped[name] = str(why)
                continue
            found = found_there(python, prefix, env, root)
            cmd = [*prefix, str(python), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *ROW]
            proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.running[name] = (found, proc)

    def result(self, name: str) -> tuple[set[str], dict[str, int]]:
        """What the probe found in that setting, and the counts of its row (passed, failed, skipped...)."""
        if name in self.skipped:
            pytest.skip(self.skipped[name])
        found, proc = self.running[name]
        out, _ = proc.communicate(timeout=540)
        counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error|errors)", out.splitlines()[-1])}
        assert proc.returncode == 0, out[-6000:]
        return found, counts

    def close(self) -> None:
        for _, proc in self.running.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


@pytest.fixture(scope="module")
def rows(user_python, place, checkout):
    started = Rows(user_python, place, checkout)
    yield started
    started.close()


@pytest.mark.parametrize("name", ["docker", "docker-seccomp"], ids=["capabilities", "capabilities and seccomp profile"])
def test_hostile_suite_in_a_container_with_dockers_defaults(name, rows):
    found, counts = rows.result(name)
    # No namespaces there: the unprivileged layers carry the protections instead (Docker's profile
    # allows Landlock and seccomp), the keeper bounds the disk, and student code has a uid of its own
    # (Python and the temporary folder are open to every user), so its process limit holds.
    assert not {"network", "filesystem"} & found
    assert {
        "landlock",
        "landlock_net",
        "scoped",
        "seccomp",
        "no_sockets",
        "no_new_privs",
        "user",
        "processes",
        "disk",
    } <= found
    assert counts["passed"] >= 8 and counts.get("failed", 0) == 0


@pytest.mark.parametrize("name", ["user", "user-no-userns"], ids=["with user namespaces", "without user namespaces"])
def test_hostile_suite_as_an_ordinary_user(name, rows):
    found, counts = rows.result(name)
    assert "user" not in found and "no_caps" not in found
    assert {"landlock", "seccomp", "processes"} <= found
    if name == "user":
        assert {"userns", "network", "filesystem"} <= found
    else:  # the turns keep one run's processes from another's; the keeper bounds the disk
        assert "userns" not in found and {"turns", "disk"} <= found
    assert counts["passed"] >= 8 and counts.get("failed", 0) == 0
