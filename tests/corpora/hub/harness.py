"""Plumbing for the blind multi-user review corpus: processes, HTTP, course copies, tokens.

Nothing here decides a case; cases.py does, from the promise of issue 43 and docs/review.md.
Every process started here is started in its own session and killed (its whole process group) on
exit, on SIGINT/SIGTERM and when its fixture is dropped.
"""

from __future__ import annotations

import atexit
import http.client
import http.cookiejar
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COURSE_SRC = HERE / "course"
COMMANDS_FILE = HERE / "commands.json"
LOOPBACK = "127.0.0.1"


def non_loopback_ip() -> str | None:
    """An address of this machine that is not loopback (a request from it is not from loopback)."""
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for addr in out.split():
        if ":" not in addr and not addr.startswith("127."):
            return addr
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect(("192.0.2.1", 9))
        addr = s.getsockname()[0]
        s.close()
        if not addr.startswith("127."):
            return addr
    except OSError:
        pass
    return None


def free_port() -> int:
    s = socket.socket()
    s.bind(("", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------- processes

_PROCS: list[Proc] = []
_LOCK = threading.Lock()


class Proc:
    """A process in its own session; its output is collected line by line."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str] | None = None, name: str = "") -> None:
        self.argv = argv
        self.name = name or Path(argv[0]).name
        self.lines: list[str] = []
        self.started = time.monotonic()
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env.setdefault("PYTHONUNBUFFERED", "1")
        full_env["PYTHONUNBUFFERED"] = "1"
        self.p = subprocess.Popen(
            argv,
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        with _LOCK:
            _PROCS.append(self)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for raw in iter(self.p.stdout.readline, b""):
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def alive(self) -> bool:
        return self.p.poll() is None

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str] | None:
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = rx.search(self.output)
            if m:
                return m
            if not self.alive():
                time.sleep(0.2)
                return rx.search(self.output)
            time.sleep(0.1)
        return None

    def wait_exit(self, timeout: float) -> int | None:
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self._reader.join(timeout=2)
        return rc

    def stop(self, grace: float = 6.0) -> int | None:
        """Ctrl-C first (the page writes its outputs on exit), then SIGTERM, then SIGKILL, to the group."""
        if self.p.poll() is None:
            for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
                try:
                    os.killpg(self.p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.p.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # anything left in the group (children of a managed service) goes too
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._reader.join(timeout=2)
        with _LOCK:
            if self in _PROCS:
                _PROCS.remove(self)
        return self.p.returncode


def kill_all() -> None:
    with _LOCK:
        procs = list(_PROCS)
    for p in procs:
        try:
            p.stop(grace=2.0)
        except Exception:  # noqa: BLE001 - best effort on the way out
            pass


def _on_signal(signum: int, _frame: Any) -> None:
    kill_all()
    sys.exit(128 + signum)


atexit.register(kill_all)
for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(_sig, _on_signal)


# ---------------------------------------------------------------- HTTP


@dataclass
class Resp:
    status: int | None  # None: no HTTP answer (refused, reset, timeout)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str = ""

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def short(self) -> str:
        if self.status is None:
            return f"no answer ({self.error[:60]})"
        return str(self.status)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # noqa: D102
        return None


def request(
    url: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | str | dict[str, Any] | None = None,
    timeout: float = 15.0,
    follow: bool = False,
    jar: http.cookiejar.CookieJar | None = None,
) -> Resp:
    data: bytes | None
    hdrs = dict(headers or {})
    if isinstance(body, dict):
        data = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    elif isinstance(body, str):
        data = body.encode()
    else:
        data = body
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    handlers: list[Any] = [] if follow else [_NoRedirect()]
    if jar is not None:
        handlers.append(urllib.request.HTTPCookieProcessor(jar))
    handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(req, timeout=timeout) as r:
            return Resp(r.status, {k.lower(): v for k, v in r.headers.items()}, r.read())
    except urllib.error.HTTPError as e:
        try:
            b = e.read()
        except Exception:  # noqa: BLE001
            b = b""
        return Resp(e.code, {k.lower(): v for k, v in (e.headers or {}).items()}, b)
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        return Resp(None, error=f"{type(e).__name__}: {e}")


# ---------------------------------------------------------------- commands.json


def commands() -> dict[str, Any]:
    return json.loads(COMMANDS_FILE.read_text())


def fmt_argv(template: str | list[str], **kw: Any) -> list[str]:
    if isinstance(template, list):
        return [str(a).format(**kw) for a in template]
    return shlex.split(template.format(**kw))


def grader_cmd() -> list[str]:
    g = os.environ.get("BLIND_HUB_GRADER") or commands().get("grader") or "/work/wt-hub/.venv/bin/grader"
    return shlex.split(g)


# ---------------------------------------------------------------- the course


class Workspace:
    """A temp folder holding one graded copy of the course; servers get copies of it."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="blind-hub-"))
        self.base = self.root / "base"
        self.log: list[str] = []
        self.graded_ok: bool | None = None
        self.grade_error = ""

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def prepare(self) -> bool:
        shutil.copytree(COURSE_SRC, self.base, ignore=shutil.ignore_patterns("scorecards", ".grader-cache"))
        r = subprocess.run(
            [*grader_cmd(), "grade", "submissions", "--assignment", "essay", "--out", "scorecards"],
            cwd=self.base,
            capture_output=True,
            text=True,
            timeout=120,
            start_new_session=True,
        )
        self.log.append(r.stdout + r.stderr)
        self.graded_ok = r.returncode == 0 and (self.base / "scorecards" / "grades.sqlite").exists()
        if not self.graded_ok:
            self.grade_error = (r.stdout + r.stderr).strip().splitlines()[-1:] and (
                r.stdout + r.stderr
            ).strip().splitlines()[-1]
        return bool(self.graded_ok)

    def copy(self, name: str) -> Path:
        dst = self.root / name
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(self.base, dst)
        return dst


def write_config(course: Path, graders_group: str | None = "graders") -> None:
    """config.yaml with or without `review: graders_group:`."""
    cfg = course / "config.yaml"
    text = cfg.read_text()
    text = re.sub(r"(?m)^review:\n(?:  .*\n)*", "", text)
    if graders_group is not None:
        text = text.replace("assignments:\n", f"review:\n  graders_group: {graders_group}\nassignments:\n", 1)
    cfg.write_text(text)


TOKEN_RX = re.compile(r"[A-Za-z0-9_\-~.]{16,}")


def find_token_for(name: str, output: str) -> str | None:
    """The token printed for a TA: a `token=` in a URL on a line naming them, else the longest
    token-like word on such a line (the name itself excluded)."""
    for line in output.splitlines():
        if name not in line:
            continue
        m = re.search(r"token=([A-Za-z0-9_\-~.%]+)", line)
        if m:
            return urllib.parse.unquote(m.group(1))
        words = [w for w in TOKEN_RX.findall(line.replace(name, " ")) if not w.startswith(("http", "127.", "/"))]
        words = [w for w in words if re.search(r"\d", w) and re.search(r"[A-Za-z]", w)]
        if words:
            return max(words, key=len)
    # a table: name on one line, token on the next
    lines = output.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.strip() == name or line.strip().endswith(name + ":"):
            words = TOKEN_RX.findall(lines[i + 1])
            if words:
                return max(words, key=len)
    return None


def find_link_for(name: str, output: str) -> str | None:
    for line in output.splitlines():
        if name in line:
            m = re.search(r"https?://\S+", line)
            if m:
                return m.group(0).rstrip(".,)")
    return None


# ---------------------------------------------------------------- a client for one TA


class Client:
    """Speaks to the page as one TA: the token as the page sends it (detected once)."""

    METHODS = ("x-review-token", "bearer", "authorization-token", "query", "cookie-from-link")

    def __init__(self, base: str, token: str | None, method: str | None = None, name: str = "") -> None:
        self.base = base.rstrip("/")
        self.token = token
        self.method = method
        self.name = name
        self.jar = http.cookiejar.CookieJar()
        self.extra: dict[str, str] = {}

    def auth(self, url: str) -> tuple[str, dict[str, str]]:
        h: dict[str, str] = dict(self.extra)
        t = self.token or ""
        if self.method == "x-review-token":
            h["X-Review-Token"] = t
        elif self.method == "bearer":
            h["Authorization"] = f"Bearer {t}"
        elif self.method == "authorization-token":
            h["Authorization"] = f"token {t}"
        elif self.method == "query":
            url += ("&" if "?" in url else "?") + "token=" + urllib.parse.quote(t)
        return url, h

    def detect(self, probe_path: str) -> str | None:
        for m in self.METHODS:
            self.method = m
            self.jar = http.cookiejar.CookieJar()
            if m == "cookie-from-link":
                request(self.base + "/?token=" + urllib.parse.quote(self.token or ""), jar=self.jar, follow=True)
            r = self.get(probe_path)
            if r.status == 200 and isinstance(r.json(), dict):
                return m
        self.method = None
        return None

    def get(self, path: str, headers: dict[str, str] | None = None, **kw: Any) -> Resp:
        url, h = self.auth(self.base + path)
        h.update(headers or {})
        return request(url, headers=h, jar=self.jar, **kw)

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None, **kw: Any) -> Resp:
        url, h = self.auth(self.base + path)
        h.update(headers or {})
        return request(url, method="POST", headers=h, body=body, jar=self.jar, **kw)


def poll(fn: Any, timeout: float, interval: float = 0.25) -> Any:
    """fn() until it returns something truthy, or timeout; the last value."""
    end = time.monotonic() + timeout
    v = fn()
    while not v and time.monotonic() < end:
        time.sleep(interval)
        v = fn()
    return v
