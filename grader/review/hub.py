"""``grader review NAME --hub``: the page as a JupyterHub service, its graders the Hub's own users.

JupyterHub's ``HubOAuth`` (``jupyterhub.services.auth``) does the work, configured from the
``JUPYTERHUB_*`` variables the Hub sets for a managed service (or the instructor sets for an
external one): a browser without a session is sent to the Hub's OAuth page (with PKCE), the
callback (``JUPYTERHUB_OAUTH_CALLBACK_URL``, under the service's prefix) trades the code for a token,
and the token, signed, is kept in an HttpOnly cookie. Each request asks the Hub who the token's
user is (cached by HubOAuth for 5 seconds, so a TA taken out of the group is refused
within them) and admits members of the group config.yaml names
(``review.graders_group``); anyone else, a student of the Hub among them, gets 403. Each grade
records the Hub's user name.

With ``--split``, the graders are the group's members, read from the Hub's API with the service's
own token (its role needs ``read:groups!group=GROUP``; docs/review.md gives the lines).
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode, urlparse

from flask import Flask, g, redirect, request
from werkzeug.wrappers import Response

from grader.errors import UsageError
from grader.review.access import HEADER, csrf, plain_http_refused, refusal

NEEDED = ("JUPYTERHUB_API_TOKEN", "JUPYTERHUB_API_URL", "JUPYTERHUB_CLIENT_ID", "JUPYTERHUB_SERVICE_PREFIX")
MEMBERS_FOR = 30.0  # seconds the group's members (for --split) are kept before the Hub is asked again
CACHE = 5  # seconds HubOAuth keeps who a token's user is: a TA taken out of the group is refused after it


def hub_auth() -> Any:
    """JupyterHub's HubOAuth, from the environment the Hub gives a service; what is missing is said."""
    try:
        from jupyterhub.services.auth import HubOAuth
    except ImportError:
        raise UsageError(
            "--hub needs JupyterHub's Python package: pip install 'notebook-grader[hub]' (or jupyterhub)."
        ) from None
    missing = [name for name in NEEDED if not os.environ.get(name)]
    if missing:
        raise UsageError(
            f"--hub runs as a JupyterHub service, and {', '.join(missing)} is not set. A service the Hub starts "
            "(`command` in c.JupyterHub.services) has them; for an external one, set them as docs/review.md says."
        )
    return HubOAuth(api_token=os.environ["JUPYTERHUB_API_TOKEN"], cache_max_age=CACHE)


