"""``grader review NAME``: the local page where a person grades the questions a program cannot.

A Flask application served by Werkzeug on 127.0.0.1 only: one Blueprint (``bp``) of module-level
views over the ``Review`` the app carries (``current()``), every link made by ``url_for``. The URL
it prints carries a random token, and every request without it (in the query, or the
``X-Review-Token`` header the page's script sends) is refused with 403. One question is graded
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
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Blueprint, Flask, Response, abort, current_app, jsonify, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as WerkzeugResponse

from grader.course.model import Assignment, Course
from grader.errors import GraderError
from grader.judge.scorecard import Scorecard, points_text
from grader.notebook.answers import locate
from grader.outputs.view import status_words
from grader.review import cells, merge
from grader.review.store import GradeStore, Stored
from grader.vocab import QuestionStatus

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


class Writer:
    """Writes the outputs again shortly after grades change, off the request's thread."""

    def __init__(self, store: GradeStore, course: Course, assignment: Assignment, out: Path, formats: Sequence[str]):
        self.args = (store, course, assignment, out, tuple(formats))
        self.dirty: set[str] = set()
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.stopped = False
        self.said = ""
        self.thread = threading.Thread(target=self._loop, name="grader-review-writer", daemon=True)
        self.thread.start()

    def changed(self, ids: Sequence[str]) -> None:
        with self.lock:
            self.dirty.update(ids)
        self.wake.set()

    def flush(self) -> None:
        with self.lock:
            ids, self.dirty = sorted(self.dirty), set()
        if ids:
            store, course, assignment, out, formats = self.args
            try:
                merge.rewrite(store, course, assignment, out, formats, ids=ids)
            except GraderError as exc:  # a roster conflict: every other file is written; said once
                if str(exc) != self.said:
                    self.said = str(exc)
                    print(f"grader: {exc}", file=sys.stderr, flush=True)

    def _loop(self) -> None:
        while not self.stopped:
            self.wake.wait()
            self.wake.clear()
            if self.stopped:
                return
            self.wake.wait(0.5)  # a burst of keys writes once
            self.wake.clear()
            self.flush()

    def stop(self) -> None:
        self.stopped = True
        self.wake.set()
        self.thread.join(timeout=5)
        self.flush()


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
        if self.anonymous:
            return f"Submission {place}"
        return f"{s.name} ({card.student})" if card.student and card.student != s.name else s.name

    def progress(self, qid: str) -> tuple[int, int]:
        return self.store.progress(qid)


@dataclass(frozen=True)
class Served:
    """What ``make_app`` puts in the app for the views: the review, its writer, the solution's answers."""

    review: Review
    writer: Writer | None
    solution: dict[str, Any]


bp = Blueprint("review", __name__, static_folder="static", static_url_path="/static", template_folder="templates")


def served() -> Served:
    found: Served = current_app.extensions[KEY]
    return found


def current() -> Review:
    return served().review


def link(endpoint: str, **values: Any) -> str:
    """A link for the page: ``url_for`` with the token."""
    return url_for(endpoint, token=current().token, **values)


@bp.before_app_request
def require_token() -> None:
    given = request.args.get("token") or request.headers.get("X-Review-Token") or ""
    if not hmac.compare_digest(given.encode(), current().token.encode()):
        abort(403)


@bp.after_app_request
def headers(resp: Response) -> Response:
    resp.headers.setdefault("Content-Security-Policy", PAGE_CSP)
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "no-referrer"
    resp.headers["Cache-Control"] = "no-store"
    return resp


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
    return {
        "question": qid,
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
        "score": points_text(card.score),
        "max_score": points_text(card.max_score),
    }


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
    return render_template("index.html", review=review, rows=rows, token=review.token)


@bp.get("/grade/<qid>")
def first(qid: str) -> WerkzeugResponse:
    """The question's first submission, as the class is now."""
    review = current()
    review.question(qid)
    subs = review.store.submissions()
    if not subs:
        abort(404)
    return redirect(link("review.grade_page", qid=qid, key=review.key(subs[0].id)))


@bp.get("/<any(next, previous):direction>/<qid>/<path:key>")
def step(direction: str, qid: str, key: str) -> WerkzeugResponse:
    """The submission after (or before) this one, as the class is when it is asked for."""
    review = current()
    review.question(qid)
    place, count, subs = review.around(review.find(key).id)
    to = subs[(place - 1 + (1 if direction == "next" else -1)) % count]
    return redirect(link("review.grade_page", qid=qid, key=review.key(to.id)))


