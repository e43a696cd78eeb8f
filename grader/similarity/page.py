"""``similarity.html``: the pairs ranked, the clusters, and for each pair what is shared and how
rare it is, then the two notebooks side by side with the shared lines marked.

One self-contained file: no remote resource, every text a student wrote escaped, and no script
unless a question's title has math (``$...$``), which the bundled KaTeX typesets, allowed by its
hash in the Content-Security-Policy as in the grader's other pages. Code lines wrap: nothing on
the page scrolls sideways.
"""

from __future__ import annotations

import base64
import hashlib
import re
from html import escape

from grader.outputs import pages
from grader.similarity.compare import DETAILED_BEST, Pair, Shared
from grader.similarity.documents import Document
from grader.similarity.result import NOTICE, Similarity

SIDE_BY_SIDE = DETAILED_BEST  # pairs shown in full, best first
LISTED = 500  # pairs listed in the table
MATH_SELECTOR = ".qt"

STYLE = """
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:1rem 2rem;color:#1d2329;overflow-wrap:anywhere}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccd}
.notice{background:#fff6d6;border:1px solid #e5c453;border-radius:6px;padding:.7rem 1rem;margin:1rem 0}
table{border-collapse:collapse;width:100%;table-layout:fixed}
th,td{text-align:left;padding:.25rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top;overflow-wrap:anywhere}
th{background:#f3f5f7;overflow-wrap:normal}td.num{text-align:right;font-variant-numeric:tabular-nums}
col.rank{width:3rem}col.num{width:5.5rem}col.score{width:8rem}col.md{width:6.5rem}col.name{width:16%}
.high td{background:#fdecea}.muted{color:#68707a}
.bar{display:inline-block;height:.6rem;background:#c0392b;border-radius:2px;vertical-align:middle;margin-right:.3rem}
.pair{border:1px solid #d6dade;border-radius:6px;margin:1rem 0;padding:.5rem 1rem}
.pair summary{cursor:pointer;font-weight:600}
.shared{margin:.5rem 0 1rem}.shared td{font-size:.9rem}
.sides{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1rem}
@media (max-width:900px){.sides{grid-template-columns:minmax(0,1fr)}body{padding:.5rem}table{table-layout:auto}
col.name,col.score,col.num,col.md{width:auto}.bar{display:none}}
.side h3{font-size:1rem;margin:.5rem 0}
.cell{margin:.4rem 0;border:1px solid #e3e6ea;border-radius:4px}
.cell .label{font-size:.8rem;color:#68707a;padding:.1rem .4rem;background:#f7f8f9}
pre{margin:0;font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;white-space:pre-wrap}
.ln{display:grid;grid-template-columns:2.2rem minmax(0,1fr);padding:0 .4rem}
.ln>span{white-space:pre-wrap;overflow-wrap:anywhere}
.ln i{font-style:normal;color:#9aa1a9;user-select:none}
.ln b{grid-column:2;font-weight:normal;color:#7a5c00;font-size:.75rem;font-family:system-ui,sans-serif}
.given{color:#9aa1a9}
.hit{background:#ffe08a}
.legend span{padding:0 .4rem;margin-right:.6rem}
""" + "".join(f".b{n}{{width:{n * 0.35:.2f}rem}}" for n in range(11))
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode("utf-8")).digest()).decode("ascii")
CSP = (
    f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)


def _e(text: object) -> str:
    return escape(str(text), quote=True)


_SUPERSCRIPT = re.compile(r"(?<=\w)\^(\{[^}$]*\}|\w+)")


def title(text: str | None) -> str:
    """A question's title: math in ``$...$`` is left to KaTeX; outside it, ``X^T`` is written with a
    superscript. Escaped first, so nothing in it becomes markup but the superscripts."""
    if text is None:
        return "outside the questions"
    if pages.has_math(text):
        return f'<span class="qt">{_e(text)}</span>'
    return (
        '<span class="qt">' + _SUPERSCRIPT.sub(lambda m: f"<sup>{m.group(1).strip('{}')}</sup>", _e(text)) + "</span>"
    )


