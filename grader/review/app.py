"""``grader review NAME``: the local page where a person grades the questions a program cannot.

A Flask application served by Werkzeug on 127.0.0.1 only. The URL it prints carries a random
token, and every request without it (in the query, or the ``X-Review-Token`` header the page's
script sends) is refused with 403. One question is graded across the class in a row: for each
submission, its answer cells (``grader.review.cells``, in a sandboxed frame that runs no script),
the question's text and reference answer beside them, the autograded questions for context, the
question's rubric (items shared by every answer; an item's points changed once change every
answer it is applied to), free points and a comment. Every change is saved when it is made
(``GradeStore``); the outputs are written again in the background, and once more on exit.
"""

from __future__ import annotations

import hmac
import secrets
import signal
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask, Response, abort, jsonify, render_template, request

from grader.course.model import Assignment, Course
from grader.judge.scorecard import Scorecard, points_text
from grader.notebook.answers import locate
from grader.outputs.view import status_words
from grader.review import cells, merge
from grader.review.store import GradeStore
from grader.vocab import QuestionStatus

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HERE = Path(__file__).resolve().parent


class Writer:
    """Writes the outputs again shortly after grades change, off the request's thread."""

    def __init__(self, store: GradeStore, course: Course, assignment: Assignment, out: Path, formats: Sequence[str]):
        self.args = (store, course, assignment, out, tuple(formats))
        self.dirty: set[str] = set()
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.stopped = False
        self.thread = threading.Thread(target=self._loop, name="grader-review-writer", daemon=True)
        self.thread.start()

    def changed(self, names: Sequence[str]) -> None:
        with self.lock:
            self.dirty.update(names)
        self.wake.set()

    def flush(self) -> None:
        with self.lock:
            names, self.dirty = sorted(self.dirty), set()
        if names:
            store, course, assignment, out, formats = self.args
            merge.rewrite(store, course, assignment, out, formats, names=names)

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

    def names(self) -> list[str]:
        return [n for n, _ in self.store.submissions()]

    def who(self, i: int, name: str, card: Scorecard) -> str:
        if self.anonymous:
            return f"Submission {i + 1}"
        return f"{name} ({card.student})" if card.student and card.student != name else name

    def progress(self, qid: str) -> tuple[int, int]:
        return self.store.progress(qid)


def make_app(review: Review, writer: Writer | None = None) -> Flask:
    app = Flask("grader.review", template_folder=str(HERE / "templates"), static_folder=str(HERE / "static"))
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024
    solution_answers = locate(
        cells.solution_cells(review.assignment.solution),
        cells.solution_cells(review.assignment.solution),
        [(q.id, q.title) for q in review.questions],
    )

    @app.before_request
    def require_token() -> None:
        given = request.args.get("token") or request.headers.get("X-Review-Token") or ""
        if not hmac.compare_digest(given.encode(), review.token.encode()):
            abort(403)

    @app.after_request
    def headers(resp: Response) -> Response:
        resp.headers.setdefault("Content-Security-Policy", PAGE_CSP)
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["Cache-Control"] = "no-store"
        return resp

    def subject(qid: str, i: int) -> tuple[str, Path, Scorecard, Any]:
        subs = review.store.submissions()
        if not 0 <= i < len(subs):
            abort(404)
        name, path = subs[i]
        card = review.store.apply(name, review.store.card(name))
        q = next((q for q in card.questions if q.id == qid), None)
        if q is None:
            abort(404)
        return name, path, card, q

    def state(qid: str, i: int) -> dict[str, Any]:
        name, _, card, q = subject(qid, i)
        grade = review.store.grade(name, qid)
        items = review.store.rubric(qid)
        done, total = review.progress(qid)
        return {
            "question": qid,
            "index": i,
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

    @app.get("/")
    def index() -> str:
        rows = []
        for q in review.questions:
            done, total = review.progress(q.id)
            rows.append({"id": q.id, "title": q.title, "points": points_text(q.points), "done": done, "total": total})
        return render_template("index.html", review=review, rows=rows, token=review.token)

    @app.get("/grade/<qid>/<int:i>")
    def grade_page(qid: str, i: int) -> str:
        question = review.question(qid)
        name, _, card, q = subject(qid, i)
        qids = [x.id for x in review.questions]
        nxt = qids[(qids.index(qid) + 1) % len(qids)]
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
            i=i,
            who=review.who(i, name, card),
            points=points_text(question.points),
            count=len(review.names()),
            next_question=nxt,
            context=context,
            token=review.token,
            found_by=str(q.answer.found_by) if q.answer is not None else "",
        )

    @app.get("/answer/<qid>/<int:i>")
    def answer(qid: str, i: int) -> Response:
        _, path, _, q = subject(qid, i)
        if q.answer is None:
            page = cells.render([], note="No answer to this question was found in the notebook.")
        else:
            page = cells.answer_page(path, q.answer.cells, q.answer.text)
        return Response(page.html, headers={"Content-Security-Policy": page.policy}, mimetype="text/html")

    @app.get("/reference/<qid>")
    def reference(qid: str) -> Response:
        review.question(qid)
        found = solution_answers.get(qid)
        page = cells.reference_page(review.assignment.solution, found.cells if found is not None else None)
        return Response(page.html, headers={"Content-Security-Policy": page.policy}, mimetype="text/html")

    @app.get("/api/state/<qid>/<int:i>")
    def get_state(qid: str, i: int) -> Response:
        return jsonify(state(qid, i))

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

    def changed(names: Sequence[str]) -> None:
        if writer is not None:
            writer.changed(names)

    @app.post("/api/grade/<qid>/<int:i>")
    def post_grade(qid: str, i: int) -> Response:
        question = review.question(qid)
        name, _, _, q = subject(qid, i)
        data = body()
        digest = q.answer.digest if q.answer is not None else ""
        kw = {"grader": review.grader, "digest": digest}
        try:
            if "item" in data:
                review.store.mark(name, qid, int(number(data["item"])), bool(data.get("on", True)), **kw)
            if "adjustment" in data:
                adjustment = number(data["adjustment"])
                if abs(adjustment) > question.points:
                    abort(400)
                review.store.set_adjustment(name, qid, adjustment, **kw)
            if "comment" in data:
                review.store.set_comment(name, qid, str(data["comment"])[:10_000], **kw)
            if data.get("done"):
                grade = review.store.grade(name, qid)
                review.store.set_adjustment(name, qid, grade.adjustment if grade else 0.0, **kw)
        except KeyError:
            abort(404)
        changed([name])
        return jsonify(state(qid, i))

    @app.post("/api/rubric/<qid>")
    def post_item(qid: str) -> Response:
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
            changed(review.names())  # every answer it is applied to
        else:
            review.store.add_item(qid, text, points, grader=review.grader)
        return jsonify(
            {"items": [{"id": it.id, "text": it.text, "points": it.points} for it in review.store.rubric(qid)]}
        )

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
