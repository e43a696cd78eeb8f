"""The grader's handle on one forking server: starting its process, and the requests on its socket.

Each request is one message (JSON, with the job's descriptors attached to ``fork``); each reply
is one message back. A server that does not answer in time, or whose socket is closed, is gone
(``ServerGone``): the executor replaces it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any

from grader import PACKAGE_DIR
from grader.errors import ExecutorError, ServerGone
from grader.run import sandbox
from grader.run.forking import HOME_PREFIX, MAX_MESSAGE, POOL, REPLY_TIMEOUT, START_TIMEOUT


class ForkServer:
    """One running server process and the socket to it. Not thread-safe: the executor locks."""

    def __init__(
        self,
        python: str,
        modules: tuple[str, ...],
        start_timeout: float = START_TIMEOUT,
        pool: int = POOL,
        reply_timeout: float = REPLY_TIMEOUT,
        plan: Callable[[], dict[str, bool] | None] | None = None,
    ):
        """Start the server. ``plan`` says, once the server process is started (so that probing the
        platform overlaps the server's imports), the sandbox its children set up for sessions
        (``sandbox.Features.to_wire()``), or None for none."""
        self.home = tempfile.mkdtemp(prefix=HOME_PREFIX)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.log = open(os.path.join(self.home, "server.log"), "w+b")
        env = {**sandbox.environment(self.home), "PYTHONPATH": os.path.dirname(PACKAGE_DIR)}
        try:
            self.proc = subprocess.Popen(
                [python, "-m", "grader.run.forking.server", str(theirs.fileno()), ",".join(modules), str(pool)],
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=self.log,
                cwd=self.home,
                env=env,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        except OSError as exc:
            self._cleanup()
            raise ExecutorError(f"The forking server could not be started with {python}: {exc.strerror}.") from None
        finally:
            theirs.close()
        self.sock.settimeout(start_timeout)
        try:
            wire = plan() if plan is not None else None
        except BaseException:
            self.close(wait=False)  # the server reads end-of-file and exits
            raise
        try:
            self._send({"op": "plan", "plan": wire})  # the server reads it once its imports are done
            hello = self._receive()
        except ServerGone:
            tail = self._log_tail()
            self.close()
            raise ExecutorError("The forking server did not start" + (f": {tail}" if tail else ".")) from None
        self.sock.settimeout(reply_timeout)
        self.pid: int = hello["pid"]
        self.preloaded: list[str] = hello.get("preloaded", [])
        self.threads: int = hello.get("threads", 0)

    def _receive(self) -> dict[str, Any]:
        try:
            data = self.sock.recv(MAX_MESSAGE)
        except (OSError, ValueError):
            raise ServerGone from None
        if not data:
            raise ServerGone
        try:
            reply: dict[str, Any] = json.loads(data)
        except ValueError:
            raise ServerGone from None
        return reply

    def _send(self, message: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
        try:
            if fds:
                socket.send_fds(self.sock, [json.dumps(message).encode()], list(fds))
            else:
                self.sock.sendall(json.dumps(message).encode())
        except (OSError, ValueError):
            raise ServerGone from None

    def fork(self, job_fd: int, event_fd: int, workdir: str = "") -> int:
        """A child for this job (``workdir``: the directory prepared for it, which the server
        removes if the grader is gone before it could)."""
        self._send({"op": "fork", "workdir": workdir}, (job_fd, event_fd))
        pid = self._receive().get("pid")
        if type(pid) is not int:
            raise ServerGone
        return pid

    def release(self, pid: int) -> None:
        try:
            self._send({"op": "release", "pid": pid})
        except ServerGone:
            pass  # a dead server's children were handed to init, which reaps them

    def ping(self) -> dict[str, Any]:
        self._send({"op": "ping"})
        return self._receive()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self, wait: bool = True) -> None:
        """Stop the server; it ends its remaining children before it exits. ``wait=False`` (the
        grader is exiting) leaves that to the server, which goes on without the grader."""
        try:
            self.sock.close()  # the server reads end-of-file, kills its children and exits
            if not wait:
                return
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        finally:
            self._cleanup()

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass
        self.close()

    def _log_tail(self) -> str:
        try:
            self.log.seek(0)
            lines = self.log.read().decode(errors="replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return lines[-1][:300] if lines else ""

    def _cleanup(self) -> None:
        try:
            self.log.close()
        except (OSError, AttributeError):
            pass
        shutil.rmtree(self.home, ignore_errors=True)
