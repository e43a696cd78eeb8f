"""Starting the review page: alone on 127.0.0.1, for several TAs with tokens (``--serve``), or as a
JupyterHub service (``--hub``); then serving until interrupted, the outputs written on the way out.

``start`` checks the options together (each combination that cannot work is said, before anything
listens), makes the ``Access`` of the mode, and ``serve`` runs Werkzeug's threaded server. Behind a
proxy (``--behind-proxy``) the app is wrapped in werkzeug's ``ProxyFix`` (one hop); as a Hub service
it is mounted under the service's prefix (``JUPYTERHUB_SERVICE_PREFIX``), as the Hub's proxy passes
the whole path on.
"""

from __future__ import annotations

import argparse
import gc
import ipaddress
import os
import re
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from werkzeug.serving import WSGIRequestHandler

from grader.course.model import Assignment, Course
from grader.errors import GraderError, UsageError
from grader.judge import plots
from grader.review import cells, merge, team
from grader.review.access import Access, Book, Team, read_graders
from grader.review.app import Review, make_app
from grader.review.store import GradeStore
from grader.review.writer import Writer

TOKEN_IN_URL = re.compile(r"(?<=[?&])token=[^&#\s]*")


class Redacted(WSGIRequestHandler):
    """Werkzeug's access log line, each token in an address written as ``token=[hidden]``: a token is
    printed once, when it is given, never again in the server's log."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        path = getattr(self, "path", None)
        if path is not None:
            self.path = TOKEN_IN_URL.sub("token=[hidden]", path)
        try:
            super().log_request(code, size)
        finally:
            if path is not None:
                self.path = path


@dataclass
class Shared:
    """A page for several graders: who may grade, where it listens, how the work is split."""

    access: Access
    host: str
    port: int
    behind_proxy: bool = False
    split: str = ""
    prefix: str = "/"
    public_url: str = ""
    tokens: dict[str, str] = field(default_factory=dict)  # new tokens, shown once
    kept: list[str] = field(default_factory=list)  # graders whose token was issued before


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8000`` for IPv6; port 0: a free one)."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--listen {text!r} is not HOST:PORT (say 127.0.0.1:8000, 0.0.0.0:8443 or [::1]:8000).")
    return host, int(port)


def start(
    args: argparse.Namespace,
    store: GradeStore,
    course: Course,
    assignment: Assignment,
    out: Path,
    formats: Sequence[str],
    who: str,
) -> None:
    """``grader review NAME`` with its options: the options checked together, then served."""
    several = args.serve or args.hub
    for given, flag in (
        (args.split, "--split"),
        (args.listen, "--listen"),
        (args.behind_proxy, "--behind-proxy"),
        (args.public_url, "--public-url"),
    ):
        if given and not several:
            raise UsageError(
                f"{flag} is for a page several people grade in: add --serve --graders graders.csv, or --hub."
            )
    if args.serve and args.hub:
        raise UsageError(
            "--serve (tokens from graders.csv) and --hub (the Hub's accounts) are two ways in: choose one."
        )
    if args.graders and not args.serve:
        raise UsageError("--graders goes with --serve: grader review NAME --out DIR --serve --graders graders.csv")
    if args.serve and not args.graders:
        raise UsageError("--serve needs --graders graders.csv: one row per teaching assistant under a `name` header.")
    if args.new_tokens is not None and not args.serve:
        raise UsageError("--new-tokens is for --serve --graders graders.csv.")
    if not several:
        serve(store, course, assignment, out, formats, grader=who, port=args.port, anonymous=args.anonymous)
        return
    host, port = parse_listen(args.listen) if args.listen else ("127.0.0.1", args.port)
    if args.serve:
        names = read_graders(Path(args.graders))
        book = Book.open(out)
        tokens = book.issue(names, args.new_tokens)
        shared = Shared(Team(book, names), host, port, args.behind_proxy, args.split or "", "/", args.public_url or "")
        shared.tokens, shared.kept = tokens, [n for n in names if n not in tokens]
    else:
        from grader.review.hub import HubMembers, hub_auth

        group = course.review.graders_group
        if not group:
            raise UsageError(
                "--hub admits the members of one Hub group: name it in config.yaml as review: {graders_group: GROUP}."
            )
        auth = hub_auth()
        book = Book.open(out)
        book.issue([], None)  # its secret kept: pages and sessions outlive a restart
        access = HubMembers(auth, group, book.secret)
        access.callback  # noqa: B018 (checked now: said before anything listens)
        if args.split:
            access.members()  # said now where the service may not read the group
        if not args.listen:
            url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", ""))
            if not url.hostname:
                raise UsageError(
                    "--hub needs --listen HOST:PORT, or JUPYTERHUB_SERVICE_URL (the Hub sets it for a managed service)."
                )
            host, port = url.hostname, url.port or 80
        shared = Shared(access, host, port, args.behind_proxy, args.split or "", access.prefix, args.public_url or "")
    serve(store, course, assignment, out, formats, grader=who, port=port, anonymous=args.anonymous, shared=shared)


def shown_base(shared: Shared, port: int) -> str:
    """The address a person opens: ``--public-url``, or this machine's."""
    if shared.public_url:
        return shared.public_url.rstrip("/") + "/"
    host = shared.host
    try:
        if ipaddress.ip_address(host).is_unspecified:
            host = socket.getfqdn()
    except ValueError:
        pass
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}{shared.prefix}"