@dataclass
class HubMembers:
    """The members of one Hub group grade (see the module's docstring)."""

    auth: Any  # jupyterhub.services.auth.HubOAuth
    group: str
    secret: str
    poll_ms: int = 1500
    _members: tuple[float, list[str]] = field(default=(0.0, []))

    @property
    def prefix(self) -> str:
        return str(self.auth.base_url)

    @property
    def callback(self) -> str:
        """The OAuth callback's path inside the app (under the service's prefix)."""
        path = urlparse(str(self.auth.oauth_redirect_uri)).path
        if not path.startswith(self.prefix):
            raise UsageError(
                f"JUPYTERHUB_OAUTH_CALLBACK_URL ({path}) is not under the service's prefix ({self.prefix})."
            )
        return "/" + path[len(self.prefix) :].lstrip("/")

    def signer(self) -> Any:
        from itsdangerous import URLSafeSerializer

        return URLSafeSerializer(self.secret, salt="grader-review-hub")

    def admit(self) -> Response | None:
        refused = plain_http_refused()
        if refused is not None:
            return refused
        if request.path == self.callback:
            return None
        from itsdangerous import BadSignature

        try:
            token = self.signer().loads(request.cookies.get(self.cookie, "")) if self.cookie in request.cookies else ""
        except BadSignature:  # another start's secret, or a forged cookie: signed in again
            token = ""
        user = self.user(token) if isinstance(token, str) and token else None
        if isinstance(user, Response):
            return user
        if user is None:
            if request.method != "GET" or request.path.startswith("/api/"):
                return refusal(401, "Not signed in to the Hub (or the session ended): load the page again.")
            return self.login()
        name = str(user.get("name", ""))
        if self.group not in (user.get("groups") or []):
            return refusal(
                403,
                f"Forbidden: you are signed in to the Hub as {name}, who is not in the group "
                f"{self.group!r} that grades here. Ask the instructor if you should be.",
            )
        if request.method not in ("GET", "HEAD") and request.headers.get(HEADER, "") != csrf(self.secret, name):
            return refusal(403, "Refused: a change must come from the grading page itself.")
        g.grader = name
        return None

    @property
    def cookie(self) -> str:
        return f"{self.auth.oauth_client_id}-grader"

    def user(self, token: str) -> dict[str, Any] | Response | None:
        try:
            found = self.auth.user_for_token(token)
        except Exception as exc:  # noqa: BLE001 (the Hub down or refusing: said, never a traceback)
            return refusal(503, f"The Hub does not answer who you are ({exc}); try again in a moment.")
        return found if isinstance(found, dict) else None

    def login(self) -> Response:
        """Off to the Hub's OAuth page; back at ``callback`` with a code, then to this page."""
        params, extra = {}, {}
        if getattr(self.auth, "pkce_enabled", False):  # JupyterHub 6 and later
            verifier, challenge, method = self.auth.generate_pkce_code_challenge()
            params = {"code_challenge": challenge, "code_challenge_method": method}
            extra = {"code_verifier": verifier}
        state = self.auth.generate_state(next_url=request.script_root + request.full_path.rstrip("?"), **extra)
        params["state"] = state
        resp = redirect(f"{self.auth.login_url}&{urlencode(params)}")
        resp.set_cookie(
            self.auth.state_cookie_name,
            state,
            max_age=600,
            httponly=True,
            path=self.prefix,
            secure=request.scheme == "https",
        )
        return resp

    def finish(self) -> Response:
        """The OAuth callback: the state checked against the browser's cookie, the code traded for a token."""
        state, code = request.args.get("state", ""), request.args.get("code", "")
        if request.args.get("error"):
            return refusal(
                400, f"The Hub refused the sign-in: {request.args.get('error_description') or request.args['error']}."
            )
        if not code or not state or state != request.cookies.get(self.auth.state_cookie_name):
            return refusal(
                403, "The sign-in does not match this browser's (an old or foreign link): load the page again."
            )
        next_url = self.auth.get_next_url(state)
        verifier = self.auth.get_code_verifier(state) if hasattr(self.auth, "get_code_verifier") else None
        self.auth.clear_oauth_state(state)
        try:
            token = (
                self.auth.token_for_code(code, code_verifier=verifier) if verifier else self.auth.token_for_code(code)
            )
        except Exception as exc:  # noqa: BLE001
            return refusal(503, f"The Hub did not complete the sign-in ({exc}): load the page again.")
        resp = redirect(next_url if str(next_url).startswith(self.prefix) else self.prefix)  # its own pages only
        secure = request.scheme == "https"
        resp.set_cookie(
            self.cookie, self.signer().dumps(token), httponly=True, samesite="Lax", path=self.prefix, secure=secure
        )
        resp.delete_cookie(self.auth.state_cookie_name, path=self.prefix)
        return resp

    def link_token(self) -> str | None:
        return None

    def graders(self) -> list[str]:
        """The group's members (sorted), as the Hub says; while it does not (no scope to read the
        group, the Hub down), the last answer, or none."""
        at, members = self._members
        if not at or time.monotonic() - at >= MEMBERS_FOR:
            try:
                members = self.members()
            except UsageError:
                pass
            self._members = (time.monotonic(), members)
        return members

    def members(self) -> list[str]:
        url = f"{str(self.auth.api_url).rstrip('/')}/groups/{quote(self.group, safe='')}"
        req = urllib.request.Request(url, headers={"Authorization": f"token {self.auth.api_token}"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                users = json.loads(resp.read()).get("users")
        except (OSError, ValueError) as exc:
            raise UsageError(
                f"the Hub did not list the members of {self.group!r} ({exc}): --split needs the service's role to "
                f"have the scope read:groups!group={self.group} (docs/review.md)."
            ) from None
        if not isinstance(users, list):
            raise UsageError(
                f"the Hub's answer for the group {self.group!r} lists no users: give the service read:groups!group={self.group}."
            )
        return sorted(str(u) for u in users)

    def routes(self, app: Flask) -> None:
        app.add_url_rule(self.callback, "hub_oauth_callback", self.finish)
