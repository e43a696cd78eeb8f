"""The cases: each one's truth is decided by the promise of issue 43 and docs/review.md, never by
what an implementation does. A case returns (passed, observed); it raises NotAvailable when the
mode it needs is not in the grader under test.

Fixtures (servers) are started lazily, once, and stopped by Context.close().
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import io
import os
import re
import secrets
import stat
import subprocess
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import (
    LOOPBACK,
    Client,
    Proc,
    Resp,
    Workspace,
    commands,
    find_link_for,
    find_token_for,
    fmt_argv,
    free_port,
    grader_cmd,
    non_loopback_ip,
    poll,
    request,
    write_config,
)

TAS = ["Tess", "Uma", "Vic"]
STUDENTS = ["ada", "bob", "cy", "dee", "eve", "fay"]
QUESTIONS = ["explain", "method"]
SHOWN_WITHIN = 8.0  # "within seconds": an edit by one TA shown to another
OUTPUTS_WITHIN = 30.0  # the scorecards are written again "in the background after a change": no bound promised
HOSTILE_CSV = "=cmd|' /C calc'!A0"
HOSTILE_HTML = "<img src=x onerror=alert(7)>"


class NotAvailable(Exception):
    """The mode this case needs is not in the grader under test."""


@dataclass
class Case:
    id: str
    area: str
    expected: str
    fn: Callable[[Context], tuple[bool, str]]
    needs: str = ""


CASES: list[Case] = []


def case(cid: str, area: str, expected: str, needs: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        CASES.append(Case(cid, area, expected, fn, needs))
        return fn

    return deco


# ---------------------------------------------------------------- fixtures

MISSING_MODE = re.compile(r"unrecognized arguments|invalid choice|no such option|unknown option", re.I)


class Serve:
    """`grader review essay --serve --graders graders.csv` in its own copy of the graded course."""

    def __init__(
        self,
        ctx: Context,
        key: str,
        tas: list[str],
        host: str = LOOPBACK,
        extra: str = "",
        course: Path | None = None,
        port: int | None = None,
    ) -> None:
        self.ctx = ctx
        self.key = key
        self.tas = tas
        self.host = host
        self.extra = extra
        self.course = course or ctx.ws.copy(key)
        self.port = port or free_port()
        self.graders = self.course / "graders.csv"
        if not self.graders.exists() or course is None:
            write_graders(self.graders, tas)
        self.proc: Proc | None = None
        self.tokens: dict[str, str] = {}
        self.links: dict[str, str] = {}
        self.error = ""
        self.started_at = time.time()

    @property
    def base(self) -> str:
        h = LOOPBACK if self.host in ("0.0.0.0", "127.0.0.1") else "[::1]" if self.host == "[::]" else self.host
        return f"http://{h}:{self.port}"

    def argv(self) -> list[str]:
        cmd = commands()["serve"] + (" " + self.extra if self.extra else "")
        return fmt_argv(cmd, grader=" ".join(grader_cmd()), graders=str(self.graders), host=self.host, port=self.port)

    def start(self, expect_tokens: bool = True) -> bool:
        self.started_at = time.time()
        self.proc = Proc(self.argv(), cwd=self.course, name=f"serve-{self.key}")
        names = list(self.tas)

        def ready() -> bool:
            if not self.proc or not self.proc.alive():
                return True
            out = self.proc.output
            found = all(find_token_for(n, out) for n in names) or not expect_tokens
            return found and bool(request(self.base + "/", timeout=1).status)

        poll(ready, 30, 0.2)
        out = self.proc.output
        if not self.proc.alive():
            self.error = last_lines(out)
            return False
        if not expect_tokens:
            return True
        for n in names:
            t = find_token_for(n, out)
            if t:
                self.tokens[n] = t
            link = find_link_for(n, out)
            if link:
                self.links[n] = link
        if len(self.tokens) < len(names):
            # tokens not next to the names: take the token-like words in order of appearance
            from harness import TOKEN_RX

            words = [w for w in TOKEN_RX.findall(out) if re.search(r"\d", w) and re.search(r"[A-Za-z]", w)]
            words = [w for w in dict.fromkeys(words) if w not in self.tokens.values() and "/" not in w]
            for n in names:
                if n not in self.tokens and words:
                    self.tokens[n] = words.pop(0)
        if len(self.tokens) < len(names):
            self.error = "no token printed for " + ", ".join(n for n in names if n not in self.tokens)
            return False
        return True

    def client(self, ta: str | None, token: str | None = None, base: str | None = None) -> Client:
        c = Client(
            base or self.base, token if token is not None else self.tokens.get(ta or ""), self.ctx.auth_method, ta or ""
        )
        return c

    def stop(self) -> int | None:
        return self.proc.stop() if self.proc else None


def write_graders(path: Path, names: list[str], header: bool = True) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if header:
        w.writerow([commands().get("graders_csv_header", "name")])
    for n in names:
        w.writerow([n])
    path.write_text(buf.getvalue())


def last_lines(out: str, n: int = 3) -> str:
    lines = [line for line in out.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:])[:300]


class Context:
    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose
        self.ws = Workspace()
        self.fixtures: dict[str, Any] = {}
        self.auth_method: str | None = None
        self.prepared: bool | None = None
        self.nonloop = non_loopback_ip()
        self._driver_opts: Any = None
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def prewarm(self, hub: bool = True) -> list[threading.Thread]:
        """Start the servers the cases use, at once, each in a thread (the machine waits on them)."""
        try:
            self.prepare()
        except NotAvailable:
            return []
        c = commands()
        specs: list[tuple[str, dict[str, Any]]] = [
            ("main", {}),
            ("hostile", {"tas": [HOSTILE_CSV, HOSTILE_HTML]}),
            ("splitq", {"tas": ["Tess", "Uma"], "extra": c["split_question"]}),
            ("splits", {"tas": TAS, "extra": c["split_students"]}),
        ]
        if self.nonloop:
            specs += [("open", {"host": "0.0.0.0"}), ("proxy", {"host": "0.0.0.0", "extra": c["behind_proxy"]})]
        jobs: list[Callable[[], Any]] = [lambda k=k, kw=kw: self.serve(k, **kw) for k, kw in specs]
        jobs.append(lambda: restart_fixture(self))
        jobs.append(lambda: _newtok(self))
        if hub:
            jobs.append(self.hub)
        threads = []
        for j in jobs:

            def run(j: Callable[[], Any] = j) -> None:
                with contextlib.suppress(Exception):
                    j()

            t = threading.Thread(target=run, daemon=True)
            t.start()
            threads.append(t)
        return threads

    def close(self) -> None:
        for f in list(self.fixtures.values()):
            with contextlib.suppress(Exception):
                if f is not None and not isinstance(f, Exception):
                    f.stop()
        self.ws.cleanup()

    def prepare(self) -> None:
        with self.lock("_prepare"):
            if self.prepared is None:
                self.prepared = self.ws.prepare()
        if not self.prepared:
            raise NotAvailable("the course could not be graded: " + self.ws.grade_error[:200])

    def serve(self, key: str = "main", tas: list[str] | None = None, host: str = LOOPBACK, extra: str = "") -> Serve:
        """A started server, or NotAvailable/AssertionError saying why not."""
        self.prepare()
        with self.lock(key):
            return self._serve(key, tas, host, extra)

    def _serve(self, key: str, tas: list[str] | None, host: str, extra: str) -> Serve:
        if key not in self.fixtures:
            s = Serve(self, key, tas or TAS, host=host, extra=extra)
            ok = s.start()
            if not ok:
                miss = MISSING_MODE.search(s.proc.output if s.proc else "")
                if miss:
                    line = next(
                        (ln for ln in (s.proc.output if s.proc else "").splitlines() if MISSING_MODE.search(ln)), ""
                    )
                    self.fixtures[key] = NotAvailable(f"mode not in this grader ({line.strip()[:90]})")
                else:
                    self.fixtures[key] = RuntimeError(f"server '{key}' did not start: {s.error}")
                s.stop()
            else:
                self.fixtures[key] = s
                if self.auth_method is None:
                    c = Client(s.base, s.tokens[s.tas[0]])
                    self.auth_method = c.detect(api_state("explain", "ada"))
                    if self.auth_method is None:
                        self.fixtures[key] = RuntimeError(
                            "no way of sending a TA's token was accepted (header X-Review-Token, Bearer, query, cookie)"
                        )
        f = self.fixtures[key]
        if isinstance(f, Exception):
            raise f
        return f

    def drop(self, key: str) -> None:
        f = self.fixtures.pop(key, None)
        if f is not None and not isinstance(f, Exception):
            f.stop()

    def hub(self) -> Any:
        self.prepare()
        with self.lock("hub"):
            return self._hub()

    def _hub(self) -> Any:
        if "hub" not in self.fixtures:
            from hubctl import Hub, chp_exe, jupyterhub_exe

            if not jupyterhub_exe():
                self.fixtures["hub"] = NotAvailable("jupyterhub is not installed beside the grader")
            elif not chp_exe():
                self.fixtures["hub"] = NotAvailable("configurable-http-proxy not found")
            else:
                course = self.ws.copy("hub")
                write_config(course, "graders")
                h = Hub(course, managed=commands().get("hub_managed", True))
                if h.start():
                    self.fixtures["hub"] = h
                else:
                    out = h.output()
                    if MISSING_MODE.search(out):
                        self.fixtures["hub"] = NotAvailable("--hub not in this grader")
                    else:
                        self.fixtures["hub"] = RuntimeError(h.error[-300:])
                    h.stop()
        f = self.fixtures["hub"]
        if isinstance(f, Exception):
            raise f
        return f

    @contextlib.contextmanager
    def browser(self) -> Iterator[Any]:
        try:
            from selenium import webdriver
        except ImportError as e:
            raise NotAvailable("selenium not installed") from e
        o = webdriver.ChromeOptions()
        for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
            o.add_argument(a)
        svc = None
        with contextlib.suppress(Exception):
            from selenium.webdriver.chrome.service import Service

            if os.path.exists("/usr/bin/chromedriver"):
                svc = Service("/usr/bin/chromedriver")
        try:
            d = webdriver.Chrome(options=o, service=svc) if svc else webdriver.Chrome(options=o)
        except Exception as e:  # noqa: BLE001
            raise NotAvailable(f"Chromium could not start: {str(e)[:100]}") from e
        try:
            d.set_page_load_timeout(20)
            yield d
        finally:
            with contextlib.suppress(Exception):
                d.quit()


def api_state(q: str, sid: str) -> str:
    return commands()["api_state"].format(q=q, sid=sid)


def api_grade(q: str, sid: str) -> str:
    return commands()["api_grade"].format(q=q, sid=sid)


def page_grade(q: str, sid: str) -> str:
    return commands()["page_grade"].format(q=q, sid=sid)


def version_of(c: Client, q: str, sid: str) -> Any:
    st = c.get(api_state(q, sid)).json() or {}
    return st.get("version", 0)


def save(c: Client, q: str, sid: str, base: Any = None, **fields: Any) -> Resp:
    if base is None:
        base = version_of(c, q, sid)
    return c.post(api_grade(q, sid), {"base": base, **fields})


def state(c: Client, q: str, sid: str) -> dict[str, Any]:
    st = c.get(api_state(q, sid)).json()
    return st if isinstance(st, dict) else {}


def scorecard_question(course: Path, sid: str, q: str) -> str:
    """The text of question q's entry in OUT/sid.yaml ('' if none)."""
    p = course / "scorecards" / f"{sid}.yaml"
    if not p.exists():
        return ""
    try:
        import yaml

        data = yaml.safe_load(p.read_text()) or {}
        for qq in data.get("questions", []):
            if qq.get("id") == q:
                return repr(qq)
    except Exception:  # noqa: BLE001
        pass
    return ""


def refused(r: Resp) -> bool:
    """Refused: no HTTP answer, or 401/403 (or a redirect to a login), and no student content."""
    if r.status is None:
        return True
    if r.status in (401, 403, 421, 400, 426) or r.status in (301, 302, 303, 307, 308):
        return not any(s in r.text for s in ("Symmetric around 2", "graded by a person", '"version"'))
    return False


def no_traceback(out: str) -> bool:
    return "Traceback (most recent call last)" not in out


def run_cli(argv: list[str], cwd: Path, timeout: float = 25) -> tuple[int | None, str]:
    p = Proc(argv, cwd=cwd, name="cli")
    rc = p.wait_exit(timeout)
    if rc is None:
        p.stop(grace=2)
        return None, p.output
    p.stop(grace=1)
    return rc, p.output


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


# ================================================================ setup / graders.csv