def render(result: Similarity, *, min_score: float = 0.0) -> str:
    docs = {d.key: d for d in result.documents}
    shown = [p for p in result.pairs if p.score >= min_score or p.markdown >= min_score]
    current = sum(1 for d in result.documents if not d.past)
    past = len(result.documents) - current
    math = any(pages.has_math(q[1]) for q in _questions_of(result))
    policy = pages.csp(script=pages.katex_script(MATH_SELECTOR)) if math else CSP
    head = (pages.math_head() if math else "") + f"<style>{STYLE}</style>"
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>Similarity: {_e(result.assignment.name)}</title>{head}</head><body>",
        f"<h1>Code similarity: {_e(result.assignment.title)}</h1>",
        f'<p class="notice"><strong>A lead, never proof.</strong> {_e(NOTICE)}</p>',
        f"<p>{current} notebook(s) of this term"
        + (f" and {past} of earlier terms" if past else "")
        + f" read; {len(result.skipped)} skipped. {len(result.pairs)} pair(s) share code that is not "
        "common. Only each student's own code counts: the skeleton's code, the given data cells, outputs "
        "and magics are left out, and code the solution holds is never taken as evidence. Markdown answers "
        "are compared separately, as text.</p>",
        _how_to_read(result),
    ]
    parts.append("<h2>Clusters of three or more</h2>")
    if result.clusters:
        parts.append(
            f"<p>Notebooks joined by pairs scoring at least {result.threshold:.2f} that are, for both of their "
            "notebooks, the closest match.</p><ul>"
        )
        for group in result.clusters:
            parts.append("<li>" + ", ".join(_e(k) for k in group) + "</li>")
        parts.append("</ul>")
    else:
        parts.append(
            f'<p class="muted">None: no three notebooks are joined by pairs scoring at least '
            f"{result.threshold:.2f} that are each other's closest match.</p>"
        )
    parts.append(_table(shown[:LISTED], result.threshold, docs))
    parts.append("<h2>Side by side</h2>")
    if not shown:
        parts.append('<p class="muted">No pair shares code that is not common.</p>')
    titles = {q[0]: q[1] for q in _questions_of(result)}
    for rank, pair in enumerate(shown[:SIDE_BY_SIDE], 1):
        parts.append(_side_by_side(rank, pair, docs[pair.a], docs[pair.b], titles, open_=rank == 1))
    parts.append(_skipped(result))
    if math:
        parts.append(pages.math_tail(MATH_SELECTOR))
    parts.append("</body></html>\n")
    return "".join(parts)


def _questions_of(result: Similarity) -> list[tuple[str, str]]:
    return [(q.id, q.title) for q in result.assignment.questions]


def _how_to_read(result: Similarity) -> str:
    return (
        "<p class=muted>Shared code counts in proportion to how rare it is: by how many of the "
        f"{result.notebooks} notebooks read hold it, and against the common ways of writing each question "
        "(the solution, the skeleton, the usual forms and checks), which count for little. Names, numbers, "
        "strings, comments, whitespace, the order of cells and statements, and a library's spellings of one "
        "operation (<code>@</code> and <code>np.dot</code>, <code>.T</code> and <code>transpose</code>) are set "
        "aside. A pair's score is the larger of two shares: of each notebook's code, weighed by how rare it is, "
        "the part the other holds too beyond what a classmate working alone would share by chance. 1.00: all "
        "of it, as a copy; about one half: half of it, as a notebook made of two classmates' halves; about 0: "
        "what independent students share. A notebook with little of its own beyond the usual cannot reach "
        "1.00: there is too little in it to tell a copy from two students. The scores mean the same whatever "
        "the size of the class.</p>"
    )


def _questions(pair: Pair) -> str:
    named = [m for m in pair.matches if m.title is not None]
    extra = " (and code outside the questions)" if any(m.title is None for m in pair.matches) else ""
    return (", ".join(title(m.title) for m in named) + extra) if named else "code outside the questions"


def _table(pairs: list[Pair], threshold: float, docs: dict[str, Document]) -> str:
    rows = [
        "<h2>Pairs, highest score first</h2><table><colgroup><col class=rank><col class=name><col class=name>"
        "<col class=score><col class=num><col class=num><col><col class=md></colgroup>"
        "<tr><th>#</th><th>notebook A</th><th>notebook B</th><th>score</th><th>share of A</th><th>share of B</th>"
        "<th>the same code for</th><th>markdown</th></tr>"
    ]
    if not pairs:
        rows.append('<tr><td colspan=8 class="muted">No pair shares code that is not common.</td></tr>')
    for rank, p in enumerate(pairs, 1):
        cls = ' class="high"' if p.score >= threshold else ""
        link = f'<a href="#pair-{rank}">{rank}</a>' if rank <= SIDE_BY_SIDE else str(rank)
        rows.append(
            f"<tr{cls}><td>{link}</td><td>{_name(docs[p.a])}</td><td>{_name(docs[p.b])}</td>"
            f'<td class="num"><span class="bar b{int(round(p.score * 10))}"></span>{p.score:.2f}</td>'
            f'<td class="num">{p.a_share:.2f}</td><td class="num">{p.b_share:.2f}</td><td>{_questions(p)}</td>'
            f'<td class="num">{p.markdown:.2f}</td></tr>'
        )
    rows.append("</table>")
    return "".join(rows)


def _name(d: Document) -> str:
    past = ' <span class="muted">(earlier term)</span>' if d.past else ""
    return f'<span title="{_e(d.origin)}">{_e(d.key)}</span>{past}'


def _marks(pair: Pair, side: str) -> dict[int, dict[int, str | None]]:
    """cell -> line -> the question title of the shared code on that line."""
    out: dict[int, dict[int, str | None]] = {}
    for m in pair.matches:
        for r in m.a if side == "a" else m.b:
            for line in range(r.first_line, r.last_line + 1):
                out.setdefault(r.cell, {})[line] = m.title
    return out


