"""``grader review NAME``: the page where a person grades the questions a program cannot.

A Flask application (served by ``grader.review.server``): one Blueprint (``bp``) of module-level
views over the ``Review`` the app carries (``current()``), every link made by ``url_for``. Who may
grade is the app's ``Access`` (``grader.review.access``): alone on 127.0.0.1, a random token in
every URL or the ``X-Review-Token`` header the page's script sends, anything else refused with 403;
several teaching assistants each with a token of their own; or the members of a JupyterHub group.
Each grade records the person the request was admitted for (``grader()``). One question is graded
across the class in a row: for each submission, its answer cells (``grader.review.cells``, in a
sandboxed frame that runs no script), the question's text and reference answer beside them, the
autograded questions for context, the question's rubric (items shared by every answer; an item's
points changed once change every answer it is applied to), free points and a comment. Every
change is saved when it is made (``GradeStore``); the outputs are written again in the
background, and once more on exit.

A submission is addressed by its id (``Scorecard.id``) in every URL and API call, never by its
place in the class: a submission graded into the folder while the page is open moves nobody's
grade, and "next" is the next submission as the class is when it is asked for. With
``--anonymous`` the id in a URL is a pseudonym (an HMAC of it under the page's token), so names
are in neither the page nor its address.

With several graders the work may be split (``grader.review.team``): "next" then goes through
the grader's own share, and the pages show each grader's progress.

Why one module: the views share one ``Served`` and one set of routes the page's script calls;
split, each would import the others' internals.
"""

from __future__ import annotations

