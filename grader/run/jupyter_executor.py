"""The Jupyter executor (``--executor jupyter``): each notebook in a fresh Jupyter kernel, via nbclient.

Full fidelity, slow start (a kernel and its imports per notebook). It produces the same frames as
the student process of the other executors, so ``execute.run_with_retries`` drives it unchanged
(deadlines, killing the kernel's process group, re-running without a cell that hung):

    grader thread                         driver thread (nbclient)              kernel (ipykernel)
      run_with_retries  ◄── event pipe ──   for each cell:                      KernelSide:
                                              user_expressions: before(pos) ──►   captures at pos
                                              execute_request(cell source) ───►   the student's cell
                                              user_expressions: after(pos) ───►   how it ended

Student cells go through the kernel's own ``execute_request``, so ``%magics``, ``display()`` and
rich outputs behave as in Jupyter. Capturing, error descriptions and injections reuse
``grader.run.worker`` inside the kernel, and come back as the same plain-data JSON (as an
``application/json`` expression result; nothing is pickled). The kernel gets the scrubbed
environment and the job's limits (``grader.run.sandbox``) before the first cell.

The kernel side is ``grader.run.jupyter_kernel``.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import json
import os
import signal
import subprocess
import threading
from typing import Any

from grader import PACKAGE_DIR
from grader.errors import ExecutorError, ProtocolError
from grader.run import sandbox, worker
from grader.run.execute import SpawningExecutor
from grader.run.frames import HEADER
from grader.run.job import CellWire, JobWire, Message

KERNEL_NAME = "python3"
JOIN_TIMEOUT = 15.0  # seconds to wait for a driver thread after its kernel was killed
DEAD_KERNEL_NOTICE = 1.0  # seconds between nbclient's checks that the kernel is alive


# --------------------------------------------------------------------------------------------
# Grader side


def _call(method: str) -> str:
    """An expression that calls the kernel-side helper without binding any name in the notebook."""
    return f"__import__('grader.run.jupyter_kernel', fromlist=['kernel']).kernel.{method}"


def _client_class() -> type:
    from nbclient import NotebookClient

    class CountingClient(NotebookClient):
        """Counts the size of what cells print and display, and keeps none of it."""

        output_chars = 0

        def output(self, outs: list[Any], msg: dict[str, Any], display_id: str | None, cell_index: int) -> None:
            content = msg.get("content", {})
            if msg.get("msg_type") == "stream":
                self.output_chars += len(content.get("text", ""))
            elif msg.get("msg_type") in ("display_data", "execute_result"):
                self.output_chars += len(str(content.get("data", {}).get("text/plain", "")))
            return None

    return CountingClient


class _KernelRun:
    """One notebook in one kernel, driven from its own thread; writes frames to a pipe."""

    def __init__(self, executor: JupyterExecutor, wire: JobWire, workdir: str, fd: int):
        self.executor, self.wire, self.workdir, self.fd = executor, wire, workdir, fd
        self.lock = threading.Lock()
        self.pid: int | None = None
        self.stopped = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[None] | None = None
        self.thread = threading.Thread(target=self._main, name="grader-jupyter", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Kill the kernel's process group and wait for the driver thread to finish."""
        with self.lock:
            self.stopped = True
            pid, loop, task = self.pid, self.loop, self.task
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.thread.join(DEAD_KERNEL_NOTICE + 1)  # nbclient notices the dead kernel and cleans up
        if self.thread.is_alive() and loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:
                pass  # the loop has already finished
            self.thread.join(JOIN_TIMEOUT)

    def _main(self) -> None:
        try:
            asyncio.run(self._run())
        except BaseException:  # noqa: BLE001 - whatever ended the run, the grader sees the stream end and reports why
            if os.environ.get("GRADER_DEBUG"):
                import traceback

                traceback.print_exc()
        finally:
            try:
                os.close(self.fd)
            except OSError:
                pass

    async def _run(self) -> None:
        with self.lock:
            if self.stopped:
                return
            self.loop, self.task = asyncio.get_running_loop(), asyncio.current_task()
        await self._drive()

    def _send(self, message: Message) -> None:
        body = json.dumps(message).encode()
        data = HEADER.pack(len(body)) + body
        while data:
            data = data[os.write(self.fd, data) :]

    async def _helper(self, client: Any, method: str) -> Any:
        msg_id = client.kc.execute(
            "", silent=True, store_history=False, user_expressions={"r": _call(method)}, stop_on_error=False
        )
        reply = await client.async_wait_for_reply(msg_id)
        result = ((reply or {}).get("content", {}).get("user_expressions") or {}).get("r", {})
        if result.get("status") != "ok" or "application/json" not in result.get("data", {}):
            raise ProtocolError(
                f"the kernel's grading helper failed: {result.get('ename', '')} {result.get('evalue', '')}".strip()
            )
        return result["data"]["application/json"]

    async def _drive(self) -> None:
        import nbformat

        cells = self.wire["cells"]
        nb = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]  # nbformat has no annotations
        nb.cells = [nbformat.v4.new_code_cell(c["source"]) for c in cells]  # type: ignore[no-untyped-call]
        client = _client_class()(
            nb,
            kernel_name=self.executor.kernel_name,
            timeout=None,
            allow_errors=True,
            startup_timeout=self.executor.startup_timeout,
            shutdown_kernel="immediate",
            shell_timeout_interval=DEAD_KERNEL_NOTICE,
            record_timing=False,
            store_widget_state=False,
            resources={"metadata": {"path": self.workdir}},
        )
        env = {**sandbox.environment(self.workdir), "PYTHONPATH": os.path.dirname(PACKAGE_DIR)}
        try:
            await self._execute(client, cells, nb, env)
        finally:
            atexit.unregister(client._cleanup_kernel)  # left registered when the run is cancelled

    async def _execute(self, client: Any, cells: list[CellWire], nb: Any, env: dict[str, str]) -> None:
        async with client.async_setup_kernel(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            with self.lock:
                provisioner = client.km.provisioner
                self.pid = provisioner.pgid or getattr(provisioner.process, "pid", None)  # its own session
                if self.stopped:
                    return
            payload = base64.b64encode(json.dumps(self.wire).encode()).decode()
            self._send(await self._helper(client, f"setup({payload!r})"))  # the start message
            previous = None
            for pos, cell in enumerate(cells):
                for message in await self._helper(client, f"before({pos})"):
                    self._send(message)
                if cell.get("skip"):
                    self._send({"ev": "cell", "pos": pos, "phase": "end", "status": "skipped"})
                    previous = None
                    continue
                self._send({"ev": "cell", "pos": pos, "phase": "start"})
                previous = worker.continued_error(previous, cells, pos)
                if previous is not None:  # the rest of a cell whose first part raised (as the worker does)
                    self._send(previous)
                    continue
                client.output_chars = 0
                await client.async_execute_cell(nb.cells[pos], pos, store_history=False)
                end = await self._helper(client, f"after({pos})")
                end["output_bytes"] = client.output_chars
                self._send(end)
                previous = end
            for message in await self._helper(client, f"before({len(cells)})"):
                self._send(message)
            self._send({"ev": "done"})


class JupyterExecutor(SpawningExecutor):
    """Runs each notebook in a fresh Jupyter kernel through nbclient (full fidelity, slower)."""

    name = "jupyter"

    def __init__(self, kernel_name: str = KERNEL_NAME, startup_timeout: float = 60.0):
        self.kernel_name, self.startup_timeout = kernel_name, startup_timeout
        self.closed = False
        self._runs: set[_KernelRun] = set()
        self._lock = threading.Lock()

    def spawn(self, wire: JobWire, workdir: str) -> tuple[_KernelRun, int]:
        r, w = os.pipe()
        run = _KernelRun(self, wire, workdir, w)
        with self._lock:
            if self.closed:
                os.close(r)
                os.close(w)
                raise ExecutorError("The Jupyter executor was stopped; no more notebooks are run.")
            self._runs.add(run)
        run.start()
        return run, r

    def finish(self, handle: _KernelRun, complete: bool = True) -> None:
        handle.stop()
        with self._lock:
            self._runs.discard(handle)

    def close(self) -> None:
        """Kill the kernels still running; later notebooks are refused."""
        with self._lock:
            self.closed = True
            runs = list(self._runs)
        for run in runs:
            run.stop()