def announce(assignment: Assignment, out: Path, shared: Shared, port: int) -> None:
    base = shown_base(shared, port)
    split = f", split by {shared.split}" if shared.split else ""
    if isinstance(shared.access, Team):
        print(
            f"Grading {assignment.name} with {len(shared.access.names)} teaching assistant(s){split}: {base}",
            flush=True,
        )
        if shared.tokens:
            print(f"Each one's own link, shown this once ({out}/review-access.json keeps only a hash of each token):")
            width = max(len(n) for n in shared.tokens)
            for name, token in shared.tokens.items():
                print(f"  {name + ':':<{width + 1}} {base}?token={token}")
        if shared.kept:
            print(f"Tokens given before, not shown again (--new-tokens NAME gives a new one): {', '.join(shared.kept)}")
    else:
        group = getattr(shared.access, "group", "")
        print(
            f"Grading {assignment.name} as a JupyterHub service{split}: members of the Hub group {group!r} grade at {base}"
        )
    if not shared.behind_proxy and not _loopback(shared.host):
        print(
            "Plain HTTP is answered on loopback only: put the course's HTTPS proxy in front and start with --behind-proxy.",
            flush=True,
        )


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve(
    store: GradeStore,
    course: Course,
    assignment: Assignment,
    out: Path,
    formats: Sequence[str],
    *,
    grader: str,
    port: int = 0,
    anonymous: bool = False,
    shared: Shared | None = None,
) -> None:
    """Serve until interrupted; the outputs are written again on the way out."""
    from werkzeug.serving import make_server

    secret = shared.access.secret if shared is not None else secrets.token_urlsafe(24)
    review = Review(store, course, assignment, grader, secret, anonymous)
    if not review.questions:
        raise UsageError(f"{assignment.name} has no question graded by a person (manual: true): nothing to review.")
    if shared is not None and shared.split and shared.split not in team.SPLITS:
        raise UsageError(f"--split is one of {', '.join(team.SPLITS)}, not {shared.split!r}.")
    # Outputs older than the grades (a server killed before it wrote them, a disk that was full): written now.
    try:
        if merge.catch_up(store, course, assignment, out, formats) is not None:
            print(f"The outputs in {out}/ were older than the grades: written again.", flush=True)
    except OSError as exc:
        print(f"grader: the outputs in {out}/ could not be written ({exc}); the page tries again.", file=sys.stderr)
    except GraderError as exc:
        print(f"grader: {exc}", file=sys.stderr, flush=True)
    writer = Writer(store, course, assignment, out, formats)
    figures = plots.reference_figures_or_none(course, assignment)
    # nbconvert's templates load once, while the grader opens the page.
    threading.Thread(target=cells.render, args=([],), name="grader-review-warm-up", daemon=True).start()
    host = shared.host if shared is not None else "127.0.0.1"
    app = make_app(review, writer, figures, shared.access if shared else None, shared.split if shared else "")
    wsgi: Any = app
    if shared is not None and shared.behind_proxy:
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1, x_proto=1, x_host=1, x_port=1, x_prefix=1)  # type: ignore[method-assign]
    if shared is not None and shared.prefix != "/":
        from werkzeug.exceptions import NotFound
        from werkzeug.middleware.dispatcher import DispatcherMiddleware

        wsgi = DispatcherMiddleware(NotFound(), {shared.prefix.rstrip("/"): app})
    try:
        server = make_server(host, port, wsgi, threaded=True, request_handler=Redacted)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}.") from None

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # outputs written on the way out

    # A plain `kill`, and the SIGINT a JupyterHub stops its services with, stop it as Ctrl-C does (also
    # where SIGINT came ignored, from a shell's background job); taken before the address is
    # shown, so a stop sent as soon as it is read ends the server as cleanly as a later one.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        if shared is None:
            print(
                f"Grading {assignment.name} as {grader}: open http://127.0.0.1:{server.server_port}/?token={review.token}",
                flush=True,
            )
        else:
            announce(assignment, out, shared, server.server_port)
        print("Every change is saved as you make it. Stop with Ctrl-C.", flush=True)
        # What was loaded to start is kept for the server's life: the collector never walks it again,
        # nor at exit (seconds of a loaded machine, with JupyterHub's modules, before a Hub's SIGKILL).
        gc.freeze()
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        problem = writer.stop()
    if problem:
        raise GraderError(
            f"{problem}. Every grade is saved in {store.path}; the outputs are written when the problem is "
            f"solved and `grader review {assignment.name} --out {out}` is started again."
        )
    print(f"Outputs in {out}/ written with the grades.", flush=True)