def _side(doc: Document, marks: dict[int, dict[int, str | None]], md_cells: set[int]) -> str:
    parts = [f'<div class="side"><h3>{_name(doc)}</h3>']
    for cell in sorted(doc.sources):
        lines = doc.sources[cell].splitlines() or [""]
        own = doc.own_lines.get(cell, set())
        hits = marks.get(cell, {})
        parts.append(f'<div class="cell"><div class="label">cell {cell}</div><pre>')
        last_title: object = object()
        for n, text in enumerate(lines, 1):
            cls = "hit" if n in hits else ("" if n in own else "given")
            tag = ""
            if n in hits and hits[n] != last_title:
                tag = f"<b>{title(hits[n])}</b>"
            last_title = hits.get(n, object())
            parts.append(f'<span class="ln {cls}"><i>{n}</i><span>{_e(text) or " "}</span>{tag}</span>')
        parts.append("</pre></div>")
    for cell in sorted(md_cells):
        parts.append(
            f'<div class="cell"><div class="label">cell {cell} (markdown, shared wording)</div>'
            f'<pre><span class="ln hit"><i></i><span>{_e(doc.markdown.get(cell, ""))}</span></span>'
            "</pre></div>"
        )
    parts.append("</div>")
    return "".join(parts)


def _lines(doc: Document, cell: int, first: int, last: int) -> str:
    source = doc.sources.get(cell, "").splitlines()
    text = " ".join(line.strip() for line in source[first - 1 : last])
    return text if len(text) <= 90 else text[:87] + "…"


def _rarity(s: Shared) -> str:
    others = s.held_by - 2
    held = ("only these two of the " if others <= 0 else f"{s.held_by} of the ") + f"{s.notebooks} notebooks"
    kind = "a common way of writing it" if s.common else "not a common way"
    return f"{held}; {kind}"


def _shared(pair: Pair, a: Document, b: Document, titles: dict[str, str]) -> str:
    if not pair.shared:
        return ""
    rows = [
        '<table class="shared"><colgroup><col class=name><col><col><col class=name><col class=num></colgroup>'
        "<tr><th>question</th><th>in A</th><th>in B</th><th>held by</th><th>rarity</th></tr>"
    ]
    for s in pair.shared:
        what = "the flow into " if s.flow else ""
        rows.append(
            f"<tr><td>{title(titles.get(s.question) if s.question else None)}</td>"
            f"<td>{what}cell {s.a.cell}, line {_span(s.a.first_line, s.a.last_line)}: "
            f"<code>{_e(_lines(a, s.a.cell, s.a.first_line, s.a.last_line))}</code></td>"
            f"<td>cell {s.b.cell}, line {_span(s.b.first_line, s.b.last_line)}: "
            f"<code>{_e(_lines(b, s.b.cell, s.b.first_line, s.b.last_line))}</code></td>"
            f'<td>{_e(_rarity(s))}</td><td class="num">{s.weight:.2f}</td></tr>'
        )
    rows.append("</table>")
    return "<p>What they share, rarest first (rarity 1: as rare as code can be in this class):</p>" + "".join(rows)


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def _side_by_side(rank: int, pair: Pair, a: Document, b: Document, titles: dict[str, str], *, open_: bool) -> str:
    md_a = {ca for ca, _ in pair.markdown_cells}
    md_b = {cb for _, cb in pair.markdown_cells}
    summary = f"{rank}. {_e(pair.a)} and {_e(pair.b)}: score {pair.score:.2f}; the same code for {_questions(pair)}"
    if pair.markdown:
        summary += f"; markdown {pair.markdown:.2f}"
    return (
        f'<details class="pair" id="pair-{rank}"{" open" if open_ else ""}><summary>{summary}</summary>'
        f"{_shared(pair, a, b, titles)}"
        '<p class="legend"><span class="hit">shared code (labelled with its question)</span>'
        "<span class=\"given\">the skeleton's code</span><span>the student's own, not shared</span></p>"
        f'<div class="sides">{_side(a, _marks(pair, "a"), md_a)}{_side(b, _marks(pair, "b"), md_b)}</div>'
        "</details>"
    )


def _skipped(result: Similarity) -> str:
    parts = ["<h2>Skipped</h2>"]
    if not result.skipped and not result.notes:
        parts.append('<p class="muted">Every notebook was read.</p>')
        return "".join(parts)
    if result.skipped:
        parts.append("<table><tr><th>notebook</th><th>file</th><th>why</th></tr>")
        for s in result.skipped:
            parts.append(f"<tr><td>{_e(s.key)}</td><td>{_e(s.origin)}</td><td>{_e(s.reason)}</td></tr>")
        parts.append("</table>")
    if result.notes:
        parts.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in result.notes) + "</ul>")
    return "".join(parts)
