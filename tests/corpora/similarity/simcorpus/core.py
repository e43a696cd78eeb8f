"""Core machinery of the similarity corpus: deterministic picks, names, comments, style, formatting.

A student is a seed plus a few knobs.  Every decision the student's notebook makes (which way to
write an answer, which names, which comments, which explore cells) is a *pick* keyed by a site
name and drawn from a random.Random seeded with (seed, key, salt).  A copier is the source
student (same seed, so the same picks) with disguise flags that change the rendering: new name
salt, new comment voice, a different whitespace policy, swapped operators, and so on.
"""

from __future__ import annotations

import io
import random
import re
import tokenize
from collections import defaultdict

DISGUISES = [
    "rename_consistent",
    "rename_inconsistent",
    "comments",
    "whitespace",
    "reorder_merge",
    "op_swap",
    "transpose_swap",
    "kwarg_swap",
    "helper_flip",
]


def rnd(*parts) -> random.Random:
    return random.Random("|".join(str(p) for p in parts))


def wchoice(r: random.Random, opts: dict):
    keys = list(opts)
    weights = [opts[k] for k in keys]
    return r.choices(keys, weights=weights, k=1)[0]


# ----------------------------------------------------------------------------------------------
# whitespace
# ----------------------------------------------------------------------------------------------

BINOPS = {"+", "-", "*", "/", "//", "%", "@", "==", "!=", "<", ">", "<=", ">=", "|", "&", "^", "<<", ">>"}
AUGOPS = {"+=", "-=", "*=", "/=", "@=", "//=", "%=", "**="}
OPENERS = {"(", "[", "{"}
CLOSERS = {")", "]", "}"}
UNARY_AFTER_KW = {
    "return",
    "in",
    "and",
    "or",
    "not",
    "if",
    "else",
    "elif",
    "lambda",
    "yield",
    "assert",
    "while",
    "for",
    "is",
    "print",
    "del",
    "with",
    "as",
    "import",
    "from",
}


