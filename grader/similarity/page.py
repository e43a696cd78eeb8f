"""``similarity.html``: the pairs ranked, the clusters, and two notebooks side by side with the
shared lines marked. One self-contained file: no script, no remote resource, one stylesheet
allowed by its hash (Content-Security-Policy), every text a student wrote escaped."""

from __future__ import annotations

import base64
import hashlib
from html import escape

from grader.similarity.compare import Pair
from grader.similarity.documents import Document
from grader.similarity.result import NOTICE, Similarity

SIDE_BY_SIDE = 40  # pairs shown in full, best first
LISTED = 500  # pairs listed in the table

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:1rem 2rem;color:#1d2329}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccd}
.notice{background:#fff6d6;border:1px solid #e5c453;border-radius:6px;padding:.7rem 1rem;margin:1rem 0}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.25rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top}
th{background:#f3f5f7}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.high td{background:#fdecea}.muted{color:#68707a}
.bar{display:inline-block;height:.6rem;background:#c0392b;border-radius:2px;vertical-align:middle;margin-right:.4rem}
.pair{border:1px solid #d6dade;border-radius:6px;margin:1rem 0;padding:.5rem 1rem}
.pair summary{cursor:pointer;font-weight:600}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
.side h3{font-size:1rem;margin:.5rem 0}
.cell{margin:.4rem 0;border:1px solid #e3e6ea;border-radius:4px;overflow-x:auto}
.cell .label{font-size:.8rem;color:#68707a;padding:.1rem .4rem;background:#f7f8f9}
pre{margin:0;font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
.ln{display:grid;grid-template-columns:2.2rem 1fr auto;white-space:pre;padding:0 .4rem}
.ln i{font-style:normal;color:#9aa1a9;user-select:none}
.given{color:#9aa1a9}
.hit{background:#ffe08a}
.hit b{font-weight:normal;color:#7a5c00;font-size:.75rem;padding-left:1rem;font-family:system-ui,sans-serif}
.legend span{padding:0 .4rem;margin-right:.6rem}
"""
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode("utf-8")).digest()).decode("ascii")
CSP = (
    f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def render(result: Similarity, *, min_score: float = 0.0) -> str:
    docs = {d.key: d for d in result.documents}
    shown = [p for p in result.pairs if p.score >= min_score or p.markdown >= min_score]
    current = sum(1 for d in result.documents if not d.past)
    past = len(result.documents) - current
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>Similarity: {_e(result.assignment.name)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Code similarity: {_e(result.assignment.title)}</h1>",
        f'<p class="notice"><strong>A lead, never proof.</strong> {_e(NOTICE)}</p>',
        f"<p>{current} notebook(s) of this term"
        + (f" and {past} of earlier terms" if past else "")
        + f" read; {len(result.skipped)} skipped. {len(result.pairs)} pair(s) share distinctive code "
        f"(pairs were found through an index of fingerprints; only those were compared in full). "
        f"Only each student's own code counts: the skeleton's code, the given data cells, outputs and magics "
        f"are left out, and code that the solution holds is not "
        f"taken as evidence. Markdown answers are compared separately, as text.</p>",
        _how_to_read(),
    ]
    parts.append("<h2>Clusters of three or more</h2>")
    if result.clusters:
        parts.append(f"<p>Notebooks joined by pairs scoring at least {result.threshold:.2f}.</p><ul>")
        for group in result.clusters:
            parts.append("<li>" + ", ".join(_e(k) for k in group) + "</li>")
        parts.append("</ul>")
    else:
        parts.append(
            f'<p class="muted">None: no three notebooks are joined by pairs scoring at least '
            f"{result.threshold:.2f}.</p>"
        )
    parts.append(_table(shown[:LISTED], result.threshold, docs))
    parts.append("<h2>Side by side</h2>")
    if not shown:
        parts.append('<p class="muted">No pair shares distinctive code.</p>')
    for rank, pair in enumerate(shown[:SIDE_BY_SIDE], 1):
        parts.append(_side_by_side(rank, pair, docs[pair.a], docs[pair.b], open_=rank == 1))
    parts.append(_skipped(result))
    parts.append("</body></html>\n")
    return "".join(parts)


def _how_to_read() -> str:
    return (
        "<p class=muted>The score is the larger of two shares: of each notebook's distinctive code, the "
        "part that the other holds too, after names, numbers, strings, comments and whitespace are set aside "
        "(renaming a variable changes nothing). 1.00: all of it; one half: half of it, as when a notebook "
        "takes half its code from each of two classmates.</p>"
    )


def _questions(pair: Pair) -> str:
    titles = [m.title for m in pair.matches if m.title is not None]
    extra = " (and code outside the questions)" if any(m.title is None for m in pair.matches) else ""
    return (", ".join(_e(t) for t in titles) + extra) if titles else "code outside the questions"


def _table(pairs: list[Pair], threshold: float, docs: dict[str, Document]) -> str:
    rows = [
        "<h2>Pairs, highest score first</h2><table><tr><th>#</th><th>notebook A</th><th>notebook B</th>"
        "<th>score</th><th>share of A</th><th>share of B</th><th>the same code for</th><th>markdown</th></tr>"
    ]
    if not pairs:
        rows.append('<tr><td colspan=8 class="muted">No pair shares distinctive code.</td></tr>')
    for rank, p in enumerate(pairs, 1):
        cls = ' class="high"' if p.score >= threshold else ""
        link = f'<a href="#pair-{rank}">{rank}</a>' if rank <= SIDE_BY_SIDE else str(rank)
        width = int(round(60 * p.score))
        rows.append(
            f"<tr{cls}><td>{link}</td><td>{_name(docs[p.a])}</td><td>{_name(docs[p.b])}</td>"
            f'<td class="num"><span class="bar" title="{p.score:.2f}">{"&nbsp;" * (width // 4)}</span>{p.score:.2f}</td>'
            f'<td class="num">{p.a_share:.2f}</td><td class="num">{p.b_share:.2f}</td><td>{_questions(p)}</td>'
            f'<td class="num">{p.markdown:.2f}</td></tr>'
        )
    rows.append("</table>")
    return "".join(rows)


def _name(d: Document) -> str:
    past = ' <span class="muted">(earlier term)</span>' if d.past else ""
    return f'<span title="{_e(d.origin)}">{_e(d.key)}</span>{past}'


def _marks(pair: Pair, side: str) -> dict[int, dict[int, str]]:
    """cell -> line -> the question title of the shared code on that line."""
    out: dict[int, dict[int, str]] = {}
    for m in pair.matches:
        for r in m.a if side == "a" else m.b:
            for line in range(r.first_line, r.last_line + 1):
                out.setdefault(r.cell, {})[line] = m.title or "outside the questions"
    return out


def _side(doc: Document, marks: dict[int, dict[int, str]], md_cells: set[int]) -> str:
    parts = [f'<div class="side"><h3>{_name(doc)}</h3>']
    for cell in sorted(doc.sources):
        lines = doc.sources[cell].splitlines() or [""]
        own = doc.own_lines.get(cell, set())
        hits = marks.get(cell, {})
        parts.append(f'<div class="cell"><div class="label">cell {cell}</div><pre>')
        last_title = None
        for n, text in enumerate(lines, 1):
            cls = "hit" if n in hits else ("" if n in own else "given")
            title = hits.get(n)
            tag = f"<b>{_e(title)}</b>" if title is not None and title != last_title else ""
            last_title = title
            parts.append(f'<span class="ln {cls}"><i>{n}</i><span>{_e(text)}</span>{tag or "<b></b>"}</span>')
        parts.append("</pre></div>")
    for cell in sorted(md_cells):
        parts.append(
            f'<div class="cell"><div class="label">cell {cell} (markdown, shared wording)</div>'
            f'<pre><span class="ln hit"><i></i><span>{_e(doc.markdown.get(cell, ""))}</span><b></b></span>'
            "</pre></div>"
        )
    parts.append("</div>")
    return "".join(parts)


def _side_by_side(rank: int, pair: Pair, a: Document, b: Document, *, open_: bool) -> str:
    md_a = {ca for ca, _ in pair.markdown_cells}
    md_b = {cb for _, cb in pair.markdown_cells}
    summary = f"{rank}. {_e(pair.a)} and {_e(pair.b)}: score {pair.score:.2f}; the same code for {_questions(pair)}"
    if pair.markdown:
        summary += f"; markdown {pair.markdown:.2f}"
    return (
        f'<details class="pair" id="pair-{rank}"{" open" if open_ else ""}><summary>{summary}</summary>'
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
