"""Turn (skeleton, assignment module, student) into a notebook."""

from __future__ import annotations

import ast
import hashlib
import re

import nbformat

from .core import Ctx, indent, reformat, rnd, ws_extras

BLANK_RE = re.compile(r"^(\s*)(?:[A-Za-z_][\w\s,.\[\]]*?=\s*)?\?\s*$")


class RenderError(Exception):
    pass


def fill(skel_src: str, blocks, ctx) -> str:
    out = []
    k = 0
    for line in skel_src.split("\n"):
        m = BLANK_RE.match(line)
        if m and k < len(blocks):
            block = blocks[k]
            k += 1
            if block is None:
                continue
            out.append(indent(ctx.fmt(block), m.group(1)))
        else:
            out.append(line)
    if k != len(blocks):
        raise RenderError(f"{len(blocks)} blocks for {k} blanks in {skel_src[:60]!r}")
    return "\n".join(out)


def _hid(*parts) -> str:
    return hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()[:8]


def _code_ok(src: str) -> bool:
    lines = [l for l in src.split("\n") if not l.lstrip().startswith(("%", "!"))]
    try:
        ast.parse("\n".join(lines))
        return True
    except SyntaxError:
        return False


def render(A, skel, st):
    """Returns (notebook, picks)."""
    ctx = Ctx(st, A)
    sk = skel.cells
    fill_pos = {ci: k for k, ci in enumerate(A.FILL_CELLS)}
    n_anchor = len(A.FILL_CELLS)

    # ---- the student's cells, in skeleton order --------------------------------------------
    cells = []  # dicts: type, src, id, kind ('skel', 'fill', 'explore', 'md')
    for i, c in enumerate(sk):
        if i in fill_pos:
            ctx.cell = f"b{fill_pos[i]}"
            res = A.FILLERS[fill_pos[i]](ctx)
            src = fill(c.source, res["blanks"], ctx)
            cells.append(dict(type="code", src=src, id=c.get("id"), kind="fill", skel=i))
        else:
            cells.append(dict(type=c.cell_type, src=c.source, id=c.get("id"), kind="skel", skel=i))

    # ---- explore cells and markdown notes -----------------------------------------------------
    r = rnd(st.seed, "explores")
    k = ctx.pick("n_explores", {0: 16, 1: 30, 2: 27, 3: 16, 4: 8, 5: 3})
    pool = list(A.EXPLORES)
    chosen = []
    while pool and len(chosen) < k:
        w = [e[1] for e in pool]
        e = r.choices(pool, weights=w, k=1)[0]
        pool.remove(e)
        chosen.append(e)
    inserts = []  # (anchor, order, cell)
    for order, (key, _w, amin, fn) in enumerate(chosen):
        ctx.cell = f"x:{key}"
        src = ctx.fmt(fn(ctx))
        if key == "heatmap" and ctx.chance("x.magic", 0.25):
            src = "%matplotlib inline\n" + src
        valid = list(range(max(amin, -1), n_anchor + 1))
        ra = rnd(st.seed, "anchor", key)
        anchor = valid[0] if ra.random() < 0.55 else ra.choice(valid)
        if "reorder_merge" in st.flags and len(valid) > 1:
            others = [a for a in valid if a != anchor]
            anchor = rnd(st.seed, "anchor2", key, st.sid).choice(others)
        inserts.append((anchor, order, dict(type="code", src=src, id="x" + _hid(st.id_owner, key), kind="explore")))
    rm = rnd(st.seed, "mdnotes")
    if rm.random() < 0.3:
        topics = rm.sample(A.MD_TOPICS, 1 if rm.random() < 0.7 else 2)
        for t, anchor in topics:
            ctx.cell = f"md:{t}"
            inserts.append((anchor, 50, dict(type="markdown", src=ctx.md(t), id="m" + _hid(st.id_owner, t), kind="md")))

    # place inserts: anchor -1 = after the import cell; k = after fill cell k's group; n = end
    def anchor_pos(a, cl):
        if a == n_anchor:
            return len(cl)
        if a == -1:
            target = A.IMPORT_CELL
        else:
            target = A.FILL_CELLS[a]
        idx = next(j for j, c in enumerate(cl) if c.get("skel") == target)
        j = idx + 1
        if a != -1:
            while j < len(cl) and cl[j]["type"] == "code" and cl[j]["kind"] in ("skel",):
                j += 1
        return j

    for a, order, cell in sorted(inserts, key=lambda t: (-t[0], -t[1])):
        pos = anchor_pos(a, cells)
        cells.insert(pos, cell)

    # a student whose answer is wrong does not leave a failing assert behind: they print instead
    if any(str(v).startswith("wrong") for v in ctx.picks.values()):
        for c in cells:
            if c["kind"] in ("fill", "explore"):
                c["src"] = re.sub(r"(?m)^(\s*)assert ([^#\n]+?)(\s*#[^\n]*)?$", r"\1print(\2)\3", c["src"])

    # ---- disguises on the layout ----------------------------------------------------------------
    if "reorder_merge" in st.flags:
        rr = rnd(st.seed, "merge", st.sid)
        merged = [cells[0]]
        did = False
        for c in cells[1:]:
            p = merged[-1]
            if c["type"] == "code" and p["type"] == "code" and rr.random() < 0.6:
                p = dict(p)
                p["src"] = p["src"].rstrip("\n") + ("\n\n" if rr.random() < 0.5 else "\n") + c["src"]
                p["kind"] = "merged"
                merged[-1] = p
                did = True
            else:
                merged.append(c)
        if not did:  # merge the first fill cell with the cell after it
            for j, c in enumerate(merged[:-1]):
                if c["kind"] == "fill" and merged[j + 1]["type"] == "code":
                    c = dict(c)
                    c["src"] = c["src"] + "\n" + merged[j + 1]["src"]
                    merged[j] = c
                    del merged[j + 1]
                    break
        cells = merged
    if "whitespace" in st.flags:
        rw = rnd(st.seed, "wsx", st.sid)
        for c in cells:
            if c["type"] != "code":
                continue
            if c["kind"] == "skel" and rw.random() < 0.5:
                continue
            c["src"] = ws_extras(reformat(c["src"], ctx.ws), rw, getattr(ctx, "ws_indent2", False))

    # ---- notebook -------------------------------------------------------------------------------
    nb = nbformat.v4.new_notebook()
    nb.metadata = dict(skel.metadata)
    nb.nbformat_minor = max(skel.nbformat_minor, 5)
    re_ = rnd(st.id_owner, "exec")
    count = 0
    for c in cells:
        if c["type"] == "code":
            if not _code_ok(c["src"]):
                raise RenderError(f"{st.sid}: cell does not parse:\n{c['src']}")
            count += 1 if re_.random() < 0.8 else re_.randint(2, 6)
            cell = nbformat.v4.new_code_cell(c["src"], execution_count=count)
        else:
            cell = nbformat.v4.new_markdown_cell(c["src"])
        cell["id"] = c["id"] or ("c" + _hid(st.id_owner, len(nb.cells)))
        nb.cells.append(cell)
    # unique ids (a merged or duplicated id would make nbformat complain)
    seen = set()
    for j, cell in enumerate(nb.cells):
        if cell["id"] in seen:
            cell["id"] = "d" + _hid(st.id_owner, j)
        seen.add(cell["id"])
    ctx.picks["_rare"] = len(ctx.rare)
    ctx.picks["_explores"] = len(chosen)
    return nb, ctx.picks