@bp.get("/grade/<qid>/<path:key>")
def grade_page(qid: str, key: str) -> str:
    review = current()
    question = review.question(qid)
    s, card, q = subject(qid, key)
    qids = [x.id for x in review.questions]
    nxt = qids[(qids.index(qid) + 1) % len(qids)]
    place, count, _ = review.around(s.id)
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
        points=points_text(question.points),
        count=count,
        next_question=nxt,
        context=context,
        token=review.token,
        found_by=str(q.answer.found_by) if q.answer is not None else "",
    )


@bp.get("/answer/<qid>/<path:key>")
def answer(qid: str, key: str) -> Response:
    s, _, q = subject(qid, key)
    if q.answer is None:
        page = cells.render([], note="No answer to this question was found in the notebook.")
    else:
        page = cells.answer_page(s.path, q.answer.cells, q.answer.text)
    return Response(page.html, headers={"Content-Security-Policy": page.policy}, mimetype="text/html")


@bp.get("/reference/<qid>")
def reference(qid: str) -> Response:
    review = current()
    review.question(qid)
    found = served().solution.get(qid)
    page = cells.reference_page(review.assignment.solution, found.cells if found is not None else None)
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


@bp.post("/api/grade/<qid>/<path:key>")
def post_grade(qid: str, key: str) -> Response:
    review = current()
    question = review.question(qid)
    s, _, q = subject(qid, key)
    data = body()
    digest = q.answer.digest if q.answer is not None else ""
    kw = {"grader": review.grader, "digest": digest}
    try:
        if "item" in data:
            review.store.mark(s.id, qid, int(number(data["item"])), bool(data.get("on", True)), **kw)
        if "adjustment" in data:
            adjustment = number(data["adjustment"])
            if abs(adjustment) > question.points:
                abort(400)
            review.store.set_adjustment(s.id, qid, adjustment, **kw)
        if "comment" in data:
            review.store.set_comment(s.id, qid, str(data["comment"])[:10_000], **kw)
        if data.get("done"):
            grade = review.store.grade(s.id, qid)
            review.store.set_adjustment(s.id, qid, grade.adjustment if grade else 0.0, **kw)
    except KeyError:
        abort(404)
    changed([s.id])
    return jsonify(state(qid, key))


@bp.post("/api/rubric/<qid>")
def post_item(qid: str) -> Response:
    review = current()
    question = review.question(qid)
    data = body()
    points = number(data.get("points"))
    text = str(data.get("text", "")).strip()[:500]
    if not text or abs(points) > question.points:
        abort(400)
    if "id" in data:
        try:
            review.store.update_item(int(number(data["id"])), text=text, points=points, grader=review.grader)
        except KeyError:
            abort(404)
        changed(review.ids())  # every answer it is applied to
    else:
        review.store.add_item(qid, text, points, grader=review.grader)
    return jsonify({"items": [{"id": it.id, "text": it.text, "points": it.points} for it in review.store.rubric(qid)]})


def make_app(review: Review, writer: Writer | None = None) -> Flask:
    app = Flask("grader.review", static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024
    solution = cells.solution_cells(review.assignment.solution)
    app.extensions[KEY] = Served(
        review, writer, locate(solution, solution, [(q.id, q.title) for q in review.questions])
    )
    app.register_blueprint(bp)
    return app


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
) -> None:
    """Serve until interrupted; the outputs are written again on the way out."""
    from werkzeug.serving import make_server

    from grader.errors import UsageError

    review = Review(store, course, assignment, grader, secrets.token_urlsafe(24), anonymous)
    if not review.questions:
        raise UsageError(f"{assignment.name} has no question graded by a person (manual: true): nothing to review.")
    writer = Writer(store, course, assignment, out, formats)
    # nbconvert's templates load once, while the grader opens the page.
    threading.Thread(target=cells.render, args=([],), name="grader-review-warm-up", daemon=True).start()
    try:
        server = make_server("127.0.0.1", port, make_app(review, writer), threaded=True)
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}.") from None
    print(
        f"Grading {assignment.name} as {grader}: open http://127.0.0.1:{server.server_port}/?token={review.token}",
        flush=True,
    )
    print("Every change is saved as you make it. Stop with Ctrl-C.", flush=True)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # a plain `kill` stops the server as Ctrl-C does: outputs written

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        writer.stop()
        print(f"Outputs in {out}/ written with the grades.", flush=True)
