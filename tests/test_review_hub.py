"""Several teaching assistants grading one class at once: with a token each (``--serve --graders``)
and as a JupyterHub service (``--hub``), each grade recorded under its TA's name.

The real parts: a JupyterHub from PyPI with configurable-http-proxy from npm (``make test-setup``
installs both, the proxy into .venv/node), started once for the module on ports free at the time,
its database and cookie secret in a temporary folder, stopped with every process it started; the
review page as the Hub's managed service; Chromium with two TAs signed in at once (one as
127.0.0.1, the other as localhost: two hosts, two cookie jars, one browser). Where the Hub or the
proxy is missing the tests fail and say how to install it; where Chromium is missing they are
skipped, as test_review's are.

The class is ``test_review``'s (``graded``): ada, bob and cy, two questions graded by a person.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_review
from test_review import Page, _browser_missing, card, question

from grader.review.store import GradeStore

graded = test_review.graded  # this module's copy of the class, graded once per worker

ROOT = Path(__file__).resolve().parent.parent
BROWSER = pytest.mark.skipif(bool(_browser_missing()), reason=_browser_missing() or "browser present")
SERVICE = "grader-review"
PASSWORDS = {"tess": "tess-pw", "uma": "uma-pw", "sam": "sam-pw"}  # two TAs and a student


def proxy_command() -> str | None:
    """configurable-http-proxy: the project's own (make test-setup), or one on PATH."""
    local = ROOT / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
    return str(local) if local.exists() else shutil.which("configurable-http-proxy")


