"""Who is grading: every request to the review page is admitted for one person, or refused.

One way in for each way the page is started, each an ``Access`` (``admit`` names the person in
``flask.g.grader`` or answers the request itself):

- ``Solo`` (``grader review NAME``): one person on this machine; the page listens on 127.0.0.1 and
  every request carries the random token it printed (in the address, or ``X-Review-Token``).
- ``Team`` (``--serve --graders graders.csv``): a token per teaching assistant, printed once and
  kept only as its SHA-256 hash in ``OUT/review-access.json`` (mode 0600). The link's token is
  taken into a cookie (HttpOnly, SameSite=Lax) and dropped from the address; a change the page
  saves also carries a value derived from the person (``csrf``), which another site cannot send.
- ``grader.review.hub.HubMembers`` (``--hub``): the Hub's own accounts, through HubOAuth.

Plain HTTP is refused from anything but loopback (``plain_http_refused``): the page is meant to sit
behind the course's HTTPS proxy. Only with ``--behind-proxy`` does it believe the proxy's
``X-Forwarded-Proto`` and ``X-Forwarded-For`` (one hop, as werkzeug's ``ProxyFix`` reads them).
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import ipaddress
import json
import os
import secrets
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol
from urllib.parse import urlencode

from flask import Flask, g, jsonify, redirect, request
from werkzeug.wrappers import Response

from grader.errors import UsageError
from grader.files import make_dir, printable

FILENAME = "review-access.json"  # beside grades.sqlite: the token hashes and the page's secret
COLUMNS = ("name",)  # graders.csv: one row per teaching assistant, the name recorded with each grade
MAX_NAME = 100
HEADER = "X-Review-Token"


class Access(Protocol):
    """How the page admits a request (see the module's docstring)."""

    poll_ms: int  # how often an open page asks for the answer's grade (another person may change it)

    @property
    def secret(self) -> str:
        """Pseudonyms with --anonymous; the value a page's saves carry."""

    def admit(self) -> Response | None:
        """``None`` with ``g.grader`` set; or the answer to the request (a refusal, a redirect)."""

    def link_token(self) -> str | None:
        """The token every link of the page carries (``None``: a cookie carries it)."""

    def graders(self) -> list[str]:
        """Everyone who grades with this page, in the order the work is split among them."""

    def routes(self, app: Flask) -> None:
        """Routes of its own (the Hub's OAuth callback)."""


def csrf(secret: str, name: str) -> str:
    """The value every save a page of ``name`` sends carries (``X-Review-Token``)."""
    return hmac.new(secret.encode(), f"csrf:{name}".encode(), hashlib.sha256).hexdigest()


def loopback(address: str | None) -> bool:
    """Whether a client's address is this machine's loopback (``::ffff:127.0.0.1`` too: an IPv4
    client of a server listening on ``[::]``)."""
    try:
        found = ipaddress.ip_address((address or "").split("%")[0])
    except ValueError:
        return False
    mapped = getattr(found, "ipv4_mapped", None)
    return bool((mapped or found).is_loopback)


def refusal(status: int, message: str) -> Response:
    """A request refused: JSON for the page's script, text for a person."""
    if request.path.startswith("/api/"):
        resp = jsonify({"error": message})
        resp.status_code = status
        return resp
    return Response(message + "\n", status=status, mimetype="text/plain")


def plain_http_refused() -> Response | None:
    """Plain HTTP from anything but loopback is refused: a token or a grade would cross the
    network readable. Behind a proxy (``ProxyFix``), the scheme and address are the client's."""
    if request.scheme == "https" or loopback(request.remote_addr):
        return None
    return refusal(
        403,
        "This grading page is served over HTTPS only: open it through the course's HTTPS address. "
        "(Plain HTTP is answered on this machine's loopback address only; the instructor starts the page "
        "with --behind-proxy where an HTTPS proxy forwards to it.)",
    )


def without_token() -> str:
    """This request's address without its ``token`` (kept in a cookie instead)."""
    rest = [(k, v) for k, v in request.args.items(multi=True) if k != "token"]
    return request.script_root + request.path + (f"?{urlencode(rest)}" if rest else "")


@dataclass
class Solo:
    """One person on this machine: a random token in every link (the page as it always was)."""

    token: str
    name: str
    poll_ms: int = 5000

    @property
    def secret(self) -> str:
        return self.token

    def admit(self) -> Response | None:
        given = request.args.get("token") or request.headers.get(HEADER) or ""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return refusal(403, "Forbidden: open the address `grader review` printed, with its token.")
        g.grader = self.name
        return None

    def link_token(self) -> str | None:
        return self.token

    def graders(self) -> list[str]:
        return [self.name]

    def routes(self, app: Flask) -> None:
        return None


def read_graders(path: Path) -> list[str]:
    """The teaching assistants of graders.csv (column ``name``), in its order; every problem named
    with its row."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(
            f"{path} does not exist: write one row per teaching assistant under a `name` header."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} cannot be read: {exc}") from None
    first = text.split("\n", 1)[0]
    # A quoted cell may hold a line break: read as csv reads it (refused below as no name), never split.
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=";" if ";" in first and "," not in first else ",")
    if reader.fieldnames is None or "name" not in [f.strip().lower() for f in reader.fieldnames]:
        raise UsageError(f"{path} has no `name` column: its first line is the header, `name`, then one TA a row.")
    key = next(f for f in reader.fieldnames if f.strip().lower() == "name")
    names: list[str] = []
    seen: dict[str, int] = {}
    problems = []
    for row_number, row in enumerate(reader, start=2):
        name = unicodedata.normalize("NFC", (row.get(key) or "").strip())
        if not name:
            if any((v or "").strip() for v in row.values() if isinstance(v, str)):
                problems.append(f"row {row_number}: no name")
            continue
        if not name.isprintable() or len(name) > MAX_NAME:
            problems.append(
                f"row {row_number}: '{printable(name)[:MAX_NAME]}' is not a name (printable, at most {MAX_NAME} characters)"
            )
        elif name.casefold() in seen:
            problems.append(f"row {row_number}: {name!r} is named already in row {seen[name.casefold()]}")
        else:
            seen[name.casefold()] = row_number
            names.append(name)
    if problems:
        raise UsageError(f"{path}: " + "; ".join(problems) + ". Nothing was started.")
    if not names:
        raise UsageError(f"{path} names no teaching assistant: one row per TA under the `name` header.")
    return names


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass
class Book:
    """``OUT/review-access.json`` (0600): the page's secret, and each TA's token as its hash."""

    path: Path
    secret: str
    hashes: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> {"sha256", "issued"}

    @classmethod
    def open(cls, out: Path) -> Book:
        path = Path(out) / FILENAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            book = cls(path, str(data["secret"]), {str(k): dict(v) for k, v in data.get("graders", {}).items()})
        except FileNotFoundError:
            return cls(path, secrets.token_hex(32))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"{path} cannot be read ({exc}): move it aside to issue every TA a new token.") from None
        if path.stat().st_mode & 0o077:
            os.chmod(path, 0o600)
        return book

    def save(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            make_dir(self.path.parent)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            with open(fd, "w", encoding="utf-8") as f:
                data = {"version": 1, "secret": self.secret, "graders": self.hashes}
                json.dump(data, f, indent=1, ensure_ascii=False)
            tmp.replace(self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise UsageError(f"{self.path} cannot be written ({exc.strerror}): no token was given.") from None

    def issue(self, names: list[str], renew: list[str] | None) -> dict[str, str]:
        """A new token for each of ``names`` without one, and for those of ``renew`` (``[]``: all);
        the new tokens by name (shown once, never kept)."""
        unknown = [n for n in renew or [] if n not in names]
        if unknown:
            raise UsageError(f"--new-tokens names {', '.join(map(repr, unknown))}, not in the graders file.")
        again = set(names) if renew == [] else set(renew or [])
        tokens = {n: secrets.token_urlsafe(24) for n in names if n not in self.hashes or n in again}
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for name, token in tokens.items():
            self.hashes[name] = {"sha256": digest(token), "issued": now}
        if tokens or not self.path.exists():
            self.save()
        return tokens

    def name_for(self, token: str, names: list[str]) -> str | None:
        if not token:
            return None
        found = digest(token)
        for name in names:
            held = self.hashes.get(name, {}).get("sha256", "")
            if held and hmac.compare_digest(held, found):
                return name
        return None


@dataclass
class Team:
    """A token per teaching assistant of graders.csv (see the module's docstring)."""

    book: Book
    names: list[str]
    poll_ms: int = 1500

    @property
    def secret(self) -> str:
        return self.book.secret

    @property
    def cookie(self) -> str:
        return "grader-review-" + digest(self.book.secret)[:12]  # one per output folder: ports share cookies

    def admit(self) -> Response | None:
        refused = plain_http_refused()
        if refused is not None:
            return refused
        given = request.args.get("token")
        if given is not None:
            name = self.book.name_for(given, self.names)
            if name is None:
                return refusal(403, "This link's token is not (or no longer) valid: ask the instructor for your link.")
            if request.method == "GET" and not request.path.startswith("/api/"):
                resp = redirect(without_token())  # the token leaves the address bar and the history
                resp.set_cookie(
                    self.cookie,
                    given,
                    httponly=True,
                    samesite="Lax",
                    secure=request.scheme == "https",
                    path=request.script_root or "/",
                )
                return resp
            g.grader = name
            return None
        header = request.headers.get(HEADER, "")
        name = self.book.name_for(header, self.names)  # a script's own call: the token itself
        if name is not None:
            g.grader = name
            return None
        name = self.book.name_for(request.cookies.get(self.cookie, ""), self.names)
        if name is None:
            return refusal(403, "Forbidden: open your own link (with its token) that the instructor gave you.")
        if request.method not in ("GET", "HEAD") and not hmac.compare_digest(
            header.encode(), csrf(self.secret, name).encode()
        ):
            return refusal(403, "Refused: a change must come from the grading page itself.")
        g.grader = name
        return None

    def link_token(self) -> str | None:
        return None

    def graders(self) -> list[str]:
        return list(self.names)

    def routes(self, app: Flask) -> None:
        return None


def header_token(access: Access, name: str) -> str:
    """What the page's script sends with each call (``X-Review-Token``)."""
    token = access.link_token()
    return token if token is not None else csrf(access.secret, name)
