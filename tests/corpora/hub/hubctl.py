"""A real JupyterHub (DummyAuthenticator, configurable-http-proxy) with the review page as a service.

Users: tess, uma and vera in the graders group, sam a student (group `students`), olga in `oldtas`
(a group that is not the graders group), root an admin in no group. Tokens for users are made
through the Hub's REST API by an admin service (`blindadmin`), with the scopes a user's own token
inherits, and sent as `Authorization: token ...` through the Hub's proxy, as HubAuth accepts.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import textwrap
import time
from pathlib import Path
from typing import Any

from harness import Proc, Resp, commands, fmt_argv, free_port, grader_cmd, poll, request

GROUPS = {"graders": ["tess", "uma", "vera"], "students": ["sam"], "oldtas": ["olga"]}
ADMINS = ["root"]
ALL_USERS = sorted({u for us in GROUPS.values() for u in us} | set(ADMINS))


def find_exe(key: str, fallbacks: list[str]) -> str | None:
    c = commands().get(key)
    for cand in [c, *fallbacks]:
        if not cand:
            continue
        p = shutil.which(cand) or (cand if Path(cand).exists() else None)
        if p:
            return p
    return None


def jupyterhub_exe() -> str | None:
    g = Path(grader_cmd()[0]).parent
    return find_exe("jupyterhub", [str(g / "jupyterhub")])


def chp_exe() -> str | None:
    g = Path(grader_cmd()[0]).resolve().parent.parent.parent
    return find_exe(
        "chp",
        [
            "configurable-http-proxy",
            str(g / "node_modules/.bin/configurable-http-proxy"),
            "/work/wt-hub/.venv/node/node_modules/.bin/configurable-http-proxy",
            str(Path(__file__).resolve().parent / ".tools/node_modules/.bin/configurable-http-proxy"),
        ],
    )


class Hub:
    def __init__(self, course: Path, managed: bool = True) -> None:
        self.course = course
        self.dir = course / "hub"
        self.dir.mkdir(exist_ok=True)
        self.port = free_port()
        self.hub_port = free_port()
        self.api_port = free_port()
        self.svc_port = free_port()
        self.admin_token = secrets.token_hex(24)
        self.svc_token = secrets.token_hex(24)
        self.url = f"http://127.0.0.1:{self.port}"
        self.api = f"http://127.0.0.1:{self.hub_port}/hub/api"
        self.prefix = commands().get("hub_service_prefix", "/services/review")
        self.managed = managed
        self.proc: Proc | None = None
        self.svc: Proc | None = None
        self.error = ""
        self.extra_args: list[str] = []
        # the page listens on every address: the Hub's proxy reaches it by loopback, anyone else must be refused
        self.listen = "0.0.0.0"

    def service_argv(self) -> list[str]:
        return (
            fmt_argv(
                commands()["hub_service_command"],
                grader=" ".join(grader_cmd()),
                port=self.svc_port,
                hub_listen=self.listen,
            )
            + self.extra_args
        )

    def config(self) -> str:
        svc: dict[str, Any] = {
            "name": "review",
            "url": f"http://127.0.0.1:{self.svc_port}",
            "api_token": self.svc_token,
            "oauth_no_confirm": True,
            "display": False,
            # what the service may learn of a user from the token it gets by OAuth: their groups
            "oauth_client_allowed_scopes": ["read:users:groups!user", "read:users:name!user"],
        }
        if self.managed:
            svc["command"] = self.service_argv()
            svc["cwd"] = str(self.course)
            svc["environment"] = {"PYTHONUNBUFFERED": "1"}
        extra = commands().get("hub_config_extra", "")
        return (
            textwrap.dedent(
                f"""
            c = get_config()  # noqa
            c.JupyterHub.ip = '127.0.0.1'
            c.JupyterHub.port = {self.port}
            c.JupyterHub.hub_ip = '127.0.0.1'
            c.JupyterHub.hub_port = {self.hub_port}
            c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{self.api_port}'
            c.ConfigurableHTTPProxy.command = [{json.dumps(chp_exe())}]
            c.JupyterHub.authenticator_class = 'dummy'
            c.Authenticator.allow_all = True
            c.Authenticator.admin_users = set({json.dumps(ADMINS)})
            c.JupyterHub.db_url = 'sqlite:///{self.dir}/hub.sqlite'
            c.JupyterHub.cookie_secret_file = '{self.dir}/cookie_secret'
            c.JupyterHub.pid_file = '{self.dir}/hub.pid'
            c.JupyterHub.log_level = 'WARN'
            c.JupyterHub.load_groups = {{g: {{'users': u}} for g, u in {json.dumps(GROUPS)}.items()}}
            c.JupyterHub.services = [{svc!r}, {{'name': 'blindadmin', 'api_token': '{self.admin_token}'}}]
            c.JupyterHub.load_roles = [
                {{'name': 'blindadmin', 'scopes': ['admin:users', 'admin:groups', 'tokens', 'list:users', 'read:users'], 'services': ['blindadmin']}},
                # every user of the Hub may reach the service: the service itself must refuse who is not a grader
                {{'name': 'user', 'scopes': ['self', 'access:services!service=review']}},
                # the service may read users and groups (for a check of membership by its own token)
                {{'name': 'review-service', 'scopes': ['read:users', 'read:groups', 'list:users', 'list:groups', 'read:users:groups'], 'services': ['review']}},
            ]
            """
            )
            + "\n"
            + extra.format(svc_port=self.svc_port)
            + "\n"
        )

    def start(self) -> bool:
        jh, chp = jupyterhub_exe(), chp_exe()
        if not jh or not chp:
            self.error = f"jupyterhub: {jh or 'not found'}, configurable-http-proxy: {chp or 'not found'}"
            return False
        (self.dir / "jupyterhub_config.py").write_text(self.config())
        env = {"PATH": f"{Path(chp).parent}:{Path(jh).parent}:{os.environ.get('PATH', '')}"}
        self.proc = Proc([jh, "-f", str(self.dir / "jupyterhub_config.py")], cwd=self.dir, env=env, name="jupyterhub")
        ok = poll(lambda: request(self.api + "/", timeout=2).status == 200 or not self.proc.alive(), 40, 0.3)
        if not ok or not self.proc.alive():
            self.error = "the Hub did not start: " + self.proc.output[-600:]
            return False
        if not self.managed:
            self.svc = Proc(
                self.service_argv(),
                cwd=self.course,
                env={
                    "JUPYTERHUB_API_TOKEN": self.svc_token,
                    "JUPYTERHUB_API_URL": self.api,
                    "JUPYTERHUB_BASE_URL": "/",
                    "JUPYTERHUB_SERVICE_NAME": "review",
                    "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{self.svc_port}",
                    "JUPYTERHUB_SERVICE_PREFIX": self.prefix + "/",
                    "JUPYTERHUB_CLIENT_ID": "service-review",
                    "JUPYTERHUB_OAUTH_CALLBACK_URL": self.prefix + "/oauth_callback",
                    "JUPYTERHUB_HOST": "",
                },
                name="review-service",
            )
        # the service answers (anything, even a redirect to the Hub's login) through the proxy
        up = poll(
            lambda: (request(self.url + self.prefix + "/", timeout=2).status or 0) not in (0, 503, 502, 404), 40, 0.3
        )
        if not up:
            self.error = "the review service did not answer through the Hub: " + self.output()[-800:]
            return False
        return True

    def output(self) -> str:
        return (self.proc.output if self.proc else "") + "\n" + (self.svc.output if self.svc else "")

    def stop(self) -> None:
        if self.svc:
            self.svc.stop()
        if self.proc:
            self.proc.stop(grace=8)
        # the Hub starts configurable-http-proxy in a session of its own: a Hub stopped the hard way
        # leaves it behind. Ours is the one whose --api-port is the port we chose for it.
        for pid in self._proxy_pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 3
        while self._proxy_pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in self._proxy_pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        (self.dir / "hub.pid").unlink(missing_ok=True)

    def _proxy_pids(self) -> list[int]:
        mine = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            text = b" ".join(cmd).decode("utf-8", "replace")
            if "configurable-http-proxy" in text and f"--api-port {self.api_port}" in text:
                mine.append(int(d.name))
        return mine

    def admin(self, method: str, path: str, body: Any = None) -> Resp:
        return request(
            self.api + path, method=method, headers={"Authorization": f"token {self.admin_token}"}, body=body
        )

    def token_for(self, user: str) -> str | None:
        self.admin("POST", f"/users/{user}")  # created if missing (409 if there)
        r = self.admin("POST", f"/users/{user}/tokens", {"note": "blind-hub", "expires_in": 3600})
        data = r.json()
        return data.get("token") if isinstance(data, dict) else None

    def remove_from_group(self, user: str, group: str = "graders") -> Resp:
        return self.admin("DELETE", f"/groups/{group}/users", {"users": [user]})