@case("S01", "setup", "--serve prints one token per TA in graders.csv, all distinct", needs="serve")
def s01(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    toks = [s.tokens[t] for t in TAS]
    ok = len(set(toks)) == len(TAS) and all(len(t) >= 16 for t in toks)
    return ok, f"{len(set(toks))} distinct tokens, lengths {[len(t) for t in toks]}; auth by {ctx.auth_method}"


@case(
    "S02",
    "setup",
    "each token printed once: after the printed link is opened 3 times and ?token= used on the API and a page, the output holds it on one line (no access log of it)",
    needs="serve",
)
def s02(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Tess")
    link = s.links.get("Tess") or f"{s.base}/?token={s.tokens['Tess']}"
    import http.cookiejar

    for _ in range(3):  # the TA opens the printed link in three browsers
        request(link, follow=True, jar=http.cookiejar.CookieJar())
    for _ in range(2):
        c.get(api_state("explain", "ada"))
    q = Client(s.base, s.tokens["Tess"], "query", "Tess")  # a script with ?token= on the API and a page
    q.get(api_state("explain", "ada"))
    q.get(page_grade("explain", "bob"))
    time.sleep(0.5)
    out = s.proc.output if s.proc else ""
    counts = {t: sum(1 for line in out.splitlines() if s.tokens[t] in line) for t in TAS}
    return all(v == 1 for v in counts.values()), f"lines holding each token: {counts}"


@case("S03", "setup", "the plain token is in no file under the course/output folders (stored hashed)", needs="serve")
def s03(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    save(s.client("Tess"), "explain", "bob", comment="S03 saved")
    time.sleep(1.5)
    hits = []
    for p in files_under(s.course):
        data = p.read_bytes()
        for ta, t in s.tokens.items():
            if t.encode() in data:
                hits.append(f"{p.relative_to(s.course)} ({ta})")
    return not hits, (
        "token found in: " + ", ".join(hits[:4])
    ) if hits else f"not in any of {len(files_under(s.course))} files"


@case(
    "S04",
    "setup",
    "files the server writes (token store, grades.sqlite, outputs) are not world-readable",
    needs="serve",
)
def s04(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    time.sleep(0.5)
    bad = []
    for p in files_under(s.course):
        if p.stat().st_mtime + 1 < s.started_at or p.name == "graders.csv" and p.stat().st_mtime < s.started_at + 0.5:
            continue
        mode = stat.S_IMODE(p.stat().st_mode)
        if mode & 0o007:
            bad.append(f"{p.relative_to(s.course)} {oct(mode)}")
    return not bad, ("world-accessible: " + ", ".join(bad[:4])) if bad else "every file written since start is 0o..0"


def _cli_refusal(ctx: Context, key: str, graders_text: str | None, must_name: str = "") -> tuple[bool, str]:
    ctx.prepare()
    course = ctx.ws.copy(key)
    g = course / "graders.csv"
    if graders_text is not None:
        g.write_text(graders_text)
    port = free_port()
    argv = fmt_argv(commands()["serve"], grader=" ".join(grader_cmd()), graders=str(g), host=LOOPBACK, port=port)
    rc, out = run_cli(argv, course, timeout=20)
    if MISSING_MODE.search(out):
        raise NotAvailable("--serve not in this grader")
    msg = last_lines(out, 2)
    ok = rc not in (None, 0) and no_traceback(out) and bool(out.strip())
    if must_name:
        ok = ok and must_name in out
    return (
        ok,
        f"exit {rc if rc is not None else 'still running after 20 s'}; {'TRACEBACK; ' if not no_traceback(out) else ''}{msg}",
    )


@case("S05", "setup", "an empty graders.csv: a clear message, non-zero exit, no traceback", needs="serve")
def s05(ctx: Context) -> tuple[bool, str]:
    return _cli_refusal(ctx, "empty", "")


@case(
    "S06", "setup", "graders.csv with a header and no TA: a clear message, non-zero exit, no traceback", needs="serve"
)
def s06(ctx: Context) -> tuple[bool, str]:
    return _cli_refusal(ctx, "headeronly", commands().get("graders_csv_header", "name") + "\n")


@case("S07", "setup", "graders.csv missing: a message naming it, non-zero exit, no traceback", needs="serve")
def s07(ctx: Context) -> tuple[bool, str]:
    return _cli_refusal(ctx, "missing", None, must_name="graders.csv")


@case("S08", "setup", "a TA named twice in graders.csv: refused, naming the name, no traceback", needs="serve")
def s08(ctx: Context) -> tuple[bool, str]:
    h = commands().get("graders_csv_header", "name")
    return _cli_refusal(ctx, "dup", f"{h}\nTess\nUma\nTess\n", must_name="Tess")


@case(
    "S09", "setup", "two TA names equal once NFC-normalised (Zoë typed two ways): refused, no traceback", needs="serve"
)
def s09(ctx: Context) -> tuple[bool, str]:
    h = commands().get("graders_csv_header", "name")
    return _cli_refusal(
        ctx, "nfc", f"{h}\n{unicodedata.normalize('NFC', 'Zoë')}\n{unicodedata.normalize('NFD', 'Zoë')}\n"
    )


def hostile(ctx: Context) -> Serve | tuple[bool, str]:
    """A server whose graders.csv holds a formula and an HTML name; or its refusal at start."""
    ctx.prepare()
    with contextlib.suppress(RuntimeError):
        ctx.serve("hostile", tas=[HOSTILE_CSV, HOSTILE_HTML])
    f = ctx.fixtures["hostile"]
    if isinstance(f, NotAvailable):
        raise f
    if isinstance(f, RuntimeError):
        msg = str(f)
        ok = no_traceback(msg) and ("did not start" in msg) and "no token printed" not in msg
        return ok, "refused at start: " + msg[-150:]
    return f


@case(
    "S10",
    "input",
    "a TA named =cmd|' /C calc'!A0: refused at start, or never a formula in any CSV written (gradebook, --export)",
    needs="serve",
)
def s10(ctx: Context) -> tuple[bool, str]:
    s = hostile(ctx)
    if isinstance(s, tuple):
        return s
    c = s.client(HOSTILE_CSV)
    r = save(c, "explain", "ada", comment="graded by the formula TA")
    if r.status != 200:
        return False, f"the TA's grade was not saved ({r.short()})"
    export = s.course / "export.csv"
    run_cli([*grader_cmd(), "review", "essay", "--out", "scorecards", "--export", str(export)], s.course, timeout=30)
    bad = []
    seen = 0
    for p in [*s.course.joinpath("scorecards").glob("*.csv"), export]:
        if not p.exists():
            continue
        for row in csv.reader(io.StringIO(p.read_text(errors="replace"))):
            for cell in row:
                if "cmd|" in cell:
                    seen += 1
                    if cell[:1] in "=+-@\t\r":
                        bad.append(f"{p.name}: {cell[:30]}")
    return not bad, (
        "formula cells: " + "; ".join(bad[:3])
    ) if bad else f"{seen} cell(s) name the TA, none starts a formula"


@case(
    "S11",
    "input",
    "a TA named <img src=x onerror=alert(7)>: refused at start, or escaped in the page and the HTML feedback",
    needs="serve",
)
def s11(ctx: Context) -> tuple[bool, str]:
    s = hostile(ctx)
    if isinstance(s, tuple):
        return s
    c = s.client(HOSTILE_HTML)
    r = save(c, "explain", "cy", comment="graded by the HTML TA")
    if r.status != 200:
        return False, f"the TA's grade was not saved ({r.short()})"
    pages = [c.get("/").text, c.get(page_grade("explain", "cy")).text]
    html = s.course / "scorecards" / "cy.html"
    feedback = (
        poll(
            lambda: (lambda t: t if "graded by the HTML TA" in t else "")(
                html.read_text(errors="replace") if html.exists() else ""
            ),
            OUTPUTS_WITHIN,
        )
        or ""
    )
    raw = [
        where
        for where, t in (("index", pages[0]), ("grading page", pages[1]), ("cy.html", feedback))
        if HOSTILE_HTML in t
    ]
    return not raw, ("raw in: " + ", ".join(raw)) if raw else "escaped everywhere it is shown"


# ================================================================ authentication


@case("A01", "auth", "no token: API state and grading page refused (401/403), no answer in the body", needs="serve")
def a01(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    r1 = request(s.base + api_state("explain", "ada"))
    r2 = request(s.base + page_grade("explain", "ada"))
    r3 = request(s.base + api_grade("explain", "ada"), "POST", body={"base": 0, "comment": "anon"})
    return all(refused(r) for r in (r1, r2, r3)), f"state {r1.short()}, page {r2.short()}, save {r3.short()}"


@case("A02", "auth", "a wrong token (random, same length): refused on state, page and save", needs="serve")
def a02(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    t = s.tokens["Tess"]
    fake = secrets.token_urlsafe(len(t))[: len(t)]
    c = s.client("Tess", token=fake)
    r1, r2 = c.get(api_state("explain", "ada")), c.get(page_grade("explain", "ada"))
    r3 = c.post(api_grade("explain", "ada"), {"base": 0, "comment": "wrong token"})
    return all(refused(r) for r in (r1, r2, r3)), f"state {r1.short()}, page {r2.short()}, save {r3.short()}"


@case("A03", "auth", "a token one character off, a prefix of a token, an empty token: all refused", needs="serve")
def a03(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    t = s.tokens["Tess"]
    variants = {
        "last char": t[:-1] + ("A" if t[-1] != "A" else "B"),
        "prefix": t[: len(t) // 2],
        "empty": "",
        "spaces": f" {t} x",
    }
    obs = {}
    for k, v in variants.items():
        obs[k] = s.client("Tess", token=v).get(api_state("explain", "ada"))
    return all(refused(r) for r in obs.values()), ", ".join(f"{k} {r.short()}" for k, r in obs.items())


@case("A04", "auth", "Tess's own token: state 200 and a save 200, the grade then names Tess", needs="serve")
def a04(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Tess")
    r = save(c, "explain", "ada", item=1, on=True)
    st = state(c, "explain", "ada")
    names = repr(st)
    return (
        r.status == 200 and "Tess" in names,
        f"save {r.short()}; state names {'Tess' if 'Tess' in names else st.get('grader')}",
    )


@case(
    "A05",
    "auth",
    "Uma's token used to save: the grade is Uma's (state and scorecard), never the server's default",
    needs="serve",
)
def a05(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Uma")
    r = save(c, "method", "bob", adjustment=1, comment="A05 by Uma")
    st = state(c, "method", "bob")
    card = poll(
        lambda: (lambda t: t if "Uma" in t else "")(scorecard_question(s.course, "bob", "method")), OUTPUTS_WITHIN
    )
    return r.status == 200 and "Uma" in repr(st) and bool(
        card
    ), f"save {r.short()}; state grader {st.get('grader')!r}; scorecard names Uma: {bool(card)}"


@case(
    "A06",
    "attrib",
    "Uma's token with a name field (grader/graded_by/ta/user='Tess', X-Grader header): recorded as Uma",
    needs="serve",
)
def a06(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Uma")
    v = version_of(c, "explain", "cy")
    r = c.post(
        api_grade("explain", "cy") + "?grader=Tess&user=Tess",
        {
            "base": v,
            "comment": "A06 spoof",
            "grader": "Tess",
            "graded_by": "Tess",
            "ta": "Tess",
            "user": "Tess",
            "name": "Tess",
        },
        headers={"X-Grader": "Tess", "X-Forwarded-User": "Tess", "X-Remote-User": "Tess"},
    )
    if r.status != 200:
        r = save(c, "explain", "cy", comment="A06 spoof", grader="Tess")
    st = state(c, "explain", "cy")
    card = poll(
        lambda: (lambda x: x if "A06 spoof" in x else "")(scorecard_question(s.course, "cy", "explain")), OUTPUTS_WITHIN
    ) or scorecard_question(s.course, "cy", "explain")
    ok = r.status == 200 and "Uma" in repr(st) and "Tess" not in repr(st) and "Uma" in card and "Tess" not in card
    return (
        ok,
        f"save {r.short()}; state grader {st.get('grader')!r}; scorecard: {'Uma' if 'Uma' in card else ''} {'Tess' if 'Tess' in card else ''}",
    )


@case(
    "A07",
    "auth",
    "the printed link opens the page (200) and the page sends Referrer-Policy: no-referrer (a token in a URL must not leak on)",
    needs="serve",
)
def a07(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    link = s.links.get("Tess")
    if not link:
        return False, "no link printed for Tess"
    import http.cookiejar

    r = request(link, follow=True, jar=http.cookiejar.CookieJar())
    rp = r.headers.get("referrer-policy", "")
    return r.status == 200 and "no-referrer" in rp, f"{r.short()}, Referrer-Policy {rp!r}"


@case(
    "A08",
    "auth",
    "the token header works on API calls and a token in the query string of a save works the same or is refused, never mis-attributed",
    needs="serve",
)
def a08(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    q = Client(s.base, s.tokens["Vic"], "query", "Vic")
    r = save(q, "method", "dee", comment="A08 by Vic via query")
    st = state(s.client("Vic"), "method", "dee")
    if r.status == 200:
        return "Vic" in repr(st), f"query-token save 200, recorded as {st.get('grader')!r}"
    return refused(r), f"query-token save {r.short()} (refused)"


@case("A09", "auth", "pass-the-hash: sha256 of a token (hex, base64) sent as the token is refused", needs="serve")
def a09(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    t = s.tokens["Tess"].encode()
    d = hashlib.sha256(t).digest()
    cands = [d.hex(), base64.b64encode(d).decode(), base64.urlsafe_b64encode(d).decode().rstrip("=")]
    rs = [s.client("Tess", token=x).get(api_state("explain", "ada")) for x in cands]
    return all(refused(r) for r in rs), ", ".join(r.short() for r in rs)


@case(
    "A10",
    "auth",
    "Vic's token cannot act as Tess: a save by Vic after Tess's is recorded as Vic and Tess's name leaves that grade",
    needs="serve",
)
def a10(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    t, v = s.client("Tess"), s.client("Vic")
    save(t, "explain", "dee", comment="A10 Tess first")
    r = save(v, "explain", "dee", comment="A10 Vic second")
    st = state(t, "explain", "dee")
    card = poll(
        lambda: (lambda x: x if "Vic" in x else "")(scorecard_question(s.course, "dee", "explain")), OUTPUTS_WITHIN
    ) or scorecard_question(s.course, "dee", "explain")
    return (
        r.status == 200 and st.get("grader") == "Vic" and "Vic" in card,
        f"save {r.short()}; state grader {st.get('grader')!r}; scorecard names Vic: {'Vic' in card}",
    )


def restart_fixture(ctx: Context) -> dict[str, Any]:
    """Start, grade, stop; start again on the same folder and graders.csv; then without Vic."""
    with ctx.lock("restart"):
        return _restart_fixture(ctx)


def _restart_fixture(ctx: Context) -> dict[str, Any]:
    if "restart" in ctx.fixtures:
        f = ctx.fixtures["restart"]
        if isinstance(f, Exception):
            raise f
        return f
    ctx.prepare()
    res: dict[str, Any] = {}
    try:
        s1 = ctx.serve("restart1")
        res["tokens1"] = dict(s1.tokens)
        res["course"] = s1.course
        res["save1"] = save(s1.client("Tess"), "explain", "eve", comment="before restart").status
        res["vic_save"] = save(s1.client("Vic"), "method", "fay", comment="Vic before he leaves").status
        res["rc1"] = s1.stop()
        ctx.fixtures.pop("restart1", None)
        res["hits_after_stop"] = [
            str(p.relative_to(s1.course))
            for p in files_under(s1.course)
            for t in s1.tokens.values()
            if t.encode() in p.read_bytes()
        ]
        s2 = Serve(ctx, "restart2", TAS, course=s1.course)
        s2.start(expect_tokens=False)  # printed once: it prints none again
        res["out2"] = s2.proc.output if s2.proc else ""
        res["alive2"] = bool(s2.proc and s2.proc.alive())
        old = Client(s2.base, s1.tokens["Tess"], ctx.auth_method, "Tess")
        poll(lambda: request(s2.base + "/", timeout=1).status, 15)
        res["old_state"] = old.get(api_state("explain", "eve"))
        res["old_save"] = save(old, "method", "eve", comment="after restart").status
        res["state2"] = state(old, "method", "eve")
        res["rc2"] = s2.stop()
        write_graders(s1.graders, ["Tess", "Uma"])
        s3 = Serve(ctx, "restart3", ["Tess", "Uma"], course=s1.course)
        s3.start(expect_tokens=False)
        poll(lambda: request(s3.base + "/", timeout=1).status, 15)
        res["vic_after_removal"] = Client(s3.base, s1.tokens["Vic"], ctx.auth_method).get(api_state("explain", "eve"))
        res["tess_after_removal"] = Client(s3.base, s1.tokens["Tess"], ctx.auth_method).get(api_state("explain", "eve"))
        res["vic_state_after_removal"] = state(Client(s3.base, s1.tokens["Tess"], ctx.auth_method), "method", "fay")
        s3.stop()
        res["vic_card_after_removal"] = scorecard_question(s1.course, "fay", "method")
    except (NotAvailable, RuntimeError) as e:
        ctx.fixtures["restart"] = e
        raise
    ctx.fixtures["restart"] = _Dict(res)
    return res


class _Dict(dict):  # a fixture with a stop() that does nothing
    def stop(self) -> None:
        return None


@case("A11", "auth", "a token still works after the server restarts on the same folder and graders.csv", needs="serve")
def a11(ctx: Context) -> tuple[bool, str]:
    r = restart_fixture(ctx)
    st, sv = r["old_state"], r["old_save"]
    return st.status == 200 and sv == 200, f"state {st.short()}, save {sv}"


@case("A12", "auth", "printed once: the restart does not print a token printed at the first start", needs="serve")
def a12(ctx: Context) -> tuple[bool, str]:
    r = restart_fixture(ctx)
    again = [ta for ta, t in r["tokens1"].items() if t in r["out2"]]
    return not again and r["alive2"] is not None, (
        "printed again: " + ", ".join(again)
    ) if again else "no old token in the second start's output"


@case("A13", "auth", "a TA taken out of graders.csv is refused after a restart; the others still work", needs="serve")
def a13(ctx: Context) -> tuple[bool, str]:
    r = restart_fixture(ctx)
    v, t = r["vic_after_removal"], r["tess_after_removal"]
    return refused(v) and t.status == 200, f"Vic {v.short()}, Tess {t.short()}"


@case(
    "A14",
    "auth",
    "stopped with Ctrl-C: exit 0 or 130 (not 2: outputs written), and no file holds a plain token afterwards either",
    needs="serve",
)
def a14(ctx: Context) -> tuple[bool, str]:
    r = restart_fixture(ctx)
    return r["rc1"] in (0, 130) and not r[
        "hits_after_stop"
    ], f"exit {r['rc1']}; token in {r['hits_after_stop'][:3] or 'no file'}"


@case(
    "X01", "attrib", "a grade given before a restart still names its TA after it (scorecard and state)", needs="serve"
)
def x01(ctx: Context) -> tuple[bool, str]:
    r = restart_fixture(ctx)
    card = scorecard_question(r["course"], "eve", "explain")
    st2 = r["state2"]
    return "Tess" in card and "Tess" in repr(
        st2
    ), f"eve/explain scorecard names Tess: {'Tess' in card}; eve/method state grader {st2.get('grader')!r}"


# ================================================================ transport


def open_server(ctx: Context, key: str, extra: str = "") -> Serve:
    if not ctx.nonloop:
        raise NotAvailable("this machine has no non-loopback address")
    return ctx.serve(key, host="0.0.0.0", extra=extra)


def nonloop_client(ctx: Context, s: Serve, ta: str = "Tess", token: str | None = None) -> Client:
    return s.client(ta, token=token, base=f"http://{ctx.nonloop}:{s.port}")


def _open_or_refused(ctx: Context) -> Serve | tuple[bool, str]:
    """The 0.0.0.0 server without --behind-proxy; starting may itself be refused (a pass)."""
    try:
        return open_server(ctx, "open")
    except RuntimeError as e:
        msg = str(e)
        return no_traceback(msg), "refused to listen beyond loopback: " + msg[-120:]


@case(
    "T01",
    "transport",
    "no --behind-proxy, listening on 0.0.0.0: a plain-HTTP request from a non-loopback address with a valid token is refused",
    needs="serve",
)
def t01(ctx: Context) -> tuple[bool, str]:
    s = _open_or_refused(ctx)
    if isinstance(s, tuple):
        return s
    c = nonloop_client(ctx, s)
    r1, r2 = c.get(api_state("explain", "ada")), save(c, "explain", "fay", comment="from outside")
    return refused(r1) and refused(r2), f"state {r1.short()}, save {r2.short()} from {ctx.nonloop}"


@case(
    "T02",
    "transport",
    "same, spoofing X-Forwarded-For: 127.0.0.1 and X-Forwarded-Proto: https: still refused",
    needs="serve",
)
def t02(ctx: Context) -> tuple[bool, str]:
    s = _open_or_refused(ctx)
    if isinstance(s, tuple):
        return s
    c = nonloop_client(ctx, s)
    c.extra = {
        "X-Forwarded-For": "127.0.0.1",
        "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": f"127.0.0.1:{s.port}",
        "X-Real-IP": "127.0.0.1",
    }
    r = c.get(api_state("explain", "ada"))
    return refused(r), f"state {r.short()}"


@case(
    "T03",
    "transport",
    "same, spoofing Forwarded: for=127.0.0.1;proto=https and Host: 127.0.0.1: still refused",
    needs="serve",
)
def t03(ctx: Context) -> tuple[bool, str]:
    s = _open_or_refused(ctx)
    if isinstance(s, tuple):
        return s
    c = nonloop_client(ctx, s)
    c.extra = {
        "Forwarded": "for=127.0.0.1;proto=https;host=127.0.0.1",
        "Host": f"127.0.0.1:{s.port}",
        "X-Forwarded-Ssl": "on",
        "X-Url-Scheme": "https",
    }
    r = c.get(api_state("explain", "ada"))
    return refused(r), f"state {r.short()}"


@case(
    "T04",
    "transport",
    "the 0.0.0.0 server (no proxy flag) still serves loopback with a token, or refused to start with a clear message",
    needs="serve",
)
def t04(ctx: Context) -> tuple[bool, str]:
    s = _open_or_refused(ctx)
    if isinstance(s, tuple):
        return s
    r = s.client("Tess").get(api_state("explain", "ada"))
    return r.status == 200, f"loopback state {r.short()}"


@case(
    "T05",
    "transport",
    "--behind-proxy on 0.0.0.0: a request from a non-loopback address with X-Forwarded-Proto: https and a token is served",
    needs="serve",
)
def t05(ctx: Context) -> tuple[bool, str]:
    s = open_server(ctx, "proxy", extra=commands()["behind_proxy"])
    c = nonloop_client(ctx, s)
    c.extra = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}
    r = c.get(api_state("explain", "ada"))
    return r.status == 200, f"state {r.short()}"


@case(
    "T06",
    "transport",
    "--behind-proxy: no token (or a forged one) from the proxy, even claiming for=127.0.0.1: refused",
    needs="serve",
)
def t06(ctx: Context) -> tuple[bool, str]:
    s = open_server(ctx, "proxy", extra=commands()["behind_proxy"])
    h = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "127.0.0.1"}
    r1 = request(f"http://{ctx.nonloop}:{s.port}" + api_state("explain", "ada"), headers=h)
    c = nonloop_client(ctx, s, token=secrets.token_urlsafe(24))
    c.extra = h
    r2 = c.get(api_state("explain", "ada"))
    return refused(r1) and refused(r2), f"no token {r1.short()}, forged {r2.short()}"


@case(
    "T07",
    "transport",
    "--behind-proxy: a grade through the proxy is recorded as the token's TA (Uma), not a forwarded user header",
    needs="serve",
)
def t07(ctx: Context) -> tuple[bool, str]:
    s = open_server(ctx, "proxy", extra=commands()["behind_proxy"])
    c = nonloop_client(ctx, s, "Uma")
    c.extra = {"X-Forwarded-Proto": "https", "X-Forwarded-User": "Tess", "Remote-User": "Tess"}
    r = save(c, "method", "fay", comment="T07 via proxy")
    st = state(c, "method", "fay")
    return r.status == 200 and st.get("grader") == "Uma", f"save {r.short()}, grader {st.get('grader')!r}"


@case("T08", "transport", "loopback plain HTTP on the default server: served with a valid token", needs="serve")
def t08(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    r = s.client("Uma").get(api_state("method", "ada"))
    return r.status == 200, f"state {r.short()} from 127.0.0.1"


# ================================================================ concurrency


@case(
    "C01",
    "conflict",
    "Tess and Uma read version v; Tess saves, then Uma saves on v: Uma's refused 409, Tess's comment kept",
    needs="serve",
)
def c01(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    t, u = s.client("Tess"), s.client("Uma")
    v = version_of(t, "method", "cy")
    r1 = t.post(api_grade("method", "cy"), {"base": v, "comment": "C01 Tess"})
    r2 = u.post(api_grade("method", "cy"), {"base": v, "comment": "C01 Uma"})
    st = state(t, "method", "cy")
    return r1.status == 200 and r2.status == 409 and st.get(
        "comment"
    ) == "C01 Tess", f"Tess {r1.short()}, Uma {r2.short()}, stored {st.get('comment')!r}"


@case(
    "C02",
    "conflict",
    "the 409 carries the saved comment and names who saved it (the page shows 'Tess changed the comment')",
    needs="serve",
)
def c02(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    t, u = s.client("Tess"), s.client("Uma")
    v = version_of(t, "method", "dee")
    t.post(api_grade("method", "dee"), {"base": v, "comment": "C02 Tess text"})
    r = u.post(api_grade("method", "dee"), {"base": v, "comment": "C02 Uma text"})
    return (
        r.status == 409 and "C02 Tess text" in r.text and "Tess" in r.text.replace("C02 Tess text", ""),
        f"{r.short()}; body has comment {'C02 Tess text' in r.text}, names Tess {'Tess' in r.text.replace('C02 Tess text', '')}",
    )


@case("C03", "conflict", "8 TAs' saves racing on one version: exactly one 200, the rest 409, no 500", needs="serve")
def c03(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    clients = [s.client(TAS[i % 3]) for i in range(8)]
    v = version_of(clients[0], "explain", "fay")
    results: list[int | None] = [None] * 8
    barrier = threading.Barrier(8)

    def go(i: int) -> None:
        barrier.wait()
        results[i] = clients[i].post(api_grade("explain", "fay"), {"base": v, "comment": f"race {i}"}).status

    th = [threading.Thread(target=go, args=(i,)) for i in range(8)]
    for x in th:
        x.start()
    for x in th:
        x.join(30)
    return results.count(200) == 1 and results.count(409) == 7, f"statuses {sorted(results, key=str)}"


@case(
    "C04",
    "conflict",
    "a student's grade from a CSV import while TAs grade is a concurrent edit too: a TA's save on the old version is refused 409",
    needs="serve",
)
def c04(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    t = s.client("Tess")
    v = version_of(t, "explain", "bob")
    imp = s.course / "imp.csv"
    imp.write_text("student,question,points,comment\nbob,explain,1,from the spreadsheet\n")
    rc, out = run_cli([*grader_cmd(), "review", "essay", "--out", "scorecards", "--import", str(imp)], s.course, 30)
    r = t.post(api_grade("explain", "bob"), {"base": v, "comment": "C04 Tess over the import"})
    return rc == 0 and r.status == 409, f"import exit {rc}; Tess's save {r.short()}"


def open_page(ctx: Context, d: Any, s: Serve, ta: str, q: str, sid: str) -> None:
    link = s.links.get(ta)
    tok = s.tokens[ta]
    if link:
        d.get(link)
    url = s.base + page_grade(q, sid)
    if link and "token=" in link:
        url += "?token=" + tok
    elif ctx.auth_method == "query":
        url += "?token=" + tok
    d.get(url)
    time.sleep(0.6)


def page_text(d: Any) -> str:
    from selenium.webdriver.common.by import By

    txt = d.find_element(By.TAG_NAME, "body").text
    vals = d.execute_script(
        "return Array.from(document.querySelectorAll('textarea,input')).map(e => e.value).join('\\n')"
    )
    return txt + "\n" + (vals or "")


@case(
    "C05",
    "live",
    "Uma's page open on cy/explain; Tess saves a comment: it appears in Uma's page within 8 s (Chromium)",
    needs="serve",
)
def c05(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    with ctx.browser() as d:
        open_page(ctx, d, s, "Uma", "explain", "cy")
        marker = f"C05-{secrets.token_hex(3)}"
        t0 = time.monotonic()
        r = save(s.client("Tess"), "explain", "cy", comment=f"Tess says {marker}")
        seen = poll(lambda: marker in page_text(d), SHOWN_WITHIN, 0.3)
        dt = time.monotonic() - t0
    return r.status == 200 and bool(
        seen
    ), f"Tess's save {r.short()}; {f'shown after {dt:.1f} s' if seen else f'not shown in {SHOWN_WITHIN:.0f} s'}"


@case(
    "C06", "live", "Uma typing an unsaved comment when Tess's save arrives: Uma's text stays in her box", needs="serve"
)
def c06(ctx: Context) -> tuple[bool, str]:
    return _typing_conflict(ctx)[0:2]


def _typing_conflict(ctx: Context) -> tuple[bool, str, bool, str]:
    key = "typing_conflict"
    if key in ctx.fixtures:
        return ctx.fixtures[key]  # type: ignore[no-any-return]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    s = ctx.serve()
    with ctx.browser() as d:
        open_page(ctx, d, s, "Uma", "explain", "eve")
        body = d.find_element(By.TAG_NAME, "body")
        body.send_keys("c")
        time.sleep(0.3)
        box = d.switch_to.active_element
        draft = f"Uma draft {secrets.token_hex(3)}"
        box.send_keys(draft)
        theirs = f"Tess saved {secrets.token_hex(3)}"
        r = save(s.client("Tess"), "explain", "eve", comment=theirs)
        time.sleep(SHOWN_WITHIN / 2 + 1)
        val = d.execute_script("return (document.getElementById('comment') || document.activeElement).value") or ""
        kept = draft in val
        first = (kept and r.status == 200, f"Tess {r.short()}; Uma's box {'kept' if kept else 'now ' + repr(val[:40])}")
        # now Uma saves (Esc leaves the box and saves): Tess's comment must not vanish in silence
        with contextlib.suppress(Exception):
            d.switch_to.active_element.send_keys(Keys.ESCAPE)
        time.sleep(2.5)
        st = state(s.client("Tess"), "explain", "eve")
        stored = st.get("comment", "")
        shown = page_text(d)
        both = theirs in shown and draft in shown
        ok2 = (theirs in stored and draft not in stored and both) or (theirs in stored and draft in stored)
        second = (ok2, f"stored {stored[:40]!r}; page shows both: {both}")
    res = (*first, *second)
    ctx.fixtures[key] = _Tuple(res)
    return res  # type: ignore[return-value]


class _Tuple(tuple):  # a cached result that is also a fixture
    def stop(self) -> None:
        return None


@case(
    "C07",
    "live",
    "then Uma saves her box: refused as a conflict (Tess's comment kept, both shown) or merged, never Tess's lost in silence",
    needs="serve",
)
def c07(ctx: Context) -> tuple[bool, str]:
    r = _typing_conflict(ctx)
    return r[2], r[3]


@case(
    "C08",
    "live",
    "Uma's page shows Tess's new comment (polled); Uma then applies a rubric item: saved (no stale 409), both kept, grader Uma",
    needs="serve",
)
def c08(ctx: Context) -> tuple[bool, str]:
    from selenium.webdriver.common.by import By

    s = ctx.serve()
    with ctx.browser() as d:
        open_page(ctx, d, s, "Uma", "explain", "bob")
        marker = f"C08-{secrets.token_hex(3)}"
        save(s.client("Tess"), "explain", "bob", comment=marker)
        seen = poll(lambda: marker in page_text(d), SHOWN_WITHIN, 0.3)
        before = state(s.client("Tess"), "explain", "bob")
        on2 = any(i.get("id") == 2 and i.get("on") for i in before.get("items", []))
        d.find_element(By.TAG_NAME, "body").send_keys("1" if on2 else "2")
        time.sleep(2.5)
        st = state(s.client("Tess"), "explain", "bob")
    changed = st.get("version") != before.get("version")
    ok = bool(seen) and changed and st.get("comment") == marker and st.get("grader") == "Uma"
    return (
        ok,
        f"shown {bool(seen)}; Uma's key saved {changed}; comment kept {st.get('comment') == marker}; grader {st.get('grader')!r}",
    )


@case("C09", "live", "an edit via the API is in the other TA's state read (what the page polls) at once", needs="serve")
def c09(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    m = f"C09-{secrets.token_hex(3)}"
    r = save(s.client("Vic"), "method", "ada", comment=m)
    st = state(s.client("Uma"), "method", "ada")
    return r.status == 200 and st.get("comment") == m and st.get(
        "grader"
    ) == "Vic", f"save {r.short()}; Uma reads {st.get('comment')!r} by {st.get('grader')!r}"


# ================================================================ split and progress


def ta_segment(html: str, ta: str, tas: list[str]) -> str:
    """The text of the index from the last mention of a TA's name (their row in a table of graders, if
    any: the last mention) to the next TA's name or the end of that block."""
    txt = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    i = txt.rfind(ta)
    if i < 0:
        return ""
    seg = txt[i + len(ta) :]
    ends = [seg.find(o) for o in tas if o != ta and seg.find(o) >= 0] + [seg.find("Every change"), 300]
    return seg[: min(e for e in ends if e >= 0)]


def split_walk(ctx: Context, s: Serve, ta: str, q: str = "explain") -> list[str]:
    """The submissions a TA is walked through by → (next), from /grade/q."""
    c = s.client(ta)
    seen: list[str] = []
    r = c.get(page_grade(q, "").rstrip("/"), follow=True)
    for _ in range(8):
        m = re.search(r"Submission \d+ of \d+: ([^<\n]+)", re.sub(r"<[^>]+>", "", r.text))
        if not m:
            m = re.search(r'data-submission="([^"]+)"', r.text)
        if not m:
            break
        name = m.group(1).strip()
        if name in seen:
            break
        seen.append(name)
        nx = re.search(r'id="next"[^>]*href="([^"]+)"|href="([^"]+)"[^>]*id="next"', r.text)
        if not nx:
            break
        href = (nx.group(1) or nx.group(2)).replace("&amp;", "&")
        url = href if href.startswith("http") else s.base + href
        r = request(url, headers=c.auth(url)[1], follow=True, jar=c.jar)
    return seen


@case(
    "P01",
    "split",
    "--split question (2 TAs, 2 questions): each TA's page lists a non-empty share, the shares differ and cover both",
    needs="serve",
)
def p01(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve("splitq", tas=["Tess", "Uma"], extra=commands()["split_question"])
    shares = {}
    for ta in ("Tess", "Uma"):
        html = s.client(ta).get("/").text
        seg = ta_segment(html, ta, ["Tess", "Uma"])
        shares[ta] = {q for q in QUESTIONS if re.search(rf"\b{q}\b", seg)}
    ok = all(shares.values()) and shares["Tess"] != shares["Uma"] and (shares["Tess"] | shares["Uma"]) == set(QUESTIONS)
    return ok, f"Tess {sorted(shares['Tess'])}, Uma {sorted(shares['Uma'])}"


@case(
    "P02",
    "split",
    "--split by ranges of students (3 TAs, 6 students): each TA's → walks their own range, together all 6, no overlap",
    needs="serve",
)
def p02(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve("splits", tas=TAS, extra=commands()["split_students"])
    walks = {ta: split_walk(ctx, s, ta) for ta in TAS}
    allseen = [x for w in walks.values() for x in w]
    ok = all(walks.values()) and len(allseen) == len(set(allseen)) == len(STUDENTS)
    return ok, "; ".join(f"{ta} {w}" for ta, w in walks.items())


@case(
    "P03",
    "split",
    "progress per TA: after Tess grades 2 and Uma 1, the index shows each TA with their count",
    needs="serve",
)
def p03(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve("splitq", tas=["Tess", "Uma"], extra=commands()["split_question"])
    t, u = s.client("Tess"), s.client("Uma")
    save(t, "explain", "ada", comment="p1")
    save(t, "explain", "bob", comment="p2")
    save(u, "method", "cy", comment="p3")
    time.sleep(0.5)
    html = u.get("/").text
    st, su = ta_segment(html, "Tess", ["Tess", "Uma"]), ta_segment(html, "Uma", ["Tess", "Uma"])
    ok = (
        bool(re.search(r"\b2\b", st))
        and bool(re.search(r"\b1\b", su))
        and not re.search(r"\b2\b", su.replace("ada – fay", ""))
    )
    return ok, f"Uma's index: Tess row {st[:60]!r}; Uma row {su[:60]!r}"


@case(
    "P04",
    "split",
    "with --split, a TA can still read (not lose) a grade another TA gave outside their share; nothing is reassigned",
    needs="serve",
)
def p04(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve("splitq", tas=["Tess", "Uma"], extra=commands()["split_question"])
    st = state(s.client("Tess"), "method", "cy")
    card = poll(
        lambda: (lambda x: x if "Uma" in x else "")(scorecard_question(s.course, "cy", "method")), OUTPUTS_WITHIN
    )
    return bool(card) and st.get("grader") in (
        "Uma",
        None,
    ), f"cy/method scorecard names Uma: {bool(card)}; Tess reads grader {st.get('grader')!r}"


# ================================================================ hostile input


@case(
    "H01", "input", "a comment of 10,001 characters: refused whole (4xx), the stored comment unchanged", needs="serve"
)
def h01(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Tess")
    save(c, "method", "fay", comment="H01 before")
    r = save(c, "method", "fay", comment="x" * 10_001)
    st = state(c, "method", "fay")
    return r.status is not None and 400 <= r.status < 500 and st.get(
        "comment"
    ) == "H01 before", f"{r.short()}; stored {str(st.get('comment'))[:20]!r}"


@case("H02", "input", "a 5 MB comment: refused (4xx, not 500), the server answers the next request", needs="serve")
def h02(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Tess")
    r = save(c, "explain", "eve", comment="y" * 5_000_000)
    r2 = c.get(api_state("explain", "eve"))
    return r.status is not None and 400 <= r.status < 500 and r2.status == 200, f"big {r.short()}, next {r2.short()}"


@case(
    "H03",
    "input",
    "a comment with <script>/onerror saved by Tess is shown escaped to Uma (Chromium: nothing runs, text shown as typed)",
    needs="serve",
)
def h03(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    evil = "<img src=x onerror=\"document.title='PWNED1'\"><script>document.title='PWNED2'</script>"
    r = save(s.client("Tess"), "method", "eve", comment=evil)
    with ctx.browser() as d:
        open_page(ctx, d, s, "Uma", "method", "eve")
        time.sleep(1.0)
        title = d.title
        shown = evil in page_text(d)
        injected = d.execute_script("return document.querySelectorAll('img[src=\"x\"], script:not([src])').length")
    ok = r.status == 200 and "PWNED" not in title and shown and not injected
    return ok, f"save {r.short()}; title {title[:30]!r}; shown as text {shown}; injected elements {injected}"


@case("H04", "input", "the same comment in the written feedback (eve.html): escaped, not markup", needs="serve")
def h04(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    evil = "<script>alert('H04')</script>"
    save(s.client("Tess"), "explain", "eve", comment=evil)
    p = s.course / "scorecards" / "eve.html"
    txt = poll(
        lambda: (lambda t: t if "H04" in t else "")(p.read_text(errors="replace") if p.exists() else ""), OUTPUTS_WITHIN
    )
    if not txt:
        return False, f"eve.html does not carry the comment within {OUTPUTS_WITHIN:.0f} s"
    return evil not in txt, "raw <script> in eve.html" if evil in txt else "escaped"


@case(
    "H05",
    "input",
    "path traversal in ids (../, %2e%2e%2f, absolute, NUL) on state/save/answer: 400/404 (or a same-site redirect), never 200 or 500",
    needs="serve",
)
def h05(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Tess")
    bad = [
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "%2e%2e%2f%2e%2e%2fconfig.yaml",
        "%2Fetc%2Fpasswd",
        "ada%00",
        "..",
        "ada%2F..%2Fbob",
    ]
    obs = []
    okall = True
    for b in bad:
        for r in (
            c.get(api_state("explain", b)),
            c.post(api_grade("explain", b), {"base": 0, "comment": "trav"}),
            c.get(f"/answer/explain/{b}"),
        ):
            obs.append(r.status)
            loc = r.headers.get("location", "")
            redirect_ok = r.status in (301, 302, 307, 308) and (
                loc.startswith("/") and not loc.startswith("//") or loc.startswith(s.base)
            )
            if (r.status not in (400, 403, 404, 405) and not redirect_ok) or "root:x:" in r.text:
                okall = False
    stray = [p.name for p in (s.course / "scorecards").iterdir() if p.name.startswith(("..", "passwd", "config"))]
    return okall and not stray, f"statuses {sorted(set(map(str, obs)))}{'; stray ' + str(stray) if stray else ''}"


@case("H06", "input", "an unknown submission id: state 404, save 404, no scorecard or row made for it", needs="serve")
def h06(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Tess")
    r1, r2 = c.get(api_state("explain", "zed")), c.post(api_grade("explain", "zed"), {"base": 0, "comment": "ghost"})
    r3 = c.get(api_state("explain", "zed"))
    made = (s.course / "scorecards" / "zed.yaml").exists()
    return (
        r1.status == 404 and r2.status == 404 and r3.status == 404 and not made,
        f"state {r1.short()}, save {r2.short()}, after {r3.short()}, zed.yaml {made}",
    )


@case(
    "H07",
    "input",
    "an unknown question id, and an autograded one (mean): refused 404/400, nothing saved",
    needs="serve",
)
def h07(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Tess")
    r1 = c.post(api_grade("nosuch", "ada"), {"base": 0, "comment": "x"})
    r2 = c.post(api_grade("mean", "ada"), {"base": 0, "comment": "x", "adjustment": 1})
    return r1.status in (400, 404) and r2.status in (
        400,
        404,
        409,
        422,
    ), f"unknown {r1.short()}, autograded {r2.short()}"


@case(
    "H08",
    "input",
    "malformed bodies (not JSON, a list, wrong types, NaN, 1e308 points): 4xx, never 500, total stays within 0..2",
    needs="serve",
)
def h08(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Tess")
    path = api_grade("explain", "dee")
    v = version_of(c, "explain", "dee")
    raw = [
        b"{not json",
        b"[1,2]",
        b'{"base":"x","item":"1; DROP TABLE grades"}',
        f'{{"base":{json_num(v)},"adjustment":NaN}}'.encode(),
        f'{{"base":{json_num(v)},"adjustment":1e308}}'.encode(),
    ]
    sts = []
    for b in raw:
        url, h = c.auth(s.base + path)
        h["Content-Type"] = "application/json"
        sts.append(request(url, "POST", headers=h, body=b, jar=c.jar).status)
    st = state(c, "explain", "dee")
    pts = st.get("points")
    inrange = isinstance(pts, (int, float)) and 0 <= pts <= 2
    return all(
        x is not None and 400 <= x < 500 or x == 200 and i >= 3 for i, x in enumerate(sts)
    ) and inrange and 500 not in sts, f"statuses {sts}; points {pts}"


def json_num(v: Any) -> str:
    import json

    return json.dumps(v)


@case("H09", "input", "an id of 20,000 characters: 404/414, not 500; the server goes on", needs="serve")
def h09(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Tess")
    r = c.get(api_state("explain", "a" * 20_000))
    r2 = c.get(api_state("explain", "ada"))
    return r.status in (400, 404, 414, 431) and r2.status == 200, f"long {r.short()}, next {r2.short()}"


@case(
    "H10",
    "input",
    "CSRF: a cross-site POST (text/plain, Origin: evil) carrying Tess's session cookie but not her token header cannot save",
    needs="serve",
)
def h10(ctx: Context) -> tuple[bool, str]:
    import http.cookiejar

    s = ctx.serve()
    c = s.client("Tess")
    before = state(c, "explain", "ada").get("version")
    jar = http.cookiejar.CookieJar()
    link = s.links.get("Tess") or f"{s.base}/?token={s.tokens['Tess']}"
    request(link, jar=jar, follow=True)
    ncookies = len(list(jar))
    r = request(
        s.base + api_grade("explain", "ada"),
        "POST",
        headers={"Content-Type": "text/plain", "Origin": "http://evil.example"},
        body=f'{{"base":{json_num(before)},"comment":"csrf"}}',
        jar=jar,
    )
    after = state(c, "explain", "ada")
    return refused(r) and after.get(
        "version"
    ) == before, f"{r.short()} (with {ncookies} cookie(s)); version {before} -> {after.get('version')}"


# ================================================================ the Hub


def hub_login(h: Any, user: str) -> tuple[Client, str]:
    """Log in at the Hub as a browser does (DummyAuthenticator), then open the review page through
    the Hub's OAuth; the client then speaks as that page: its cookie and the token the page's own
    calls send (found in the page). Returns the client and the page's text."""
    import http.cookiejar
    import urllib.parse

    jar = http.cookiejar.CookieJar()
    r = request(h.url + "/hub/login", jar=jar, follow=True)
    m = re.search(r'name="_xsrf"[^>]*value="([^"]+)"|value="([^"]+)"[^>]*name="_xsrf"', r.text)
    xsrf = (m.group(1) or m.group(2)) if m else ""
    body = urllib.parse.urlencode({"username": user, "password": "any", "_xsrf": xsrf})
    request(
        h.url + "/hub/login",
        "POST",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        body=body,
        jar=jar,
        follow=True,
    )
    page = request(h.url + h.prefix + page_grade("explain", "ada"), jar=jar, follow=True)
    c = Client(h.url + h.prefix, None, None, user)
    c.jar = jar
    c.last_page = page  # type: ignore[attr-defined]
    cands = re.findall(r'(?:content|value|data-[a-z-]+)="([A-Za-z0-9_\-]{24,})"', page.text)
    for t in dict.fromkeys(cands):
        c.token, c.method = t, "x-review-token"
        if c.get(api_state("explain", "ada")).status == 200:
            return c, page.text
    c.token, c.method = None, "x-review-token"
    return c, page.text


def hub_client(h: Any, user: str | None, token: str | None = None) -> Client:
    """A logged-in user's page client (cached per user), or with a forged token."""
    if user is None:
        return Client(h.url + h.prefix, token, "x-review-token", "")
    key = f"_hub_session_{user}"
    if key not in h.__dict__:
        h.__dict__[key] = hub_login(h, user)
    return h.__dict__[key][0]


@case(
    "U01",
    "hub",
    "Hub: tess (group graders) logs in at the Hub, opens the page through OAuth: state 200 and a save 200",
    needs="hub",
)
def u01(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    c = hub_client(h, "tess")
    r1 = c.get(api_state("explain", "ada"))
    r2 = save(c, "explain", "ada", comment="U01 tess via the Hub")
    return r1.status == 200 and r2.status == 200, f"state {r1.short()}, save {r2.short()}"


@case("U02", "hub", "Hub: each grade records the Hub name (tess) in the state and the scorecard", needs="hub")
def u02(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    c = hub_client(h, "tess")
    save(c, "method", "ada", comment="U02 tess")
    st = state(c, "method", "ada")
    card = poll(
        lambda: (lambda x: x if "tess" in x else "")(scorecard_question(h.course, "ada", "method")), OUTPUTS_WITHIN
    )
    return st.get("grader") == "tess" and bool(
        card
    ), f"state grader {st.get('grader')!r}; scorecard names tess {bool(card)}"


@case(
    "U03",
    "hub",
    "Hub: sam, a student of the Hub (logged in, allowed to reach the service), is refused: index, page, state, save, and a save with tess's page token; nothing changes",
    needs="hub",
)
def u03(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    c = hub_client(h, "sam")
    tess = hub_client(h, "tess")
    v = version_of(tess, "explain", "bob")
    c.token = c.token or "none"
    rs = [
        c.get("/"),
        c.get(page_grade("explain", "bob")),
        c.get(api_state("explain", "bob")),
        c.post(api_grade("explain", "bob"), {"base": v, "comment": "sam"}),
    ]
    c.token = tess.token  # even with the page token of tess's page
    rs.append(c.post(api_grade("explain", "bob"), {"base": v, "comment": "sam with tess's page token"}))
    v2 = version_of(tess, "explain", "bob")
    return all(refused(r) for r in rs) and v == v2, f"{', '.join(r.short() for r in rs)}; version {v}->{v2}"


@case("U04", "hub", "Hub: olga, in another group (oldtas), is refused", needs="hub")
def u04(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    c = hub_client(h, "olga")
    r1, r2 = c.get(api_state("explain", "ada")), c.get("/")
    return refused(r1) and refused(r2), f"state {r1.short()}, index {r2.short()}"


@case("U05", "hub", "Hub: root, a Hub admin in no group, is refused ('only members of the group grade')", needs="hub")
def u05(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    c = hub_client(h, "root")
    r = c.get(api_state("explain", "ada"))
    return refused(r), f"state {r.short()}"


@case("U06", "hub", "Hub: no credentials: a redirect to the Hub's login or 401/403, never the page", needs="hub")
def u06(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    r1 = request(h.url + h.prefix + "/")
    r2 = request(h.url + h.prefix + api_state("explain", "ada"))
    r3 = request(h.url + h.prefix + api_grade("explain", "ada"), "POST", body={"base": 0, "comment": "anon"})
    return all(
        refused(r) for r in (r1, r2, r3)
    ), f"index {r1.short()} {r1.headers.get('location', '')[:40]}, state {r2.short()}, save {r3.short()}"


@case(
    "U07",
    "hub",
    "Hub: a forged page token (no cookie), and tess's real page token with a forged service cookie: refused",
    needs="hub",
)
def u07(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    tess = hub_client(h, "tess")
    r1 = hub_client(h, None, token=secrets.token_hex(32)).get(api_state("explain", "ada"))
    r2 = request(
        h.url + h.prefix + api_state("explain", "ada"),
        headers={
            "X-Review-Token": tess.token or "",
            "Cookie": f"service-review-grader={secrets.token_hex(20)}; jupyterhub-session-id={secrets.token_hex(16)}",
        },
    )
    return refused(r1) and refused(r2), f"token {r1.short()}, cookie {r2.short()}"


@case("U08", "hub", "Hub: tess's save naming uma (grader/user fields, X-Forwarded-User): recorded as tess", needs="hub")
def u08(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    c = hub_client(h, "tess")
    v = version_of(c, "explain", "cy")
    r = c.post(
        api_grade("explain", "cy"),
        {"base": v, "comment": "U08", "grader": "uma", "user": "uma", "graded_by": "uma"},
        headers={"X-Forwarded-User": "uma", "X-Grader": "uma"},
    )
    st = state(c, "explain", "cy")
    return r.status == 200 and st.get("grader") == "tess", f"save {r.short()}; grader {st.get('grader')!r}"


@case(
    "U09",
    "hub",
    "Hub: tess and uma save on the same version: uma's 409 names tess and carries her comment; tess's kept",
    needs="hub",
)
def u09(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    t, u = hub_client(h, "tess"), hub_client(h, "uma")
    v = version_of(t, "method", "dee")
    r1 = t.post(api_grade("method", "dee"), {"base": v, "comment": "U09 tess"})
    r2 = u.post(api_grade("method", "dee"), {"base": v, "comment": "U09 uma"})
    st = state(t, "method", "dee")
    names = "tess" in r2.text.replace("U09 tess", "")
    return (
        r1.status == 200 and r2.status == 409 and st.get("comment") == "U09 tess" and names,
        f"tess {r1.short()}, uma {r2.short()} (names tess: {names}), stored {st.get('comment')!r}",
    )


def _removal(ctx: Context) -> dict[str, Any]:
    if "removal" in ctx.fixtures:
        return ctx.fixtures["removal"]  # type: ignore[no-any-return]
    h = ctx.hub()
    c_old = hub_client(h, "uma")
    res: dict[str, Any] = {"before": c_old.get(api_state("explain", "fay"))}
    res["remove"] = h.remove_from_group("uma")
    c_new, page = hub_login(h, "uma")
    c_new.token = c_new.token or c_old.token  # her old page token with her new login
    res["fresh"] = c_new.get(api_state("explain", "fay"))
    res["fresh_page"] = "Rubric" in page or "Symmetric" in page
    t0 = time.monotonic()
    res["old_refused"] = poll(lambda: refused(c_old.get(api_state("explain", "fay"))), 10, 0.5)
    res["old_after"] = time.monotonic() - t0
    res["old_save"] = save(c_old, "explain", "fay", comment="uma after removal")
    ctx.fixtures["removal"] = _Dict(res)
    return res


@case(
    "U10",
    "hub",
    "Hub: uma taken out of the graders group (Hub API): a new login of hers is refused (page and state)",
    needs="hub",
)
def u10(ctx: Context) -> tuple[bool, str]:
    r = _removal(ctx)
    ok = r["before"].status == 200 and r["remove"].status in (200, 204) and refused(r["fresh"]) and not r["fresh_page"]
    return (
        ok,
        f"before {r['before'].short()}, removal {r['remove'].short()}, new login: page shown {r['fresh_page']}, state {r['fresh'].short()}",
    )


@case(
    "U11",
    "hub",
    "Hub: uma's session from before her removal is refused within 10 s (membership not cached for minutes); a save by it is refused",
    needs="hub",
)
def u11(ctx: Context) -> tuple[bool, str]:
    r = _removal(ctx)
    when = f"after {r['old_after']:.1f} s" if r["old_refused"] else "not within 10 s"
    return (
        bool(r["old_refused"]) and refused(r["old_save"]),
        f"old session refused {when}; its save {r['old_save'].short()}",
    )


@case(
    "U12",
    "hub",
    "--hub started outside a Hub (no JUPYTERHUB_* env): a clear message, non-zero exit, no traceback",
    needs="hub",
)
def u12(ctx: Context) -> tuple[bool, str]:
    ctx.prepare()
    course = ctx.ws.copy("nohub")
    argv = fmt_argv(
        commands()["hub_service_command"], grader=" ".join(grader_cmd()), port=free_port(), hub_listen=LOOPBACK
    )
    env_clean = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")}
    p = subprocess.run(
        argv, cwd=course, env=env_clean, capture_output=True, text=True, timeout=30, start_new_session=True
    )
    out = p.stdout + p.stderr
    if MISSING_MODE.search(out):
        raise NotAvailable("--hub not in this grader")
    return p.returncode != 0 and no_traceback(out) and bool(out.strip()), f"exit {p.returncode}; {last_lines(out, 1)}"


@case(
    "U13",
    "hub",
    "--hub with no review.graders_group in config.yaml: a clear message naming the key and non-zero exit (or nobody grades)",
    needs="hub",
)
def u13(ctx: Context) -> tuple[bool, str]:
    ctx.prepare()
    course = ctx.ws.copy("nogroup")
    write_config(course, None)
    argv = fmt_argv(
        commands()["hub_service_command"], grader=" ".join(grader_cmd()), port=free_port(), hub_listen=LOOPBACK
    )
    env = dict(
        os.environ,
        JUPYTERHUB_API_TOKEN=secrets.token_hex(16),
        JUPYTERHUB_API_URL="http://127.0.0.1:9/hub/api",
        JUPYTERHUB_SERVICE_NAME="review",
        JUPYTERHUB_SERVICE_PREFIX="/services/review/",
        JUPYTERHUB_SERVICE_URL=f"http://127.0.0.1:{free_port()}",
        JUPYTERHUB_CLIENT_ID="service-review",
        JUPYTERHUB_OAUTH_CALLBACK_URL="/services/review/oauth_callback",
        JUPYTERHUB_BASE_URL="/",
    )
    p = Proc(argv, cwd=course, env=env, name="nogroup")
    rc = p.wait_exit(12)
    out = p.output
    p.stop(grace=1)
    if MISSING_MODE.search(out):
        raise NotAvailable("--hub not in this grader")
    if rc is None:
        return False, "still running after 12 s without a graders group (who may grade?)"
    return rc != 0 and no_traceback(out) and "graders_group" in out, f"exit {rc}; {last_lines(out, 1)}"


@case(
    "U14",
    "hub",
    "Hub in Chromium: tess logs in at the Hub and grades (page names tess); sam logs in and is refused",
    needs="hub",
)
def u14(ctx: Context) -> tuple[bool, str]:
    from selenium.webdriver.common.by import By

    h = ctx.hub()
    obs = {}
    for user in ("tess", "sam"):
        with ctx.browser() as d:
            d.get(h.url + "/hub/login")
            d.find_element(By.NAME, "username").send_keys(user)
            with contextlib.suppress(Exception):
                d.find_element(By.NAME, "password").send_keys("any")
            d.find_element(By.CSS_SELECTOR, "form").submit()
            time.sleep(1.0)
            d.get(h.url + h.prefix + page_grade("explain", "dee"))
            time.sleep(1.5)
            obs[user] = d.find_element(By.TAG_NAME, "body").text
    tess_ok = "dee" in obs["tess"] and "tess" in obs["tess"] and "Rubric" in obs["tess"]
    sam_ok = "Rubric" not in obs["sam"] and "The values are 1, 2, 3" not in obs["sam"]
    return tess_ok and sam_ok, f"tess sees the grading page {tess_ok}; sam refused {sam_ok} ({obs['sam'][:50]!r})"


@case("U15", "hub", "Hub: the service's files (out/, course) hold no Hub token (service or user)", needs="hub")
def u15(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    toks = [h.svc_token, h.admin_token]
    hits = [
        str(p.relative_to(h.course))
        for p in files_under(h.course)
        if not str(p.relative_to(h.course)).startswith("hub/")
        for t in toks
        if t.encode() in p.read_bytes()
    ]
    return not hits, ("found in " + ", ".join(hits[:3])) if hits else "none"


def _newtok(ctx: Context) -> dict[str, Any]:
    """Start; Tess opens her link (a cookie); stop; start again with --new-tokens Tess."""
    with ctx.lock("newtok"):
        if "newtok" in ctx.fixtures:
            f = ctx.fixtures["newtok"]
            if isinstance(f, Exception):
                raise f
            return f  # type: ignore[no-any-return]
        if "new_tokens" not in commands():
            raise NotAvailable("no way of making a token anew is given in commands.json")
        import http.cookiejar

        s1 = ctx.serve("newtok1")
        res: dict[str, Any] = {"old_t": s1.tokens["Tess"], "old_u": s1.tokens["Uma"]}
        jar = http.cookiejar.CookieJar()
        request(s1.links.get("Tess") or f"{s1.base}/?token={s1.tokens['Tess']}", jar=jar, follow=True)
        res["cookie_before"] = request(s1.base + api_state("explain", "ada"), jar=jar)
        s1.stop()
        ctx.fixtures.pop("newtok1", None)
        s2 = Serve(ctx, "newtok2", ["Tess"], course=s1.course, port=s1.port, extra=f"{commands()['new_tokens']} Tess")
        try:
            if not s2.start():
                res["error"] = "the restart with new tokens did not print one for Tess: " + s2.error[:120]
            else:
                res["new"] = s2.tokens["Tess"]
                res["r_new"] = Client(s2.base, res["new"], ctx.auth_method).get(api_state("explain", "ada"))
                res["r_old"] = Client(s2.base, res["old_t"], ctx.auth_method).get(api_state("explain", "ada"))
                res["r_uma"] = Client(s2.base, res["old_u"], ctx.auth_method).get(api_state("explain", "ada"))
                res["cookie_after"] = request(s2.base + api_state("explain", "ada"), jar=jar)
        finally:
            s2.stop()
        ctx.fixtures["newtok"] = _Dict(res)
        return res


@case(
    "A15",
    "auth",
    "a TA's token made anew (--new-tokens Tess): the new one works, the old one is refused, Uma's is untouched",
    needs="serve",
)
def a15(ctx: Context) -> tuple[bool, str]:
    r = _newtok(ctx)
    if "error" in r:
        return False, r["error"]
    ok = r["new"] != r["old_t"] and r["r_new"].status == 200 and refused(r["r_old"]) and r["r_uma"].status == 200
    return ok, f"new {r['r_new'].short()}, old {r['r_old'].short()}, Uma's {r['r_uma'].short()}"


@case(
    "A16",
    "auth",
    "the cookie Tess's old link gave her (same address) stops working when her token is made anew",
    needs="serve",
)
def a16(ctx: Context) -> tuple[bool, str]:
    r = _newtok(ctx)
    if "error" in r:
        return False, r["error"]
    before, after = r["cookie_before"], r["cookie_after"]
    if before.status != 200:
        return refused(after), f"a cookie alone reads nothing even before ({before.short()}); after {after.short()}"
    return refused(after), f"cookie before {before.short()}, after the new token {after.short()}"


@case(
    "A17",
    "attrib",
    "one browser, Tess's page open, then Uma's link opened in it: a save from Tess's page is refused or Tess's, never Uma's",
    needs="serve",
)
def a17(ctx: Context) -> tuple[bool, str]:
    import http.cookiejar

    s = ctx.serve()
    jar = http.cookiejar.CookieJar()
    request(s.links["Tess"], jar=jar, follow=True)
    page = request(s.base + page_grade("method", "cy"), jar=jar, follow=True)
    cands = list(dict.fromkeys(re.findall(r'(?:content|value|data-[a-z-]+)="([A-Za-z0-9_\-.]{24,})"', page.text)))
    request(s.links["Uma"], jar=jar, follow=True)  # Uma signs in on the same browser
    v = version_of(s.client("Tess"), "method", "cy")
    results = []
    for t in cands or [""]:
        r = request(
            s.base + api_grade("method", "cy"),
            "POST",
            headers={"X-Review-Token": t},
            body={"base": v, "comment": "A17 from Tess's page"},
            jar=jar,
        )
        results.append(r)
        if r.status == 200:
            break
    st = state(s.client("Tess"), "method", "cy")
    saved = [r for r in results if r.status == 200]
    ok = (not saved) or st.get("grader") == "Tess"
    return (
        ok,
        f"{len(cands)} page value(s) tried: {', '.join(r.short() for r in results[:3])}; grader now {st.get('grader')!r}",
    )


# ================================================================ more: CLI, transport, attribution


@case(
    "S12",
    "setup",
    "graders.csv as a spreadsheet saves it (UTF-8 BOM, CRLF, an extra email column): starts, tokens for Tess and Uma",
    needs="serve",
)
def s12(ctx: Context) -> tuple[bool, str]:
    ctx.prepare()
    course = ctx.ws.copy("excel")
    h = commands().get("graders_csv_header", "name")
    (course / "graders.csv").write_bytes(
        ("\ufeff" + f"{h},email\r\nTess,tess@uni.edu\r\nUma,uma@uni.edu\r\n").encode("utf-8")
    )
    sv = Serve(ctx, "excel", ["Tess", "Uma"], course=course)
    try:
        ok = sv.start()
        out = sv.proc.output if sv.proc else ""
        good = ok and all(len(sv.tokens.get(t, "")) >= 16 for t in ("Tess", "Uma")) and "\ufeff" not in out
        if good:
            good = Client(sv.base, sv.tokens["Uma"], ctx.auth_method).get(api_state("explain", "ada")).status == 200
        return good, ("started; tokens for Tess and Uma work" if good else f"{sv.error or last_lines(out)}")
    finally:
        sv.stop()


@case("S13", "setup", "--serve without --graders: a clear message, non-zero exit, no traceback", needs="serve")
def s13(ctx: Context) -> tuple[bool, str]:
    ctx.prepare()
    course = ctx.ws.copy("nograders")
    argv = [
        a
        for a in fmt_argv(
            commands()["serve"], grader=" ".join(grader_cmd()), graders="@@", host=LOOPBACK, port=free_port()
        )
        if a not in ("--graders", "@@")
    ]
    rc, out = run_cli(argv, course, timeout=20)
    if MISSING_MODE.search(out) and "--serve" in out.split("unrecognized")[-1]:
        raise NotAvailable("--serve not in this grader")
    ok = rc not in (None, 0) and no_traceback(out) and "graders" in out.lower()
    return ok, f"exit {rc}; {last_lines(out, 1)}"


@case(
    "S14", "setup", "--serve on an address already in use: a clear message, non-zero exit, no traceback", needs="serve"
)
def s14(ctx: Context) -> tuple[bool, str]:
    import socket

    ctx.prepare()
    course = ctx.ws.copy("inuse")
    write_graders(course / "graders.csv", ["Tess"])
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    try:
        argv = fmt_argv(
            commands()["serve"],
            grader=" ".join(grader_cmd()),
            graders=str(course / "graders.csv"),
            host=LOOPBACK,
            port=port,
        )
        rc, out = run_cli(argv, course, timeout=20)
    finally:
        sock.close()
    if MISSING_MODE.search(out):
        raise NotAvailable("--serve not in this grader")
    ok = rc not in (None, 0) and no_traceback(out)
    return (
        ok,
        f"exit {rc if rc is not None else 'still running after 20 s'}; {'TRACEBACK; ' if not no_traceback(out) else ''}{last_lines(out, 1)}",
    )


@case(
    "S15",
    "setup",
    "--serve --listen on a bad address ('nowhere:http'): a clear message, non-zero exit, no traceback",
    needs="serve",
)
def s15(ctx: Context) -> tuple[bool, str]:
    ctx.prepare()
    course = ctx.ws.copy("badlisten")
    write_graders(course / "graders.csv", ["Tess"])
    cmd = commands()["serve"].replace("{host}:{port}", "nowhere:http")
    argv = fmt_argv(cmd, grader=" ".join(grader_cmd()), graders=str(course / "graders.csv"), host="", port="")
    rc, out = run_cli(argv, course, timeout=20)
    if MISSING_MODE.search(out) and "--listen" not in out:
        raise NotAvailable("--serve not in this grader")
    ok = rc not in (None, 0) and no_traceback(out)
    return (
        ok,
        f"exit {rc if rc is not None else 'still running after 20 s'}; {'TRACEBACK; ' if not no_traceback(out) else ''}{last_lines(out, 1)}",
    )


@case(
    "T09",
    "transport",
    "--behind-proxy, link opened through HTTPS (X-Forwarded-Proto: https): any session cookie is Secure and HttpOnly",
    needs="serve",
)
def t09(ctx: Context) -> tuple[bool, str]:
    s = open_server(ctx, "proxy", extra=commands()["behind_proxy"])
    link = s.links.get("Tess") or f"{s.base}/?token={s.tokens['Tess']}"
    path = "/" + link.split("/", 3)[3] if link.count("/") >= 3 else "/"
    r = request(
        f"http://{ctx.nonloop}:{s.port}{path}", headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}
    )
    cookie = r.headers.get("set-cookie", "")
    if not cookie:
        return r.status in (200, 302, 303), f"{r.short()}, no cookie set (the token travels in a header)"
    low = cookie.lower()
    return (
        "secure" in low and "httponly" in low,
        f"{r.short()}, Set-Cookie flags: {', '.join(f for f in ('secure', 'httponly', 'samesite') if f in low) or 'none'}",
    )


@case(
    "T10",
    "transport",
    "--behind-proxy: the proxy says the client came by plain HTTP (X-Forwarded-Proto: http, a non-loopback client): refused",
    needs="serve",
)
def t10(ctx: Context) -> tuple[bool, str]:
    s = open_server(ctx, "proxy", extra=commands()["behind_proxy"])
    c = nonloop_client(ctx, s)
    c.extra = {"X-Forwarded-Proto": "http", "X-Forwarded-For": "203.0.113.9"}
    r = c.get(api_state("explain", "ada"))
    return refused(r), f"state {r.short()}"


@case(
    "T11",
    "transport",
    "--behind-proxy, one hop: a client-prepended 'X-Forwarded-For: 127.0.0.1, 203.0.113.9' / 'X-Forwarded-Proto: https, http' does not pass as loopback or HTTPS",
    needs="serve",
)
def t11(ctx: Context) -> tuple[bool, str]:
    s = open_server(ctx, "proxy", extra=commands()["behind_proxy"])
    c = nonloop_client(ctx, s)
    c.extra = {"X-Forwarded-Proto": "https, http", "X-Forwarded-For": "127.0.0.1, 203.0.113.9"}
    r1 = c.get(api_state("explain", "ada"))
    c.extra = {"X-Forwarded-Proto": "http", "X-Forwarded-For": "127.0.0.1, 203.0.113.9"}
    r2 = c.get(api_state("explain", "ada"))
    return refused(r1) and refused(
        r2
    ), f"proto 'https, http': {r1.short()}; proto http with for '127.0.0.1, …': {r2.short()}"


@case(
    "X02",
    "attrib",
    "--serve with --grader Mallory: refused, or every grade still names the token's TA (never Mallory)",
    needs="serve",
)
def x02(ctx: Context) -> tuple[bool, str]:
    ctx.prepare()
    course = ctx.ws.copy("mallory")
    write_graders(course / "graders.csv", ["Tess"])
    sv = Serve(ctx, "mallory", ["Tess"], course=course, extra="--grader Mallory")
    try:
        if not sv.start():
            out = sv.proc.output if sv.proc else ""
            return no_traceback(out) and bool(sv.proc and sv.proc.p.returncode), f"refused: {sv.error[:100]}"
        c = Client(sv.base, sv.tokens["Tess"], ctx.auth_method, "Tess")
        save(c, "explain", "ada", comment="X02")
        st = state(c, "explain", "ada")
        return st.get("grader") == "Tess", f"grader {st.get('grader')!r}"
    finally:
        sv.stop()


@case(
    "X03",
    "attrib",
    "each TA's page says whom it grades as: Uma's index says 'grading as Uma', Vic's 'grading as Vic'",
    needs="serve",
)
def x03(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    got = {}
    for ta in ("Uma", "Vic"):
        txt = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", s.client(ta).get("/").text))
        m = re.search(r"grading as ([^·<]{1,40})", txt)
        got[ta] = m.group(1).strip() if m else ""
    ok = all(got[t].startswith(t) for t in got)
    return ok, f"Uma's page: {got['Uma']!r}, Vic's: {got['Vic']!r}"


@case(
    "X04",
    "attrib",
    "a TA taken out of graders.csv: the grades he gave still name him (state and scorecard) after the restart",
    needs="serve",
)
def x04(ctx: Context) -> tuple[bool, str]:
    r = restart_fixture(ctx)
    st, card = r["vic_state_after_removal"], r["vic_card_after_removal"]
    return (
        r["vic_save"] == 200 and st.get("grader") == "Vic" and "Vic" in card,
        f"save {r['vic_save']}; state grader {st.get('grader')!r}; scorecard names Vic {'Vic' in card}",
    )


@case(
    "C10",
    "conflict",
    "12 saves at once on 12 different answers by 3 TAs: all 200, all kept, each names its TA",
    needs="serve",
)
def c10(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    pairs = [(q, sid) for q in QUESTIONS for sid in STUDENTS]
    clients = {ta: s.client(ta) for ta in TAS}
    jobs = [(TAS[i % 3], q, sid) for i, (q, sid) in enumerate(pairs)]
    bases = {(q, sid): version_of(clients["Tess"], q, sid) for _, q, sid in jobs}
    res: dict[tuple[str, str], int | None] = {}
    barrier = threading.Barrier(len(jobs))
    marker = secrets.token_hex(3)

    def go(ta: str, q: str, sid: str) -> None:
        barrier.wait()
        res[(q, sid)] = (
            clients[ta].post(api_grade(q, sid), {"base": bases[(q, sid)], "comment": f"C10 {marker} {ta}"}).status
        )

    th = [threading.Thread(target=go, args=j) for j in jobs]
    for t in th:
        t.start()
    for t in th:
        t.join(30)
    wrong = []
    for ta, q, sid in jobs:
        st = state(clients["Tess"], q, sid)
        if st.get("comment") != f"C10 {marker} {ta}" or st.get("grader") != ta:
            wrong.append(f"{q}/{sid}")
    n200 = sum(1 for v in res.values() if v == 200)
    return n200 == len(jobs) and not wrong, f"{n200}/{len(jobs)} saved; wrong or lost: {wrong[:4] or 'none'}"


@case(
    "U16",
    "hub",
    "Hub: vera's session cookie (a grader too) with tess's page token: refused or recorded as vera, never as tess",
    needs="hub",
)
def u16(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    tess = hub_client(h, "tess")
    uma_c, _ = hub_login(h, "vera")
    uma_c.token = tess.token
    v = version_of(tess, "method", "fay")
    r = uma_c.post(api_grade("method", "fay"), {"base": v, "comment": "U16 mixed"})
    st = state(tess, "method", "fay")
    ok = refused(r) or (r.status == 200 and st.get("grader") == "vera")
    return ok, f"save {r.short()}; grader {st.get('grader')!r}"


@case(
    "U17",
    "hub",
    "--hub with --grader Mallory: refused at start, or tess's grade still carries her Hub name",
    needs="hub",
)
def u17(ctx: Context) -> tuple[bool, str]:
    ctx.prepare()
    course = ctx.ws.copy("hubmallory")
    argv = fmt_argv(
        commands()["hub_service_command"], grader=" ".join(grader_cmd()), port=free_port(), hub_listen=LOOPBACK
    ) + ["--grader", "Mallory"]
    env = dict(
        os.environ,
        JUPYTERHUB_API_TOKEN=secrets.token_hex(16),
        JUPYTERHUB_API_URL="http://127.0.0.1:9/hub/api",
        JUPYTERHUB_SERVICE_NAME="review",
        JUPYTERHUB_SERVICE_PREFIX="/services/review/",
        JUPYTERHUB_SERVICE_URL=f"http://127.0.0.1:{free_port()}",
        JUPYTERHUB_CLIENT_ID="service-review",
        JUPYTERHUB_OAUTH_CALLBACK_URL="/services/review/oauth_callback",
        JUPYTERHUB_BASE_URL="/",
    )
    p = Proc(argv, cwd=course, env=env, name="hubmallory")
    rc = p.wait_exit(6)
    out = p.output
    p.stop(grace=1)
    if MISSING_MODE.search(out) and "--hub" in out:
        raise NotAvailable("--hub not in this grader")
    if rc is not None:
        return rc != 0 and no_traceback(out), f"refused at start: exit {rc}; {last_lines(out, 1)}"
    # it starts: run it under a Hub of its own and see whom tess's grade names
    from hubctl import Hub

    h = Hub(course, managed=commands().get("hub_managed", True))
    h.extra_args = ["--grader", "Mallory"]
    try:
        if not h.start():
            return False, "the Hub with the service did not start: " + h.error[-100:]
        c, _ = hub_login(h, "tess")
        r = save(c, "explain", "ada", comment="U17")
        st = state(c, "explain", "ada")
        return r.status == 200 and st.get("grader") == "tess", f"save {r.short()}; grader {st.get('grader')!r}"
    finally:
        h.stop()


@case(
    "S16",
    "setup",
    "two TAs whose names differ only in case (Tess, TESS): refused, no traceback (the scorecards could not tell them apart)",
    needs="serve",
)
def s16(ctx: Context) -> tuple[bool, str]:
    h = commands().get("graders_csv_header", "name")
    return _cli_refusal(ctx, "case", f"{h}\nTess\nTESS\n")


@case(
    "P05",
    "split",
    "--split question with more TAs (3) than questions (2): every TA has a share, the 12 answers covered once",
    needs="serve",
)
def p05(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve("splitq3", tas=TAS, extra=commands()["split_question"])
    seen: dict[str, list[tuple[str, str]]] = {}
    for ta in TAS:
        seen[ta] = [(q, sid) for q in QUESTIONS for sid in split_walk(ctx, s, ta, q) if _in_share(s, ta, q, sid)]
    allp = [x for v in seen.values() for x in v]
    ok = all(seen.values()) and len(allp) == len(set(allp)) == len(QUESTIONS) * len(STUDENTS)
    return ok, "; ".join(f"{ta} {len(v)}" for ta, v in seen.items()) + f"; distinct {len(set(allp))}"


def _in_share(s: Serve, ta: str, q: str, sid: str) -> bool:
    """Whether the index row of this TA names question q (whole) or a range holding sid."""
    html = s.client(ta).get("/").text
    seg = ta_segment(html, ta, TAS)
    for m in re.finditer(rf"\b{q}\b:?\s*([a-z]+)\s*[–-]\s*([a-z]+)", seg):
        lo, hi = m.group(1), m.group(2)
        if lo in STUDENTS and hi in STUDENTS and STUDENTS.index(lo) <= STUDENTS.index(sid) <= STUDENTS.index(hi):
            return True
    return False


@case(
    "U18",
    "hub",
    "--hub listening on 0.0.0.0: tess's valid session sent straight to the page from a non-loopback address over plain HTTP is refused",
    needs="hub",
)
def u18(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    if not ctx.nonloop:
        raise NotAvailable("no non-loopback address")
    tess = hub_client(h, "tess")
    cookie = "; ".join(f"{c.name}={c.value}" for c in tess.jar)
    url = f"http://{ctx.nonloop}:{h.svc_port}{h.prefix}{api_state('explain', 'ada')}"
    r = request(url, headers={"Cookie": cookie, "X-Review-Token": tess.token or ""})
    via_hub = tess.get(api_state("explain", "ada"))
    return refused(
        r
    ) and via_hub.status == 200, f"direct from {ctx.nonloop}: {r.short()}; through the Hub: {via_hub.short()}"


@case(
    "S17",
    "input",
    "a TA name holding a newline and a fake link line: refused, or printed without forging a line '  Uma: http://evil…'",
    needs="serve",
)
def s17(ctx: Context) -> tuple[bool, str]:
    ctx.prepare()
    course = ctx.ws.copy("newline")
    g = course / "graders.csv"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([commands().get("graders_csv_header", "name")])
    w.writerow(["Mallory\n  Uma: http://evil.example/?token=stolen"])
    w.writerow(["Uma"])
    g.write_text(buf.getvalue())
    argv = fmt_argv(commands()["serve"], grader=" ".join(grader_cmd()), graders=str(g), host=LOOPBACK, port=free_port())
    p = Proc(argv, cwd=course, name="newline")
    rc = p.wait_exit(8)
    out = p.output
    p.stop(grace=1)
    forged = any(line.lstrip().startswith("Uma: http://evil") for line in out.splitlines())
    if rc is not None:
        return rc != 0 and no_traceback(out) and not forged, f"refused: exit {rc}; {last_lines(out, 1)}"
    return not forged, "started; a forged line printed" if forged else "started; no forged line"


@case("S18", "setup", "--serve and --hub together: a clear message, non-zero exit, no traceback", needs="serve")
def s18(ctx: Context) -> tuple[bool, str]:
    ctx.prepare()
    course = ctx.ws.copy("both")
    write_graders(course / "graders.csv", ["Tess"])
    argv = fmt_argv(
        commands()["serve"],
        grader=" ".join(grader_cmd()),
        graders=str(course / "graders.csv"),
        host=LOOPBACK,
        port=free_port(),
    ) + ["--hub"]
    rc, out = run_cli(argv, course, timeout=15)
    return rc not in (None, 0) and no_traceback(
        out
    ), f"exit {rc if rc is not None else 'still running after 15 s'}; {last_lines(out, 1)}"


@case(
    "T12",
    "transport",
    "no --behind-proxy, a loopback request claiming X-Forwarded-For: 203.0.113.9, Proto: http: still served (the headers are not believed either way)",
    needs="serve",
)
def t12(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    c = s.client("Tess")
    c.extra = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "http"}
    r = c.get(api_state("explain", "ada"))
    return r.status == 200, f"state {r.short()}"


@case(
    "S19",
    "input",
    "a TA name with a line break inside its quoted CSV cell ('Ma\\rllory', 'Tess\\nUma'): refused naming the row, not silently renamed",
    needs="serve",
)
def s19(ctx: Context) -> tuple[bool, str]:
    ctx.prepare()
    course = ctx.ws.copy("crname")
    g = course / "graders.csv"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
    w.writerow([commands().get("graders_csv_header", "name")])
    w.writerow(["Ma\rllory"])
    w.writerow(["Tess\nUma"])
    g.write_text(buf.getvalue())
    argv = fmt_argv(commands()["serve"], grader=" ".join(grader_cmd()), graders=str(g), host=LOOPBACK, port=free_port())
    p = Proc(argv, cwd=course, name="crname")
    rc = p.wait_exit(8)
    out = p.output
    p.stop(grace=1)
    if rc is not None:
        return rc != 0 and no_traceback(out) and "row" in out, f"exit {rc}; {last_lines(out, 1)}"
    names = [ln.split(":")[0].strip() for ln in out.splitlines() if "token=" in ln]
    return False, f"started; TAs printed as {names}"


@case(
    "U19",
    "hub",
    "Hub in Chromium: vera signed in, her page open on bob/explain; tess saves a comment: it shows in vera's page within 8 s",
    needs="hub",
)
def u19(ctx: Context) -> tuple[bool, str]:
    from selenium.webdriver.common.by import By

    h = ctx.hub()
    tess = hub_client(h, "tess")
    with ctx.browser() as d:
        d.get(h.url + "/hub/login")
        d.find_element(By.NAME, "username").send_keys("vera")
        with contextlib.suppress(Exception):
            d.find_element(By.NAME, "password").send_keys("any")
        d.find_element(By.CSS_SELECTOR, "form").submit()
        time.sleep(1.0)
        d.get(h.url + h.prefix + page_grade("explain", "bob"))
        time.sleep(1.0)
        marker = f"U19-{secrets.token_hex(3)}"
        t0 = time.monotonic()
        r = save(tess, "explain", "bob", comment=f"tess says {marker}")
        seen = poll(lambda: marker in page_text(d), SHOWN_WITHIN, 0.3)
        dt = time.monotonic() - t0
        who = "tess" in page_text(d)
    return (
        r.status == 200 and bool(seen) and who,
        f"tess's save {r.short()}; {f'shown after {dt:.1f} s' if seen else f'not shown in {SHOWN_WITHIN:.0f} s'}; names tess {who}",
    )


@case(
    "U20",
    "hub",
    "Hub: tess signs out of the Hub (/hub/logout): that browser's page session is refused within 10 s",
    needs="hub",
)
def u20(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    c, _ = hub_login(h, "tess")  # a browser of her own, not the one the other cases use
    before = c.get(api_state("explain", "ada"))
    request(h.url + "/hub/logout", jar=c.jar, follow=True)
    home = request(h.url + "/hub/home", jar=c.jar)  # signed out of the Hub: a redirect to its login
    out = home.status in (302, 303) and "login" in home.headers.get("location", "")
    t0 = time.monotonic()
    gone = poll(lambda: refused(c.get(api_state("explain", "ada"))), 10, 0.5)
    return (
        before.status == 200 and out and bool(gone),
        f"before {before.short()}; Hub home after logout {home.short()} ({'signed out' if out else 'still signed in'}); page {f'refused after {time.monotonic() - t0:.1f} s' if gone else 'still served after 10 s'}",
    )


@case(
    "X05",
    "attrib",
    "the --export CSV names each grade's TA: Tess's and Uma's fresh grades under their names",
    needs="serve",
)
def x05(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    save(s.client("Tess"), "method", "ada", comment="X05 Tess")
    save(s.client("Uma"), "method", "bob", comment="X05 Uma")
    out = s.course / "x05.csv"
    rc, log = run_cli([*grader_cmd(), "review", "essay", "--out", "scorecards", "--export", str(out)], s.course, 40)
    if rc != 0 or not out.exists():
        return False, f"export exit {rc}: {last_lines(log, 1)}"
    rows = list(csv.DictReader(io.StringIO(out.read_text())))

    def row(sid: str) -> str:
        for r in rows:
            if r.get("student") == sid and r.get("question") == "method":
                return " ".join(str(v) for v in r.values())
        return ""

    ok = "Tess" in row("ada") and "Uma" in row("bob")
    return (
        ok,
        f"ada/method row names Tess {'Tess' in row('ada')}, bob/method names Uma {'Uma' in row('bob')}; columns {list(rows[0].keys()) if rows else []}",
    )


EVIL_HUB_NAME = "<img src=x onerror=alert(1)>"


@case(
    "U21",
    "hub",
    "Hub: a Hub user named <img src=x onerror=alert(1)>: refused with the name inert; once in the group, escaped in the page and in the feedback HTML of the grade he gives",
    needs="hub",
)
def u21(ctx: Context) -> tuple[bool, str]:
    h = ctx.hub()
    c, page = hub_login(h, EVIL_HUB_NAME)
    refused_page = page
    ctype = c.last_page.headers.get("content-type", "")  # type: ignore[attr-defined]
    raw_refusal = EVIL_HUB_NAME in refused_page and "html" in ctype  # raw in text/plain is inert
    shown = "onerror" in refused_page or "&lt;img" in refused_page
    r = h.admin("POST", "/groups/graders/users", {"users": [EVIL_HUB_NAME]})
    time.sleep(6)  # the page may keep who is in the group for a few seconds
    c2, page2 = hub_login(h, EVIL_HUB_NAME)
    raw_page = EVIL_HUB_NAME in page2 and "html" in c2.last_page.headers.get("content-type", "")  # type: ignore[attr-defined]
    admitted = "Rubric" in page2
    raw_feedback = False
    if admitted and c2.token:
        save(c2, "method", "eve", comment="U21 graded by the odd name")
        fb = h.course / "scorecards" / "eve.html"
        txt = (
            poll(
                lambda: (lambda t: t if "U21 graded" in t else "")(
                    fb.read_text(errors="replace") if fb.exists() else ""
                ),
                OUTPUTS_WITHIN,
            )
            or ""
        )
        raw_feedback = EVIL_HUB_NAME in txt
    ok = not raw_refusal and not raw_page and not raw_feedback
    return (
        ok,
        f"refusal ({ctype.split(';')[0]}): raw HTML {raw_refusal} (name shown {shown}); group add {r.short()}; admitted {admitted}; raw in grading page {raw_page}, in eve.html {raw_feedback}",
    )


@case(
    "C11",
    "conflict",
    "Tess applies rubric item 1 and Uma item 2 on the same version: Uma's refused 409 (item 1 kept), or merged with both kept: never item 1 lost",
    needs="serve",
)
def c11(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    t, u = s.client("Tess"), s.client("Uma")
    q, sid = "explain", "ada"
    st0 = state(t, q, sid)
    on0 = {i.get("id"): bool(i.get("on")) for i in st0.get("items", [])}
    # start from both off
    for iid in (1, 2):
        if on0.get(iid):
            save(t, q, sid, item=iid, on=False)
    v = version_of(t, q, sid)
    r1 = t.post(api_grade(q, sid), {"base": v, "item": 1, "on": True})
    r2 = u.post(api_grade(q, sid), {"base": v, "item": 2, "on": True})
    st = state(t, q, sid)
    on = {i.get("id"): bool(i.get("on")) for i in st.get("items", [])}
    ok = (
        r1.status == 200
        and on.get(1) is True
        and ((r2.status == 409 and not on.get(2)) or (r2.status == 200 and on.get(2) is True))
    )
    return ok, f"Tess {r1.short()}, Uma {r2.short()}; items on: {sorted(k for k, v in on.items() if v)}"


def _v6_addr() -> str | None:
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for a in out.split():
        if ":" in a and not a.startswith("fe80") and a != "::1":
            return a
    return None


@case(
    "T13",
    "transport",
    "--listen [::]:PORT (both IPv4 and IPv6), no proxy flag: loopback served by ::1 and by 127.0.0.1; a non-loopback IPv6 and IPv4 address refused",
    needs="serve",
)
def t13(ctx: Context) -> tuple[bool, str]:
    v6 = _v6_addr()
    if not ctx.nonloop or not v6:
        raise NotAvailable("no non-loopback IPv4 and IPv6 addresses here")
    s = ctx.serve("v6", tas=["Tess"], host="[::]")
    tok = s.tokens["Tess"]
    got = {}
    for label, base in (
        ("::1", f"http://[::1]:{s.port}"),
        ("127.0.0.1", f"http://127.0.0.1:{s.port}"),
        (v6, f"http://[{v6}]:{s.port}"),
        (ctx.nonloop, f"http://{ctx.nonloop}:{s.port}"),
    ):
        got[label] = Client(base, tok, ctx.auth_method).get(api_state("explain", "ada"))
    ok = got["::1"].status == 200 and got["127.0.0.1"].status == 200 and refused(got[v6]) and refused(got[ctx.nonloop])
    return ok, ", ".join(f"{k} {r.short()}" for k, r in got.items())


@case(
    "S20",
    "setup",
    "the file holding the tokens' hashes (found by the SHA-256 of a token) is 0600 (docs); no token's hash in a world-readable file",
    needs="serve",
)
def s20(ctx: Context) -> tuple[bool, str]:
    s = ctx.serve()
    digests = {hashlib.sha256(t.encode()).hexdigest() for t in s.tokens.values()}
    holders = []
    for p in files_under(s.course):
        data = p.read_bytes()
        if any(d.encode() in data for d in digests):
            holders.append((p, stat.S_IMODE(p.stat().st_mode)))
    if not holders:
        return True, "no file holds a plain SHA-256 of a token (salted or another hash): modes not checked"
    ok = all(m & 0o077 == 0 for _, m in holders)
    return ok, ", ".join(f"{p.relative_to(s.course)} {oct(m)}" for p, m in holders)


@case(
    "S21",
    "setup",
    "a request refused for coming by plain HTTP from outside, with ?token= in its URL, does not print the token either",
    needs="serve",
)
def s21(ctx: Context) -> tuple[bool, str]:
    s = _open_or_refused(ctx)
    if isinstance(s, tuple):
        return True, "not applicable: " + s[1]
    tok = s.tokens["Uma"]
    q = Client(f"http://{ctx.nonloop}:{s.port}", tok, "query", "Uma")
    r1 = q.get("/")
    r2 = q.get(api_state("explain", "ada"))
    time.sleep(0.5)
    n = sum(1 for line in (s.proc.output if s.proc else "").splitlines() if tok in line)
    return n == 1 and refused(r1) and refused(
        r2
    ), f"index {r1.short()}, state {r2.short()}; lines holding Uma's token: {n}"