def hub_parts_missing() -> str:
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        return "JupyterHub is not installed: `make test-setup` (pip install -e '.[dev]') installs it"
    if proxy_command() is None:
        return (
            "configurable-http-proxy is not installed: `make test-setup` installs it with npm into .venv/node "
            "(where node and npm are missing, apt-get install nodejs npm)"
        )
    return ""


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free on 127.0.0.1 now."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def status(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """(status, Location) of a GET, redirects not followed."""
    parts = urllib.request.urlparse(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    try:
        conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Location") or ""
    finally:
        conn.close()


def stop(proc: subprocess.Popen[Any], log: Path | None = None) -> None:
    """The process asked to stop (a Hub stops its proxy and services itself), then made to, with
    everything it started and left behind (its own session). A Hub whose ``log`` says its cleanup is
    done is not waited for further (its interpreter's own exit takes seconds of a loaded machine)."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 15
    while proc.poll() is None and time.monotonic() < deadline:
        if log is not None and "...done" in log.read_text(errors="replace")[-2000:]:
            break
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(5)


def stop_proxy(pid_file: Path) -> None:
    """The Hub's proxy, which runs in a session of its own: ended where the Hub left it running
    (a Hub that did not stop in time leaves its pid file behind)."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        if b"configurable-http-proxy" in cmdline:
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def course_file(graded) -> Path:
    """The class's config.yaml with the Hub group that grades."""
    path = graded / "hub.yaml"
    path.write_text((graded / "config.yaml").read_text() + "review:\n  graders_group: graders\n")
    return path


def class_copy(graded: Path, out: Path) -> Path:
    """A copy of the class's outputs, with a rubric item for each question."""
    shutil.copytree(graded / "out", out)
    store = GradeStore.in_folder(out)
    store.set_meta("formats", ["yaml", "gradebook"])
    store.add_item("explain", "Names the symmetry", 2)
    store.add_item("weights", "A weighted mean", 2)
    return out


HUB_CONFIG = """
from jupyterhub.auth import Authenticator

PASSWORDS = {passwords!r}


class Passwords(Authenticator):
    async def authenticate(self, handler, data):
        user = data.get("username", "")
        return user if PASSWORDS.get(user) == data.get("password") else None


c = get_config()  # noqa: F821
c.JupyterHub.authenticator_class = Passwords
c.Authenticator.allowed_users = set(PASSWORDS)
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {pid!r}
c.JupyterHub.db_url = "sqlite:///{db}"
c.JupyterHub.cookie_secret_file = {secret!r}
# As docs/review.md has them: the group, the service, the roles.
c.JupyterHub.load_groups = {{"graders": {{"users": ["tess", "uma"]}}}}
c.JupyterHub.services = [
    {{
        "name": "{service}",
        "url": "http://127.0.0.1:{service_port}",
        "command": {command!r},
        "cwd": {cwd!r},
        "oauth_no_confirm": True,
    }}
]
c.JupyterHub.load_roles = [
    {{"name": "graders", "groups": ["graders"], "scopes": ["access:services!service={service}"]}},
    {{"name": "{service}", "services": ["{service}"], "scopes": ["read:groups!group=graders"]}},
    # A Hub that lets every user reach every service: the page itself must refuse the student.
    {{"name": "user", "scopes": ["self", "access:services"]}},
]
"""


@pytest.fixture(scope="module")
def hub(graded, course_file, tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """A JupyterHub with the review page of the class as its managed service (split by question):
    (the Hub's address, the page's output folder). Stopped, with its proxy and service, at the end."""
    missing = hub_parts_missing()
    if missing:
        pytest.fail(missing)
    here = tmp_path_factory.mktemp("hub")
    out = class_copy(graded, here / "out")
    port, hub_port, api_port, service_port = free_ports(4)
    command = [sys.executable, "-m", "grader.cli", "review", "rv", "--out", str(out), "--config", str(course_file)]
    (here / "jupyterhub_config.py").write_text(
        HUB_CONFIG.format(
            passwords=PASSWORDS,
            port=port,
            hub_port=hub_port,
            api_port=api_port,
            proxy=proxy_command(),
            pid=str(here / "proxy.pid"),
            db=here / "jupyterhub.sqlite",
            secret=str(here / "jupyterhub_cookie_secret"),
            service=SERVICE,
            service_port=service_port,
            command=[*command, "--hub", "--split", "question"],
            cwd=str(graded),
        )
    )
    log = (here / "hub.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(here / "jupyterhub_config.py")],
        cwd=here,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:  # up when the proxy routes to the service and the service sends a browser to sign in
            with contextlib.suppress(OSError):
                code, location = status(f"{base}/services/{SERVICE}/")
                if code == 302 and "oauth2/authorize" in location:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the Hub did not start its review service:\n" + (here / "hub.log").read_text()[-3000:])
            time.sleep(0.1)
        yield base, out
    finally:
        stop(proc, here / "hub.log")
        log.close()
        stop_proxy(here / "proxy.pid")


def sign_in(driver: Any, base: str, user: str) -> None:
    """``user`` signs in to the Hub on its login page, on the way to the review page."""
    from selenium.webdriver.common.by import By

    page = Page(driver)
    driver.get(f"{base}/services/{SERVICE}/")
    page.wait.until(lambda d: d.find_elements(By.ID, "username_input"))
    driver.find_element(By.ID, "username_input").send_keys(user)
    driver.find_element(By.ID, "password_input").send_keys(PASSWORDS[user])
    driver.find_element(By.ID, "login_submit").click()
    page.wait.until(lambda d: d.current_url.startswith(f"{base}/services/{SERVICE}/"))


@contextlib.contextmanager
def two_windows(chromium: Any) -> Iterator[tuple[Any, str, str]]:
    """The browser with a second window: (driver, the first's handle, the second's). Every cookie
    of every host cleared on the way out."""
    driver = chromium.get()
    try:
        first = driver.current_window_handle
        driver.switch_to.new_window("window")
        yield driver, first, driver.current_window_handle
    finally:
        with contextlib.suppress(Exception):
            driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        chromium.reset()


def in_window(driver: Any, handle: str) -> Page:
    driver.switch_to.window(handle)
    return Page(driver)


def appears(page: Page, element_id: str, text: str) -> float:
    """Seconds until ``text`` shows in the element (the page polls the grade)."""
    started = time.monotonic()
    page.wait.until(lambda d: text in page.text(element_id))
    return time.monotonic() - started


def grade_together(driver: Any, tess: tuple[str, str], uma: tuple[str, str], names: dict[str, str]) -> list[float]:
    """Two TAs on the same answers at once: each grade, and a comment, shows in the other's window.
    ``tess``, ``uma``: (window, page address of the class); ``names``: their names as recorded.
    The seconds each took to show."""
    from selenium.webdriver.common.by import By

    shown = []
    tw, uw = tess[0], uma[0]
    for window, base in (tess, uma):
        in_window(driver, window)
        driver.get(f"{base}/grade/explain/ada")
        Page(driver).loaded("ada")
    page = in_window(driver, tw)
    page.keys("1")  # Names the symmetry
    page.saved(f"Graded: 2 / 3 points (by {names['tess']})")
    shown.append(appears(in_window(driver, uw), "result", f"Graded: 2 / 3 points (by {names['tess']})"))
    page = in_window(driver, uw)
    page.comment("Say why symmetry gives the mean.")
    page = in_window(driver, tw)
    started = time.monotonic()
    page.wait.until(
        lambda d: d.find_element(By.ID, "comment").get_attribute("value") == "Say why symmetry gives the mean."
    )
    shown.append(time.monotonic() - started)
    assert f"(by {names['uma']})" in page.text("result")
    # Tess goes on to the next answer of her share (bob's); Uma grades weights at ada, Tess sees it.
    page.keys("j")
    page.loaded("bob")
    page.keys("1")
    page.saved(f"Graded: 2 / 3 points (by {names['tess']})")
    for window, base in (tess, uma):
        in_window(driver, window)
        driver.get(f"{base}/grade/weights/ada")
        Page(driver).loaded("ada")
    page = in_window(driver, uw)
    page.keys("0")
    page.saved(f"Graded: 0 / 2 points (by {names['uma']})")
    shown.append(appears(in_window(driver, tw), "result", f"Graded: 0 / 2 points (by {names['uma']})"))
    return shown


def graders_table(driver: Any) -> list[list[str]]:
    from selenium.webdriver.common.by import By

    rows = driver.find_elements(By.CSS_SELECTOR, "#graders tr")[1:]
    return [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]


def scorecards_say(out: Path, expected: dict[tuple[str, str], tuple[str, str]]) -> None:
    """Each (student, question)'s scorecard names its grader and comment (written a moment after the
    change, in the background)."""

    def found() -> dict[tuple[str, str], tuple[str, str]]:
        got = {}
        for sid, qid in expected:
            by = question(card(out, sid), qid).get("graded_by") or {}
            got[(sid, qid)] = (by.get("grader", ""), by.get("comment", ""))
        return got

    deadline = time.monotonic() + 15
    while found() != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert found() == expected


EXPECTED = {  # what grade_together leaves: (student, question) -> (its TA, the comment)
    ("ada", "explain"): ("uma", "Say why symmetry gives the mean."),
    ("bob", "explain"): ("tess", ""),
    ("ada", "weights"): ("uma", ""),
}


def progress_rows(graded: dict[tuple[str, str], str]) -> list[list[str]]:
    """The graders' table as tess reads it when ``graded`` ((student, question) -> TA) is every grade:
    each TA's share (tess: explain, uma: weights, each for ada, bob and cy), how much of it is graded,
    and how many grades the TA gave."""
    rows = []
    for ta, qid in (("tess", "explain"), ("uma", "weights")):
        done = sum(1 for student in ("ada", "bob", "cy") if (student, qid) in graded)
        given = sum(1 for who in graded.values() if who == ta)
        rows.append([f"{ta} (you)" if ta == "tess" else ta, f"{qid}: ada – cy (3)", f"{done} of 3", str(given)])
    return rows


@BROWSER
def test_two_tas_grade_at_once_in_a_hub_and_a_student_is_refused(chromium, hub):
    base, out = hub
    other = base.replace("127.0.0.1", "localhost")  # Uma's host: cookies of its own
    page_path = f"/services/{SERVICE}"
    with two_windows(chromium) as (driver, tw, uw):
        # sam, a student of the Hub, signs in: the page refuses him, and a save from his browser too.
        in_window(driver, uw)
        sign_in(driver, other, "sam")
        assert "you are signed in to the Hub as sam, who is not in the group 'graders'" in driver.page_source
        code = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch(arguments[0], {method: 'POST', headers: {'Content-Type': 'application/json'},"
            " body: JSON.stringify({adjustment: 3})}).then((r) => done(r.status));",
            f"{page_path}/api/grade/explain/ada",
        )
        assert code == 403
        driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        sign_in(driver, other, "uma")
        in_window(driver, tw)
        sign_in(driver, base, "tess")
        before = GradeStore.in_folder(out).graded()  # another test of the module's Hub may have graded
        assert graders_table(driver) == progress_rows(before)
        shown = grade_together(driver, (tw, base + page_path), (uw, other + page_path), {"tess": "tess", "uma": "uma"})
        assert max(shown) < 5, shown  # the page asks every 1.5 s
        in_window(driver, tw)
        driver.get(f"{base}{page_path}/")
        after = {**before, **{key: ta for key, (ta, _) in EXPECTED.items()}}
        assert graders_table(driver) == progress_rows(after)
        assert progress_rows({key: ta for key, (ta, _) in EXPECTED.items()}) == [
            ["tess (you)", "explain: ada – cy (3)", "2 of 3", "1"],
            ["uma", "weights: ada – cy (3)", "1 of 3", "2"],
        ]
    scorecards_say(out, EXPECTED)
    store = GradeStore.in_folder(out)
    assert store.grade("ada", "explain").items and store.grade("ada", "explain").grader == "uma"


def hub_session(base: str, user: str) -> tuple[Any, str]:
    """``user`` signed in to the Hub and through its OAuth to the page, as a browser without
    scripts does it (cookies, redirects, the login form's _xsrf): (the opener, the page's text)."""
    import http.cookiejar

    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with opener.open(f"{base}/services/{SERVICE}/", timeout=20) as resp:  # to the Hub's login page
        login_url, form = resp.url, resp.read().decode()
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form)
    data = {"username": user, "password": PASSWORDS[user], **({"_xsrf": xsrf.group(1)} if xsrf else {})}
    try:
        with opener.open(login_url, data=urllib.parse.urlencode(data).encode(), timeout=20) as resp:
            return opener, resp.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return opener, exc.read().decode()


def test_the_hub_admits_its_graders_group_and_refuses_a_student(hub):
    """Without a browser: a TA of the group signs in through the Hub's OAuth and saves a grade under
    her Hub name; a student who signs in is refused, and so is his save."""
    base, out = hub
    opener, page = hub_session(base, "tess")
    assert "grading as tess" in page
    with opener.open(f"{base}/services/{SERVICE}/grade/weights/cy", timeout=20) as resp:
        value = re.search(r'data-token="([^"]+)"', resp.read().decode())
    assert value is not None
    save = urllib.request.Request(
        f"{base}/services/{SERVICE}/api/grade/weights/cy",
        data=json.dumps({"adjustment": 1}).encode(),
        headers={"Content-Type": "application/json", "X-Review-Token": value.group(1)},
    )
    with opener.open(save, timeout=20) as resp:
        assert json.loads(resp.read())["grader"] == "tess"
    assert GradeStore.in_folder(out).grade("cy", "weights").grader == "tess"
    opener, page = hub_session(base, "sam")
    assert "you are signed in to the Hub as sam, who is not in the group 'graders'" in page
    save.remove_header("X-review-token")
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(save, timeout=20)
    refused.value.close()
    assert refused.value.code == 403 and GradeStore.in_folder(out).grade("cy", "weights").adjustment == 1


def start_serving(
    graded: Path, out: Path, course_file: Path, *args: str
) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """``grader review rv --serve ...`` started; (the process, each TA's link as printed)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader.cli", "review", "rv", "--out", str(out), "--config", str(course_file), *args],
        cwd=graded,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    printed = []
    for line in proc.stdout:
        printed.append(line)
        if line.startswith("Every change is saved"):
            break
    links = dict(re.findall(r"^  (\w+): +(http\S+)$", "".join(printed), re.MULTILINE))
    assert links, "".join(printed)
    return proc, links


def api(base: str, path: str, token: str, data: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    """A call to the page's API as a script makes it, with a TA's token."""
    req = urllib.request.Request(
        base + path,
        data=None if data is None else json.dumps(data).encode(),
        headers={"X-Review-Token": token, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read() or b"{}")


@BROWSER
def test_two_tas_grade_at_once_with_a_token_each(chromium, graded, course_file, tmp_path):
    out = class_copy(graded, tmp_path / "out")
    graders = tmp_path / "graders.csv"
    graders.write_text("name\nTess\nUma\n")
    proc, links = start_serving(
        graded, out, course_file, "--serve", "--graders", str(graders), "--split", "students", "--listen", "127.0.0.1:0"
    )
    base = links["Tess"].split("/?token=")[0]
    other = base.replace("127.0.0.1", "localhost")
    tokens = {name: link.split("?token=")[1] for name, link in links.items()}
    try:
        # Only hashes are kept, in a file only its owner reads.
        kept = (out / "review-access.json").read_text()
        assert (out / "review-access.json").stat().st_mode & 0o777 == 0o600
        assert not any(token in kept for token in tokens.values()) and len(tokens) == 2
        with two_windows(chromium) as (driver, tw, uw):
            in_window(driver, tw)
            driver.get(base + "/grade/explain/ada")
            assert "Forbidden" in driver.page_source  # no token
            driver.get(base + "/?token=" + tokens["Tess"][::-1])
            assert "not (or no longer) valid" in driver.page_source
            driver.get(links["Tess"])
            assert driver.current_url == base + "/"  # the token went into a cookie, out of the address
            in_window(driver, uw)
            driver.get(links["Uma"].replace(base, other))
            assert graders_table(driver) == [
                ["Tess", "explain: ada – bob (2); weights: ada – bob (2)", "0 of 4", "0"],
                ["Uma (you)", "explain: cy (1); weights: cy (1)", "0 of 2", "0"],
            ]
            shown = grade_together(driver, (tw, base), (uw, other), {"tess": "Tess", "uma": "Uma"})
            assert max(shown) < 5, shown
        # Concurrent edits follow the page's rule: a save made on an older version is refused, with theirs.
        _, read = api(base, "/api/state/explain/cy", tokens["Uma"])
        assert (
            api(base, "/api/grade/explain/cy", tokens["Tess"], {"comment": "Tess's", "base": read["version"]})[0] == 200
        )
        code, refused = api(base, "/api/grade/explain/cy", tokens["Uma"], {"comment": "Uma's", "base": read["version"]})
        assert code == 409 and refused["theirs"]["grader"] == "Tess" and refused["theirs"]["comment"] == "Tess's"
    finally:
        stop(proc)
    assert proc.stdout is not None
    with proc.stdout:
        assert "Outputs in" in proc.stdout.read()
    scorecards_say(
        out,
        {
            **{key: (who.capitalize(), comment) for key, (who, comment) in EXPECTED.items()},
            ("cy", "explain"): ("Tess", "Tess's"),
        },
    )


# --------------------------------------------------------------------------------------------
# Without a browser


def test_the_graders_file_is_checked_row_by_row(tmp_path):
    from grader.errors import UsageError
    from grader.review.access import read_graders

    path = tmp_path / "graders.csv"
    path.write_text("name,email\nTess,t@uni.edu\n  Uma \n\n")
    assert read_graders(path) == ["Tess", "Uma"]
    path.write_text("Name;email\nTess;t@uni.edu\n")  # as a spreadsheet saves it in some languages
    assert read_graders(path) == ["Tess"]
    for text, message in (
        ("who\nTess\n", "has no `name` column"),
        ("name\n", "names no teaching assistant"),
        ("name\nTess\ntess\n", "row 3: 'tess' is named already in row 2"),
        ("name,email\n,x@uni.edu\n", "row 2: no name"),
        ("name\nT\x1bess\n", "row 2: 'T\\x1bess' is not a name"),
    ):
        path.write_text(text)
        with pytest.raises(UsageError, match=re.escape(message)):
            read_graders(path)
    with pytest.raises(UsageError, match="does not exist"):
        read_graders(tmp_path / "none.csv")


def test_tokens_are_given_once_and_kept_as_hashes(tmp_path):
    from grader.errors import UsageError
    from grader.review.access import Book

    book = Book.open(tmp_path)
    first = book.issue(["Tess", "Uma"], None)
    assert set(first) == {"Tess", "Uma"} and len(set(first.values())) == 2
    again = Book.open(tmp_path)
    assert again.issue(["Tess", "Uma"], None) == {}  # kept: not shown again
    assert again.name_for(first["Uma"], ["Tess", "Uma"]) == "Uma"
    assert again.name_for(first["Uma"], ["Tess"]) is None  # no longer in graders.csv: refused
    renewed = again.issue(["Tess", "Uma"], ["Uma"])
    assert list(renewed) == ["Uma"] and Book.open(tmp_path).name_for(first["Uma"], ["Tess", "Uma"]) is None
    assert Book.open(tmp_path).name_for(renewed["Uma"], ["Tess", "Uma"]) == "Uma"
    with pytest.raises(UsageError, match="'Vic', not in the graders file"):
        again.issue(["Tess", "Uma"], ["Vic"])
    assert (tmp_path / "review-access.json").stat().st_mode & 0o777 == 0o600


@pytest.fixture
def team_client(graded, tmp_path):
    """The page for Tess and Uma over HTTP (Flask's test client): (the app, their tokens)."""
    from grader.course import config
    from grader.review.access import Book, Team
    from grader.review.app import Review, make_app

    out = class_copy(graded, tmp_path / "out")
    book = Book.open(out)
    tokens = book.issue(["Tess", "Uma"], None)
    course = config.load(graded / "config.yaml")
    review = Review(GradeStore.in_folder(out), course, course.assignment("rv"), "", book.secret)
    return make_app(review, access=Team(book, ["Tess", "Uma"]), split="question"), tokens


def test_plain_http_is_refused_but_from_loopback_or_behind_a_proxy(team_client):
    from werkzeug.middleware.proxy_fix import ProxyFix

    app, tokens = team_client
    far = {"REMOTE_ADDR": "192.0.2.7"}  # another machine
    http = app.test_client()
    assert http.get("/?token=" + tokens["Tess"], environ_base=far).status_code == 403
    assert "HTTPS only" in http.get("/?token=" + tokens["Tess"], environ_base=far).text
    forged = {"X-Forwarded-Proto": "https"}  # believed only behind a proxy
    assert http.get("/?token=" + tokens["Tess"], environ_base=far, headers=forged).status_code == 403
    assert http.get("/?token=" + tokens["Tess"], base_url="https://localhost", environ_base=far).status_code == 302
    app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1, x_proto=1)  # type: ignore[method-assign]
    via = {"REMOTE_ADDR": "127.0.0.1"}  # the proxy, on this machine
    proxied = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "192.0.2.7"}
    resp = http.get("/?token=" + tokens["Tess"], environ_base=via, headers=proxied)
    assert (
        resp.status_code == 302 and "Secure" in resp.headers["Set-Cookie"] and "HttpOnly" in resp.headers["Set-Cookie"]
    )
    for client in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):  # the last: IPv4 to a server on [::]
        assert http.get("/?token=" + tokens["Tess"], environ_base={"REMOTE_ADDR": client}).status_code == 302
    assert http.get("/?token=" + tokens["Tess"], environ_base={"REMOTE_ADDR": "::ffff:192.0.2.7"}).status_code == 403
    plain = {"X-Forwarded-Proto": "http", "X-Forwarded-For": "192.0.2.7"}
    assert http.get("/?token=" + tokens["Tess"], environ_base=via, headers=plain).status_code == 403


def test_a_save_needs_the_page_s_own_header_and_records_its_ta(team_client):
    from grader.review.access import csrf

    app, tokens = team_client
    http = app.test_client()
    assert http.get("/?token=" + tokens["Uma"]).status_code == 302  # the cookie set
    assert http.get("/").status_code == 200
    assert http.post("/api/grade/explain/ada", json={"adjustment": 1}).status_code == 403  # from another site
    secret = app.extensions["grader.review"].access.secret
    ok = http.post("/api/grade/explain/ada", json={"adjustment": 1}, headers={"X-Review-Token": csrf(secret, "Uma")})
    assert ok.status_code == 200 and ok.json["grader"] == "Uma" and ok.json["assigned_to"] == "Tess"
    forged = http.post(
        "/api/grade/explain/ada", json={"adjustment": 2}, headers={"X-Review-Token": csrf(secret, "Tess")}
    )
    assert forged.status_code == 403  # Uma's cookie with Tess's value
    by_script = app.test_client().post(
        "/api/grade/weights/bob", json={"adjustment": 1}, headers={"X-Review-Token": tokens["Tess"]}
    )
    assert (
        by_script.status_code == 200 and by_script.json["grader"] == "Tess" and by_script.json["assigned_to"] == "Uma"
    )


def test_the_work_is_split_by_question_or_by_ranges_of_students():
    from grader.review.team import Split, ranges

    ids = ("ada", "bob", "cy", "dee", "eve")
    assert ranges(ids, 2) == [["ada", "bob", "cy"], ["dee", "eve"]]
    assert Split("question", ("Tess", "Uma"), ("explain", "weights"), ids).shares() == {
        "Tess": {"explain": list(ids)},
        "Uma": {"weights": list(ids)},
    }
    three = Split("question", ("Tess", "Uma", "Vic"), ("explain", "weights"), ids).shares()
    assert three == {
        "Tess": {"explain": ["ada", "bob", "cy"]},
        "Uma": {"weights": list(ids)},
        "Vic": {"explain": ["dee", "eve"]},
    }
    students = Split("students", ("Tess", "Uma"), ("explain", "weights"), ids)
    assert students.shares()["Uma"] == {"explain": ["dee", "eve"], "weights": ["dee", "eve"]}
    assert students.owner("weights", "cy") == "Tess"
    # Every answer is someone's, once.
    for split in (Split(by, ("A", "B", "C"), ("q1", "q2"), ids) for by in ("question", "students")):
        owned = [(q, s) for share in split.shares().values() for q, sids in share.items() for s in sids]
        assert sorted(owned) == sorted((q, s) for q in ("q1", "q2") for s in ids)


def test_options_that_cannot_work_together_are_said(graded, course_file, tmp_path, monkeypatch):
    from test_review import review

    out = class_copy(graded, tmp_path / "out")
    for env in [k for k in os.environ if k.startswith("JUPYTERHUB_")]:
        monkeypatch.delenv(env)
    for args, message in (
        (("--serve",), "--serve needs --graders graders.csv"),
        (("--graders", "g.csv"), "--graders goes with --serve"),
        (("--split", "question"), "--split is for a page several people grade in"),
        (("--listen", "0.0.0.0:8000"), "--listen is for a page several people grade in"),
        (("--serve", "--graders", "none.csv"), "none.csv does not exist"),
        (("--serve", "--graders", "g.csv", "--hub"), "choose one"),
        (("--hub",), "name it in config.yaml as review: {graders_group: GROUP}"),
        (("--hub", "--config", str(course_file)), "JUPYTERHUB_API_TOKEN, JUPYTERHUB_API_URL"),
        (("--serve", "--graders", str(tmp_path / "g.csv"), "--listen", "nowhere"), "is not HOST:PORT"),
    ):
        (tmp_path / "g.csv").write_text("name\nTess\n")
        proc = review(graded, out, *args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
