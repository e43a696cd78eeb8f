"""What every HTML page of the grader shares: math, status marks, and the feedback's own marks.

- **Math.** KaTeX is bundled (``grader/static/katex/``, MIT licence) and put inside a page that has
  math: its script, its styles and its fonts (as ``data:`` URIs), so formulas render offline, from
  the page alone, as Jupyter renders them (``$...$``, ``$$...$$``, LaTeX environments), in the
  elements a page names (markdown cells, question titles), never in code or outputs. The page's
  Content-Security-Policy allows that one script by its SHA-256 (``csp``) and no other: the
  student HTML the page holds is cleaned of scripts, and could not run one anyway. KaTeX runs with
  ``trust: false`` (no links, no HTML, no classes from the formula) and a bound on macro expansion.
- **Status marks.** A small inline SVG per status, drawn in the page's own colours: no emoji font
  is needed (most servers and many laptops have none, and show ✅ as an empty box). Each mark is
  ``aria-hidden``: the status is always written next to it, which is what screen readers read.
- **The feedback's marks.** Feedback sentences mark code with backticks and question titles with
  ``*asterisks*`` (grader.judge.wording). ``rich_text`` escapes the sentence first, then turns those
  marks into ``<code>`` and ``<em>``: text a student wrote can never become markup.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import json
import re
from importlib import resources

KATEX = ("static", "katex")
# Where Jupyter users write math: inline and display dollars, and LaTeX's own environments.
DELIMITERS = [
    {"left": "$$", "right": "$$", "display": True},
    {"left": "$", "right": "$", "display": False},
    *(
        {"left": f"\\begin{{{env}}}", "right": f"\\end{{{env}}}", "display": True}
        for env in ("equation", "equation*", "align", "align*", "gather", "gather*", "multline", "multline*")
    ),
]
KATEX_OPTIONS = {
    "delimiters": DELIMITERS,
    "throwOnError": False,
    "trust": False,
    "strict": "ignore",
    "maxExpand": 1000,
    "maxSize": 20,
}
_MATH = re.compile(r"\$[^$\s][^$]*\$|\$\$.+?\$\$|\\begin\{(equation|align|gather|multline)\*?\}", re.S)


def _asset(*parts: str) -> bytes:
    return resources.files("grader").joinpath(*KATEX, *parts).read_bytes()


def has_math(text: str) -> bool:
    """Whether ``text`` (a notebook's markdown, a title) has something KaTeX would render."""
    return bool(_MATH.search(text))


@functools.cache
def katex_style() -> str:
    """KaTeX's stylesheet, each font inlined as a ``data:`` URI (WOFF2 only: every browser that runs
    KaTeX reads it)."""
    css = _asset("katex.min.css").decode()

    def inline(m: re.Match[str]) -> str:
        font = base64.b64encode(_asset("fonts", f"{m.group(1)}.woff2")).decode("ascii")
        return f'src:url(data:font/woff2;base64,{font}) format("woff2")'

    return re.sub(r'src:url\(fonts/([\w-]+)\.woff2\) format\("woff2"\)[^;}]*', inline, css)


@functools.cache
def katex_script(selector: str) -> str:
    """KaTeX, its auto-render extension, and the call that renders the math inside ``selector``."""
    call = (
        f"document.querySelectorAll({json.dumps(selector)}).forEach(function (el) {{"
        f" renderMathInElement(el, {json.dumps(KATEX_OPTIONS)}); }});"
    )
    return "\n".join((_asset("katex.min.js").decode(), _asset("contrib", "auto-render.min.js").decode(), call))


def script_source(script: str) -> str:
    """The CSP source that allows exactly this inline script."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode("ascii") + "'"


def csp(*, script: str | None = None) -> str:
    """The page's Content-Security-Policy: nothing remote, images and fonts from the page itself,
    and one script, ``script``, when the page has math."""
    scripts = f"script-src {script_source(script)}; " if script is not None else ""
    return (
        f"default-src 'none'; {scripts}style-src 'unsafe-inline'; img-src data:; font-src data:; "
        "base-uri 'none'; form-action 'none'"
    )


def math_head() -> str:
    """The ``<style>`` KaTeX needs, for a page's ``<head>``."""
    return f"<style>{katex_style()}</style>"


def math_tail(selector: str) -> str:
    """The ``<script>`` that renders the math, for the end of a page's ``<body>``."""
    return f"<script>{katex_script(selector)}</script>"


# --------------------------------------------------------------------------------------------
# Status marks

_ICONS = {
    # A filled disc in the status's colour, with a white glyph: check, cross, half, dash, lock,
    # clock, pen.
    "passed": ("#2e7d32", '<path d="M4.5 8.3l2.3 2.3 4.7-5" fill="none" stroke="#fff" stroke-width="2"/>'),
    "failed": ("#c62828", '<path d="M5.2 5.2l5.6 5.6M10.8 5.2l-5.6 5.6" stroke="#fff" stroke-width="2"/>'),
    "error": (
        "#c62828",
        '<path d="M8 3.8v5.2" stroke="#fff" stroke-width="2"/><circle cx="8" cy="11.6" r="1.2" fill="#fff"/>',
    ),
    "partial": ("#b58900", '<path d="M8 3a5 5 0 0 1 0 10z" fill="#fff"/>'),
    "unanswered": ("#757575", '<path d="M4.5 8h7" stroke="#fff" stroke-width="2"/>'),
    "withheld": (
        "#546e7a",
        '<rect x="5" y="7.5" width="6" height="4.5" fill="#fff"/><path d="M6.2 7.5V6a1.8 1.8 '
        '0 0 1 3.6 0v1.5" fill="none" stroke="#fff" stroke-width="1.3"/>',
    ),
    "manual": ("#1565c0", '<path d="M8 4.2V8l2.6 1.6" fill="none" stroke="#fff" stroke-width="1.6"/>'),
    "graded": ("#00838f", '<path d="M4.6 11.4l1-3 4.6-4.6 2 2-4.6 4.6z" fill="#fff"/>'),  # a pen: graded by a person
}


def status_mark(status: str, colour: str | None = None) -> str:
    """A status's mark as inline SVG (empty for a status without one), in its own colour or
    ``colour`` (a chart's, where the mark is also its legend). Decorative: the status's words stand
    next to it on every page, and are what a screen reader reads."""
    if status not in _ICONS:
        return ""
    own, glyph = _ICONS[status]
    colour = colour if colour is not None and re.fullmatch(r"#[0-9a-fA-F]{3,8}", colour) else own
    return (
        f'<svg class="grader-mark" aria-hidden="true" focusable="false" width="1em" height="1em" '
        f'viewBox="0 0 16 16"><circle cx="8" cy="8" r="7.5" fill="{colour}"/>{glyph}</svg>'
    )


# --------------------------------------------------------------------------------------------
# The feedback's own marks

_EMPHASIS = re.compile(r"\*(?=[^\s*])([^*]*?[^\s*])\*")


def rich_text(text: str) -> str:
    """A feedback sentence as HTML: escaped, then its `code` spans as ``<code>`` and its *emphasis*
    (outside code) as ``<em>``. An unmatched backtick is shown as it is."""
    parts = html.escape(text, quote=False).split("`")
    if len(parts) % 2 == 0:
        parts = [html.escape(text, quote=False)]
    return "".join(f"<code>{p}</code>" if i % 2 else _EMPHASIS.sub(r"<em>\1</em>", p) for i, p in enumerate(parts))