def reformat(code: str, pol: dict) -> str:
    """Re-space operators, commas and '=' according to pol; leaves everything else alone.

    pol keys: assign, binop, pow, comma, kw, inner (booleans)."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code
    lines = code.splitlines(keepends=True)
    frozen = set()
    depth = 0
    ann = []  # (tok, depth_before)
    for t in toks:
        if t.type == tokenize.STRING and t.start[0] != t.end[0]:
            frozen.update(range(t.start[0], t.end[0] + 1))
        if (
            t.type
            not in (
                tokenize.NL,
                tokenize.NEWLINE,
                tokenize.INDENT,
                tokenize.DEDENT,
                tokenize.ENDMARKER,
                tokenize.COMMENT,
            )
            and t.type == tokenize.OP
        ):
            pass
        ann.append((t, depth))
        if t.type == tokenize.OP and t.string in OPENERS:
            depth += 1
        elif t.type == tokenize.OP and t.string in CLOSERS:
            depth -= 1
        if getattr(tokenize, "FSTRING_START", None) is not None and t.type == tokenize.FSTRING_START:
            frozen.add(t.start[0])
    by_row = defaultdict(list)
    prev_sig = None  # previous significant token (across rows)
    for t, d in ann:
        if t.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            if t.type == tokenize.NEWLINE:
                prev_sig = None
            continue
        if t.start[0] != t.end[0]:
            prev_sig = t
            continue
        by_row[t.start[0]].append((t, d, prev_sig))
        if t.type != tokenize.COMMENT:
            prev_sig = t

    def is_unary(t, prev):
        if t.string not in ("-", "+", "*", "**", "~"):
            return False
        if prev is None:
            return True
        if prev.type == tokenize.OP and prev.string not in CLOSERS:
            return True
        if prev.type == tokenize.NAME and prev.string in UNARY_AFTER_KW:
            return True
        return False

    out = list(lines)
    for row, items in by_row.items():
        if row in frozen or row - 1 >= len(lines):
            continue
        line = lines[row - 1]
        first = items[0][0]
        res = line[: first.start[1]] + first.string
        prev_t = first
        prev_unary = is_unary(first, items[0][2])
        for t, d, prev in items[1:]:
            gap = line[prev_t.end[1] : t.start[1]]
            if "\\" in gap:
                new = gap
            elif t.type == tokenize.COMMENT:
                new = gap if gap else "  "
            elif prev_t.type == tokenize.OP and prev_t.string in OPENERS:
                new = " " if (pol.get("inner") and prev_t.string == "(" and t.string != ")") else ""
            elif t.type == tokenize.OP and t.string in CLOSERS:
                new = " " if (pol.get("inner") and t.string == ")" and prev_t.string != "(") else ""
                if prev_t.string == ",":
                    new = ""
            elif t.type == tokenize.OP and t.string in (",", ";"):
                new = ""
            elif prev_t.type == tokenize.OP and prev_t.string == ",":
                new = " " if pol.get("comma", True) else ""
            elif (t.type == tokenize.OP and t.string == "=") or (prev_t.type == tokenize.OP and prev_t.string == "="):
                eq_depth = d if t.string == "=" else _depth_of(items, prev_t)
                if eq_depth > 0:
                    new = " " if pol.get("kw") else ""
                else:
                    new = " " if pol.get("assign", True) else ""
            elif t.type == tokenize.OP and t.string in AUGOPS or prev_t.type == tokenize.OP and prev_t.string in AUGOPS:
                new = " " if pol.get("assign", True) else ""
            elif prev_unary:
                new = ""
            elif t.type == tokenize.OP and t.string == "**" and not is_unary(t, prev):
                new = " " if pol.get("pow") else ""
            elif prev_t.type == tokenize.OP and prev_t.string == "**":
                new = " " if pol.get("pow") else ""
            elif t.type == tokenize.OP and t.string in BINOPS and not is_unary(t, prev):
                new = " " if pol.get("binop", True) else ""
            elif prev_t.type == tokenize.OP and prev_t.string in BINOPS:
                new = " " if pol.get("binop", True) else ""
            else:
                new = gap
            # never glue two names/numbers together
            if new == "" and _wordy(prev_t) and _wordy(t):
                new = " "
            res += new + t.string
            prev_unary = t.type == tokenize.OP and is_unary(t, prev)
            prev_t = t
        nl = "\n" if line.endswith("\n") else ""
        trail = line[len(line.rstrip("\r\n")) - 0 :]
        out[row - 1] = res + (trail if trail.strip("\r\n") == "" and trail else nl)
    return "".join(out)


def _depth_of(items, tok):
    for t, d, _ in items:
        if t is tok:
            return d
    return 0


def _wordy(t):
    return t.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)


def ws_extras(code: str, r: random.Random, indent2: bool) -> str:
    """The whitespace disguise's extras: blank lines between statements, trailing blanks,
    two-space indentation (if the cell has no multi-line strings)."""
    if '"""' in code or "'''" in code:
        indent2 = False
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code
    stmt_end_rows = {t.start[0] for t in toks if t.type == tokenize.NEWLINE}
    lines = code.split("\n")
    out = []
    for i, line in enumerate(lines, start=1):
        if indent2:
            stripped = line.lstrip(" ")
            n = len(line) - len(stripped)
            if n and n % 4 == 0:
                line = " " * (n // 2) + stripped
        if line.strip() and r.random() < 0.15:
            line = line + " " * r.randint(1, 3)
        out.append(line)
        if i in stmt_end_rows and i < len(lines) and r.random() < 0.22:
            out.append("")
    text = "\n".join(out)
    if r.random() < 0.4:
        text = "\n" + text
    if r.random() < 0.4:
        text = text + "\n"
    return text


def strip_comments(code: str) -> str:
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code
    lines = code.split("\n")
    for t in reversed(toks):
        if t.type == tokenize.COMMENT:
            row, col = t.start
            line = lines[row - 1]
            lines[row - 1] = line[:col].rstrip()
    # drop lines that became empty because they only held a comment
    out = []
    orig = code.split("\n")
    for a, b in zip(orig, lines):
        if b.strip() == "" and a.strip() != "":
            continue
        out.append(b)
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------
# expressions
# ----------------------------------------------------------------------------------------------

_ATOM = re.compile(r"^[A-Za-z_][\w.]*(\[[^\[\]]*\]|\([^()]*\))*(\.[A-Za-z_]\w*(\([^()]*\))?)*$")


def P(expr: str) -> str:
    """Parenthesise expr unless it is an atom (name, attribute, call, subscript)."""
    e = expr.strip()
    if _ATOM.match(e) or (e.startswith("(") and _balanced_outer(e)):
        return e
    return f"({e})"


def _balanced_outer(e: str) -> bool:
    depth = 0
    for i, ch in enumerate(e):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0 and i != len(e) - 1:
                return False
    return True


def indent(code: str, prefix: str) -> str:
    return "\n".join((prefix + l) if l.strip() else l for l in code.split("\n"))


# ----------------------------------------------------------------------------------------------
# comments and prose
# ----------------------------------------------------------------------------------------------

FILLERS = [
    "",
    "",
    "",
    "basically ",
    "just ",
    "here: ",
    "now ",
    "ok so ",
    "note: ",
    "step: ",
    "-> ",
    "TODO check: ",
    "idea: ",
    "i think ",
    "quick ",
    "simply ",
]
SUFFIXES = [
    "",
    "",
    "",
    ".",
    " :)",
    " (see lecture)",
    " !",
    " (slide 12)",
    " ...",
    " - works",
    " (from the book)",
    " (per TA)",
    " -- double check",
]


class Voice:
    def __init__(self, r: random.Random):
        self.rate = wchoice(r, {0.0: 25, 0.15: 20, 0.4: 25, 0.7: 20, 0.95: 10})
        self.case = wchoice(r, {"lower": 45, "cap": 40, "upper_first": 15})
        self.prefix = wchoice(r, {"# ": 85, "#": 10, "## ": 5})
        self.filler = r.sample(FILLERS, 2)
        self.suffix = r.sample(SUFFIXES, 2)
        self.above = r.random()  # probability a comment goes on its own line

    def text(self, phrase: str, r: random.Random) -> str:
        f = r.choice(self.filler)
        s = r.choice(self.suffix)
        t = f + phrase + s
        if self.case == "lower":
            t = t.lower()
        elif self.case == "cap":
            t = t[:1].upper() + t[1:]
        return t.strip()


# ----------------------------------------------------------------------------------------------
# students and the rendering context
# ----------------------------------------------------------------------------------------------


class Student:
    def __init__(self, sid: str, seed: str):
        self.sid = sid
        self.seed = seed  # drives every pick
        self.popular = False  # pick the most common way everywhere
        self.force: dict = {}  # site -> forced pick
        self.name_salt = ""
        self.comment_salt = ""
        self.ws_salt = ""
        self.flags: set = set()  # disguises
        self.id_owner = sid  # whose cell ids and execution counts
        self.copied_from = None

    def copy_as(self, sid: str, disguises) -> Student:
        c = Student(sid, self.seed)
        c.popular = self.popular
        c.force = dict(self.force)
        c.name_salt = self.name_salt
        c.comment_salt = self.comment_salt
        c.ws_salt = self.ws_salt
        c.flags = set(disguises)
        c.copied_from = self.sid
        c.id_owner = self.id_owner if not disguises else sid
        if "rename_consistent" in c.flags:
            c.name_salt = "ren:" + sid
        if "comments" in c.flags:
            c.comment_salt = "cmt:" + sid
        if "whitespace" in c.flags:
            c.ws_salt = "ws:" + sid
        return c


class Ctx:
    def __init__(self, st: Student, A):
        self.st = st
        self.A = A
        self.cell = ""
        self.picks = {}
        self.rare = set()  # sites where this student made an uncommon choice (< 20%)
        self._ccount = defaultdict(int)
        f = st.flags
        self.flags = f
        # style knobs, drawn from the seed (shared by copies) unless a disguise re-draws them
        self.op_main = self.pick("style.op", A.OPS)
        self.tr_main = self.pick("style.tr", A.TR2)
        self.kw_pref = self.pick("style.kw", {0.9: 50, 0.5: 25, 0.15: 25})
        self.voice = Voice(rnd(st.seed, "voice", st.comment_salt))
        self.ws = self._ws_policy(st.seed, "")
        if "whitespace" in f:
            r = rnd(st.seed, "wsflip", st.ws_salt)
            pol = dict(self.ws)
            for k in r.sample(["assign", "binop", "comma", "pow", "kw"], r.randint(2, 4)):
                pol[k] = not pol[k]
            if r.random() < 0.15:
                pol["inner"] = True
            self.ws = pol
            self.ws_indent2 = r.random() < 0.5
        self.blank_habit = rnd(st.seed, "blank").random() < 0.35

    # -- picks ----------------------------------------------------------------------------------
    def R(self, key, salt=""):
        return rnd(self.st.seed, key, salt)

    def pick(self, key, opts: dict):
        if key in self.st.force:
            v = self.st.force[key]
        elif self.st.popular:
            v = max(opts, key=lambda k: opts[k])
        else:
            v = wchoice(self.R(key), opts)
        self.picks[key] = v
        if not key.startswith("style.") and opts.get(v, 0) < 0.2 * sum(opts.values()):
            self.rare.add(key)
        return v

    def chance(self, key, p):
        if key in self.st.force:
            v = self.st.force[key]
        else:
            v = self.R(key).random() < p
        self.picks[key] = v
        return v

    def helper(self, key, p):
        if key in self.st.force:
            v = self.st.force[key]
        elif self.st.popular:
            v = False
        else:
            v = self.R(key).random() < p
        self.picks[key] = v
        if "helper_flip" in self.flags:
            return not v
        return v

    def perm(self, key, items, p_keep=0.85):
        items = list(items)
        r = self.R(key)
        if not self.st.popular and r.random() > p_keep:
            r.shuffle(items)
        if "reorder_merge" in self.flags and len(items) > 1:
            r2 = self.R(key, "reorder")
            new = list(items)
            for _ in range(10):
                r2.shuffle(new)
                if new != items:
                    break
            items = new
        return items

    # -- names ----------------------------------------------------------------------------------
    def _pool(self, logical):
        return self.A.NAMES[logical.split(":", 1)[-1]]

    def _src_name(self, logical):
        pool = self._pool(logical)
        if self.st.popular:
            return pool[0]
        w = [max(1, 10 - 3 * i) if i < 3 else 1 for i in range(len(pool))]
        return rnd(self.st.seed, "name", logical).choices(pool, weights=w, k=1)[0]

    def n(self, logical):
        src = self._src_name(logical)
        pool = self._pool(logical)
        others = [x for x in pool if x != src]
        if "rename_consistent" in self.flags and others:
            return rnd(self.st.seed, "ren", logical, self.st.name_salt).choice(others)
        if "rename_inconsistent" in self.flags and others:
            is_global = logical.startswith("g:")
            scope = "" if is_global else self.cell
            r = rnd(self.st.seed, "inc", logical, scope, self.st.sid)
            if r.random() < 0.6:
                return r.choice(others)
        return src

    # -- comments -------------------------------------------------------------------------------
    def c(self, topic):
        """A comment about topic in the student's voice, or '' (most of the time)."""
        self._ccount[(self.cell, topic)] += 1
        r = rnd(self.st.seed, "c", topic, self.cell, self._ccount[(self.cell, topic)], self.st.comment_salt)
        if r.random() >= self.voice.rate:
            return ""
        phrase = r.choice(self.A.TOPICS.get(topic, self.A.TOPICS["generic"]))
        return self.voice.prefix + self.voice.text(phrase, r)

    def L(self, code, topic=None):
        """One statement, with maybe a comment (above or at the end)."""
        if not topic:
            return code
        cm = self.c(topic)
        if not cm:
            return code
        r = rnd(self.st.seed, "cpos", topic, self.cell, self._ccount[(self.cell, topic)], self.st.comment_salt)
        if "\n" in code or r.random() < self.voice.above:
            return cm + "\n" + code
        return code + "  " + cm

    def md(self, topic):
        r = rnd(self.st.seed, "md", topic, self.st.comment_salt)
        phrases = self.A.MD[topic]
        k = 1 if r.random() < 0.6 else 2
        parts = r.sample(phrases, min(k, len(phrases)))
        text = " ".join(self.voice.text(p, r) for p in parts)
        head = r.choice(["", "", "**Note:** ", "*My notes:* ", "> ", "### Notes\n", "Note to self: "])
        return head + text

    # -- operators ------------------------------------------------------------------------------
    def op_at(self, site, allowed=None):
        r = self.R("op", site)
        src = self.op_main if r.random() < 0.88 else wchoice(r, self.A.OPS)
        if self.st.popular:
            src = self.op_main
        if allowed and src not in allowed:
            src = "@"
        if "op_swap" in self.flags:
            alts = [o for o in self.A.OP_SWAP if o != src and (not allowed or o in allowed)]
            return rnd(self.st.seed, "opswap", site, self.st.sid).choice(alts)
        return src

    def tr(self, a, site, dims=2):
        table = self.A.TR2 if dims == 2 else self.A.TR3
        r = self.R("tr", site)
        main = self.tr_main if dims == 2 else None
        if main is not None and r.random() < 0.9:
            src = main
        else:
            src = wchoice(r, table)
        if self.st.popular:
            src = max(table, key=lambda k: table[k])
        if "transpose_swap" in self.flags:
            alts = [t for t in table if t != src]
            src = rnd(self.st.seed, "trswap", site, self.st.sid).choice(alts)
        return self.A.render_tr(self, a, src, site)

    def mm(self, a, b, site, kind="mm", bt=False):
        return self.A.render_mm(self, a, b, site, kind, bt)

    def use_kw(self, site):
        v = self.R("kw", site).random() < self.kw_pref
        if self.st.popular:
            v = True
        if "kwarg_swap" in self.flags:
            v = not v
        return v

    def call(self, fn, pos, opt, site):
        """fn(pos..., opt...) where opt = [(name, value, positional_ok)]; keyword or positional."""
        kw = self.use_kw(site)
        args = list(pos)
        as_kw = False
        for name, value, pos_ok in opt:
            if not pos_ok or kw:
                as_kw = True
            args.append(f"{name}={value}" if as_kw else value)
        return f"{fn}({', '.join(args)})"

    def _ws_policy(self, seed, salt):
        r = rnd(seed, "ws", salt)
        return {
            "assign": r.random() < 0.94,
            "binop": r.random() < 0.85,
            "pow": r.random() < 0.5,
            "comma": r.random() < 0.92,
            "kw": r.random() < 0.07,
            "inner": r.random() < 0.03,
        }

    def fmt(self, code):
        return reformat(code, self.ws)