import hashlib
import hmac
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flask import (
    Blueprint,
    Flask,
    Response,
    abort,
    current_app,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from werkzeug.wrappers import Response as WerkzeugResponse

from grader.course.model import Assignment, Course
from grader.errors import GraderError, StaleEdit
from grader.files import printable
from grader.judge import manual
from grader.judge.scorecard import Scorecard, points_text
from grader.notebook.answers import FoundBy, locate, picked, read_cells, unclaimed
from grader.outputs import pages
from grader.outputs.view import status_words
from grader.review import cells, lookalike, merge, team
from grader.review import store as store_module
from grader.review.access import Access, Solo, header_token
from grader.review.store import GradeStore, Stored
from grader.review.writer import Writer
from grader.vocab import QuestionStatus

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src data:; connect-src 'self'; "
    "frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

MAX_COMMENT = 10_000  # characters of a comment: stated in the page, a longer one refused (never cut)
MAX_ITEM = 500  # characters of a rubric item's text


KEY = "grader.review"


@dataclass(frozen=True)
class Review:
    """What the app serves: one assignment's output folder."""

    store: GradeStore
    course: Course
    assignment: Assignment
    grader: str
    token: str
    anonymous: bool = False

    @property
    def questions(self) -> list[Any]:
        return [q for q in self.assignment.questions if q.manual]

    def question(self, qid: str) -> Any:
        for q in self.questions:
            if q.id == qid:
                return q
        abort(404)

    def ids(self) -> list[str]:
        return [s.id for s in self.store.submissions()]

    def key(self, sid: str) -> str:
        """How a URL names the submission ``sid``: its id, or with ``anonymous`` a pseudonym of it."""
        if not self.anonymous:
            return sid
        return hmac.new(self.token.encode(), sid.encode(), hashlib.sha256).hexdigest()[:20]

    def find(self, key: str) -> Stored:
        """The submission a URL names (404 for none)."""
        if not self.anonymous:
            found = self.store.submission(key)
            if found is not None:
                return found
            abort(404)
        for s in self.store.submissions():
            if hmac.compare_digest(self.key(s.id).encode(), key.encode()):
                return s
        abort(404)

    def around(self, sid: str) -> tuple[int, int, list[Stored]]:
        """(its place from 1, how many there are, every submission), as the class is now."""
        subs = self.store.submissions()
        place = next((i for i, s in enumerate(subs) if s.id == sid), -1)
        return place + 1, len(subs), subs

    def who(self, place: int, s: Stored, card: Scorecard) -> str:
        """The submission's name as the page shows it (NFC), with its student's where that differs."""
        if self.anonymous:
            return f"Submission {place}"
        name = lookalike.shown(s.name)
        student = lookalike.shown(card.student or "")
        return f"{name} ({student})" if student and student != name else name

    def name_marks(self, s: Stored, card: Scorecard, subs: Sequence[Stored]) -> list[str]:
        """What the page says about the submission's name: mixed scripts, a look-alike in the class."""
        if self.anonymous:
            return []
        found = lookalike.marks(s.name, [o.name for o in subs if o.id != s.id])
        if card.student and lookalike.shown(card.student) != lookalike.shown(s.name):
            found += [f"student {m}" for m in lookalike.marks(card.student, []) if m.startswith("mixes")]
        return found

    def progress(self, qid: str) -> tuple[int, int]:
        return self.store.progress(qid)


@dataclass(frozen=True)
class Served:
    """What ``make_app`` puts in the app for the views: the review, its writer, the solution's answers."""

    review: Review
    writer: Writer | None
    solution: dict[str, Any]
    figures: dict[str, tuple[str, ...]]  # question id -> the figures the solution's answer draws
    access: Access
    split: str = ""  # how the work is split among the graders (team.SPLITS), or not at all

    def division(self) -> team.Split | None:
        """The split as the class and the graders are now (``None``: not split)."""
        if not self.split:
            return None
        qids = tuple(q.id for q in self.review.questions)
        return team.Split(self.split, tuple(self.access.graders()), qids, tuple(self.review.ids()))


bp = Blueprint("review", __name__, static_folder="static", static_url_path="/static", template_folder="templates")


def served() -> Served:
    found: Served = current_app.extensions[KEY]
    return found


def current() -> Review:
    return served().review


def link(endpoint: str, **values: Any) -> str:
    """A link for the page: ``url_for`` with the token where links carry it."""
    return url_for(endpoint, token=served().access.link_token(), **values)


def grader() -> str:
    """The person this request was admitted for: recorded with every change it makes."""
    name: str = g.grader
    return name


@bp.before_app_request
def admit() -> WerkzeugResponse | None:
    return served().access.admit()


def mine(qid: str) -> list[str]:
    """The submissions of ``qid`` that are this grader's to grade (``[]``: the work is not split, or
    none are theirs)."""
    split = served().division()
    return split.shares().get(grader(), {}).get(qid, []) if split is not None else []


@bp.after_app_request
def headers(resp: Response) -> Response:
    resp.headers.setdefault("Content-Security-Policy", PAGE_CSP)
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "no-referrer"
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.app_errorhandler(GraderError)
@bp.app_errorhandler(sqlite3.DatabaseError)
def unreadable_store(exc: Exception) -> WerkzeugResponse:
    """The grades database gone or damaged while the page is open: said, never a traceback."""
    message = str(exc) if isinstance(exc, GraderError) else store_module.unreadable(current().store.path, str(exc))
    if request.path.startswith("/api/"):
        return refuse(503, message)
    return Response(message + "\n", status=503, mimetype="text/plain")


def subject(qid: str, key: str) -> tuple[Stored, Scorecard, Any]:
    """The submission a URL names, its card with a person's grades, and its result for the question."""
    review = current()
    s = review.find(key)
    card = merge.with_grades(review.store, s.id)
    q = next((q for q in card.questions if q.id == qid), None)
    if q is None:
        abort(404)
    return s, card, q


def state(qid: str, key: str) -> dict[str, Any]:
    review = current()
    s, card, q = subject(qid, key)
    grade = review.store.grade(s.id, qid)
    items = review.store.rubric(qid)
    done, total = review.progress(qid)
    split, graded = served().division(), review.store.graded()
    share = split.shares().get(grader(), {}).get(qid, []) if split is not None else []
    return {
        "question": qid,
        "mine": len(share),
        "mine_graded": sum(1 for sid in share if (sid, qid) in graded),
        "assigned_to": split.owner(qid, s.id) if split is not None else "",
        "submission": key,
        "count": total,
        "graded": done,
        "status": str(q.status),
        "status_text": status_words(q.status),
        "points": q.score if q.status == QuestionStatus.GRADED else None,
        "max_points": q.max_score,
        "review_again": q.status == QuestionStatus.MANUAL and grade is not None,
        "items": [
            {"id": it.id, "text": it.text, "points": it.points, "on": grade is not None and it.id in grade.items}
            for it in items
        ],
        "adjustment": grade.adjustment if grade else 0.0,
        "comment": grade.comment if grade else "",
        "grader": grade.grader if grade else "",
        "at": grade.at if grade else "",
        "version": grade.version if grade else 0,
        "found": q.answer is not None and q.answer.found_by != FoundBy.PERSON,
        "picked": list(q.answer.cells) if q.answer is not None and q.answer.found_by == FoundBy.PERSON else [],
        "notebook": [] if q.answer is not None and q.answer.found_by != FoundBy.PERSON else notebook(s),
        "score": points_text(card.score),
        "max_score": points_text(card.max_score),
        "outputs_problem": writer.problem if (writer := served().writer) is not None else "",
    }


def notebook(s: Stored) -> list[dict[str, Any]]:
    """Every cell of a submission, for a person to pick an answer from: its number, kind, first
    line, and whether no question claims it (what the student wrote that nothing else holds)."""
    review = current()
    found = read_cells(s.path)
    given = manual.given_cells(review.assignment)
    free = unclaimed(found, given, locate(found, given, manual.manual_questions(review.assignment)))
    return [
        {
            "n": c.index,
            "kind": c.kind,
            "preview": printable(next((line.strip() for line in c.source.splitlines() if line.strip()), ""))[:120],
            "unclaimed": c.index in free,
        }
        for c in found
    ]


@bp.get("/")
def index() -> str:
    review = current()
    rows = []
    for q in review.questions:
        done, total = review.progress(q.id)
        rows.append(
            {
                "id": q.id,
                "title": q.title,
                "points": points_text(q.points),
                "done": done,
                "total": total,
                "url": link("review.first", qid=q.id),
            }
        )
    split = served().division()
    subs = review.store.submissions()
    names = {s.id: f"Submission {i}" if review.anonymous else s.name for i, s in enumerate(subs, start=1)}
    graders = team.progress(split, served().access.graders(), review.store.graded(), names)
    return render_template("index.html", review=review, rows=rows, graders=graders, split=served().split)


@bp.get("/grade/<qid>")
def first(qid: str) -> WerkzeugResponse:
    """The question's first submission, as the class is now."""
    review = current()
    review.question(qid)
    subs, share, graded = review.store.submissions(), mine(qid), review.store.graded()
    if not subs:
        abort(404)
    first = next((sid for sid in share if (sid, qid) not in graded), share[0] if share else subs[0].id)
    return redirect(link("review.grade_page", qid=qid, key=review.key(first)))


@bp.get("/<any(next, previous):direction>/<qid>/<path:key>")
def step(direction: str, qid: str, key: str) -> WerkzeugResponse:
    """The submission after (or before) this one, as the class is when it is asked for."""
    review = current()
    review.question(qid)
    place, count, subs = review.around(review.find(key).id)
    share, ahead = set(mine(qid)), 1 if direction == "next" else -1
    order = [subs[(place - 1 + ahead * n) % count] for n in range(1, count + 1)]  # after this one, round the class
    to = next((s for s in order if s.id in share), order[0])  # the grader's own next, where the work is split
    return redirect(link("review.grade_page", qid=qid, key=review.key(to.id)))


@bp.get("/grade/<qid>/<path:key>")
def grade_page(qid: str, key: str) -> str:
    review = current()
    question = review.question(qid)
    s, card, q = subject(qid, key)
    qids = [x.id for x in review.questions]
    nxt = qids[(qids.index(qid) + 1) % len(qids)]
    place, count, subs = review.around(s.id)
    context = [
        {
            "id": x.id,
            "title": x.title,
            "status": status_words(x.status),
            "points": f"{points_text(x.score)}/{points_text(x.max_score)}",
        }
        for x in card.questions
        if x.id != qid
    ]
    return render_template(
        "grade.html",
        review=review,
        question=question,
        q=q,
        key=key,
        place=place,
        who=review.who(place, s, card),
        name_marks=review.name_marks(s, card, subs),
        points=points_text(question.points),
        count=count,
        next_question=nxt,
        context=context,
        found_by=str(q.answer.found_by) if q.answer is not None else "",
        comment_limit=MAX_COMMENT,
        item_limit=MAX_ITEM,
        card=card,  # its late line, with the button that waives it
    )


# Question titles in the page's own headers and lists (``class="math"``): instructors' text, typeset
# by the bundled KaTeX, served as the page's own script and stylesheet (its fonts inlined).
TITLES = ".math"


@bp.app_context_processor
def with_math() -> dict[str, Any]:
    """Whether the page loads KaTeX (only where a question's title has math); who grades; the token
    its links carry, and what its script sends."""
    review, access = served().review, served().access
    name = getattr(g, "grader", "")
    return {
        "math": any(pages.has_math(q.title) for q in review.assignment.questions),
        "grader": name,
        "token": access.link_token(),
        "header_token": header_token(access, name),
        "poll_ms": access.poll_ms,
        "several": not isinstance(access, Solo),
    }


@bp.get("/katex.css")
def katex_css() -> Response:
    return Response(pages.katex_style(), mimetype="text/css")


@bp.get("/katex.js")
def katex_js() -> Response:
    return Response(pages.katex_script(TITLES), mimetype="text/javascript")


@bp.get("/answer/<qid>/<path:key>")
def answer(qid: str, key: str) -> Response:
    s, _, q = subject(qid, key)
    if q.answer is None or q.answer.found_by == FoundBy.PERSON:
        page = cells.notebook_page(
            s.path,
            frozenset(c["n"] for c in notebook(s) if c["unclaimed"]),
            q.answer.cells if q.answer is not None else (),
        )
    else:
        page = cells.answer_page(s.path, q.answer.cells, q.answer.text, q.answer.figures, q.answer.figures_left_out)
    return Response(page.html, headers={"Content-Security-Policy": page.policy}, mimetype="text/html")


@bp.get("/reference/<qid>")
def reference(qid: str) -> Response:
    review = current()
    review.question(qid)
    found = served().solution.get(qid)
    page = cells.reference_page(
        review.assignment.solution, found.cells if found is not None else None, served().figures.get(qid, ())
    )
    return Response(page.html, headers={"Content-Security-Policy": page.policy}, mimetype="text/html")


@bp.get("/api/state/<qid>/<path:key>")
def get_state(qid: str, key: str) -> Response:
    return jsonify(state(qid, key))


def body() -> dict[str, Any]:
    data = request.get_json(silent=True)
    if not isinstance(data, dict):
        abort(400)
    return data


def number(value: Any) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        abort(400)
    if x != x or x in (float("inf"), float("-inf")):
        abort(400)
    return x


def changed(ids: Sequence[str]) -> None:
    writer = served().writer
    if writer is not None:
        writer.changed(ids)


def refuse(status: int, message: str) -> WerkzeugResponse:
    """An API call refused, with what the page shows about it."""
    resp = jsonify({"error": message})
    resp.status_code = status
    return resp


@bp.post("/api/grade/<qid>/<path:key>")
def post_grade(qid: str, key: str) -> WerkzeugResponse:
    """One change to a grade, made on the version of it the page shows (``base``): a change made on
    an older version than the stored one (another tab, another grader, an import since) is refused
    with 409 and both, to merge; nothing is laid over a newer edit."""
    review = current()
    question = review.question(qid)
    s, _, q = subject(qid, key)
    data = body()
    digest = q.answer.digest if q.answer is not None else ""
    base = int(number(data["base"])) if "base" in data else None
    kw: dict[str, Any] = {"grader": grader(), "digest": digest}
    if "comment" in data and len(str(data["comment"])) > MAX_COMMENT:
        return refuse(
            413,
            f"The comment is {len(str(data['comment'])):,} characters; at most {MAX_COMMENT:,} are kept. Not saved.",
        )
    changes: list[tuple[Any, ...]] = []
    if "item" in data:
        changes.append((review.store.mark, s.id, qid, int(number(data["item"])), bool(data.get("on", True))))
    if "adjustment" in data:
        adjustment = number(data["adjustment"])
        if abs(adjustment) > question.points:
            return refuse(
                400, f"Free points are between -{points_text(question.points)} and {points_text(question.points)}."
            )
        changes.append((review.store.set_adjustment, s.id, qid, adjustment))
    if "comment" in data:
        changes.append((review.store.set_comment, s.id, qid, str(data["comment"])))
    if data.get("done"):
        grade = review.store.grade(s.id, qid)
        changes.append((review.store.set_adjustment, s.id, qid, grade.adjustment if grade else 0.0))
    try:
        for n, (change, *args) in enumerate(changes):
            change(*args, **kw, base=base if n == 0 else None)  # one change on the page's version, then its own
    except KeyError:
        abort(404)
    except StaleEdit:
        resp = jsonify({"conflict": True, "mine": data, "theirs": state(qid, key)})
        resp.status_code = 409
        return resp
    changed([s.id])
    return jsonify(state(qid, key))


@bp.post("/api/waive/<path:key>")
def post_waive(key: str) -> WerkzeugResponse:  # a person waives a late penalty, or takes it back
    s, data, r = current().find(key), body(), current()
    merge.set_waiver(r.store, s.id, grader(), str(data.get("reason", ""))[:MAX_ITEM], bool(data.get("waive")))
    changed([s.id])
    return jsonify({"late": merge.with_grades(r.store, s.id).late_line()})


@bp.post("/api/pick/<qid>/<path:key>")
def post_pick(qid: str, key: str) -> WerkzeugResponse:
    """The cells a person picked as the answer, where the autograder found none (``[]``: taken
    back); kept with the grade, which goes with the answer to them."""
    review = current()
    review.question(qid)
    s, _, q = subject(qid, key)
    chosen = body().get("cells")
    if not isinstance(chosen, list) or len(chosen) > 10_000:
        abort(400)
    if q.answer is not None and q.answer.found_by != FoundBy.PERSON:
        return refuse(400, "The autograder found the cells of this answer: there is none to pick.")
    indices = [int(number(c)) for c in chosen]
    new = picked(read_cells(s.path), indices)
    was = q.answer.digest if q.answer is not None else ""
    review.store.pick(s.id, qid, indices, grader=grader(), was=was, now_=new.digest if new else "")
    changed([s.id])
    return jsonify(state(qid, key))


@bp.post("/api/rubric/<qid>")
def post_item(qid: str) -> WerkzeugResponse:
    review = current()
    question = review.question(qid)
    data = body()
    points = number(data.get("points"))
    text = str(data.get("text", "")).strip()
    if len(text) > MAX_ITEM:
        return refuse(413, f"A rubric item is at most {MAX_ITEM} characters; this one is {len(text)}. Not saved.")
    if not text or abs(points) > question.points:
        abort(400)
    if "id" in data:
        try:
            review.store.update_item(int(number(data["id"])), text=text, points=points, grader=grader())
        except KeyError:
            abort(404)
        changed(review.ids())  # every answer it is applied to
    else:
        review.store.add_item(qid, text, points, grader=grader())
    return jsonify({"items": [{"id": it.id, "text": it.text, "points": it.points} for it in review.store.rubric(qid)]})


def make_app(
    review: Review,
    writer: Writer | None = None,
    figures: dict[str, tuple[str, ...]] | None = None,
    access: Access | None = None,
    split: str = "",
) -> Flask:
    """The page's app. ``figures``: the figures the solution's answers draw, by question
    (``References.figures``), shown with the reference answer. ``access``: who may grade (by
    default the one person of ``review``, with its token); ``split``: how the work is divided."""
    app = Flask("grader.review", static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = 256 * 1024  # room for a comment over MAX_COMMENT, refused with its own message
    solution = cells.solution_cells(review.assignment.solution)
    admits: Access = access if access is not None else Solo(review.token, review.grader)
    app.extensions[KEY] = Served(
        review,
        writer,
        locate(solution, solution, [(q.id, q.title) for q in review.questions]),
        figures or {},
        admits,
        split,
    )
    admits.routes(app)
    app.register_blueprint(bp)
    return app
