#!/usr/bin/env python3
"""Measure a grader against the figures corpus (issue 41, the plot part). Decided from truth.json alone.

In a private copy of course/ (make_course.py): `grader assign attention_heatmap`, then
  grader grade notebooks/ -a attention_heatmap -o OUT --formats yaml,json,html
  grader check NOTEBOOK heatmap --checks assignments/attention_heatmap/public_checks.json   (each case)
  grader review attention_heatmap --out OUT --port P     (crawled: the page and every same-origin link, up to 200)

Images are collected as PNG bytes: `data:image/png;base64,...` payloads and image responses / files, each
attributed to a case when it sits in an OUT file named after the case. A case's *saved* images are its
notebook's own PNG outputs and attachments; images found in every case's files are *shared* (an icon, or a
reference shown to all).

Truth items:
  run_figure   truth True: the case's files hold the student's heat map (a PNG holding both ends of magma,
               the student's colour map, with its colour bar), for a case with no saved image one that is
               not in the notebook, so it can only come from a run; truth False: they hold no image but
               its attachment (nothing presented as a figure the code drew)
  check        `grader check` on the case says "not answered" / "answered" for heatmap as truth says
  reference    the review pages (or OUT) hold the solution's figure: a heat map in viridis with its colour
               bar (both ends of viridis in the PNG; the students draw magma, the pasted image is Blues);
               and neither OUT nor the pages contain BEGIN/END SOLUTION markers
  autograded   every case scores truth's autograded points (11) on the autograded questions

usage: measure.py [--grader PATH] [--keep] [--no-review]
"""

import argparse
import base64
import hashlib
import http.cookiejar
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
PNG = b"\x89PNG\r\n\x1a\n"
DATA = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=\s]+)")
MARK = re.compile(r"(BEGIN|END) SOLUTION")


BYTES = {}  # sha256 -> PNG bytes
# the colour maps' two ends, as drawn in a colour bar: the solution draws viridis, the students magma
ENDS = {"viridis": [(68, 1, 84), (253, 231, 37)], "magma": [(0, 0, 4), (252, 253, 191)]}


def keep(b):
    h = hashlib.sha256(b).hexdigest()
    BYTES[h] = b
    return h


def drawn_with(h, cmap):
    """True if the PNG holds both ends of the colour map (a heat map with its colour bar)."""
    import io

    import numpy as np
    from PIL import Image

    try:
        a = np.asarray(Image.open(io.BytesIO(BYTES[h])).convert("RGB")).reshape(-1, 3).astype(int)
    except Exception:
        return False
    return all((np.abs(a - np.array(c)).sum(axis=1) <= 12).any() for c in ENDS[cmap])


def pngs_in_text(text):
    out = set()
    for m in DATA.finditer(text):
        try:
            b = base64.b64decode(re.sub(r"\s", "", m.group(1)))
        except ValueError:
            continue
        if b.startswith(PNG):
            out.add(keep(b))
    return out


def saved_images(nb_path):
    d = json.loads(nb_path.read_text())
    out = set()
    for c in d["cells"]:
        for o in c.get("outputs", []):
            s = o.get("data", {}).get("image/png")
            if s:
                out.add(hashlib.sha256(base64.b64decode("".join(s) if isinstance(s, list) else s)).hexdigest())
        for a in (c.get("attachments") or {}).values():
            if "image/png" in a:
                out.add(hashlib.sha256(base64.b64decode(a["image/png"])).hexdigest())
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def crawl(url, limit=200):
    jar = http.cookiejar.CookieJar()
    op = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    base = urllib.parse.urlsplit(url)
    token = urllib.parse.parse_qs(base.query).get("token", [""])[0]
    seen, todo, texts, images = set(), [url], [], set()
    while todo and len(seen) < limit:
        u = todo.pop(0)
        if u in seen:
            continue
        seen.add(u)
        try:
            r = op.open(u, timeout=20)
            body = r.read()
            ctype = r.headers.get("Content-Type", "")
        except Exception:
            continue
        if body.startswith(PNG):
            images.add(keep(body))
            continue
        if "html" not in ctype and "json" not in ctype and "text" not in ctype:
            continue
        t = body.decode("utf-8", "replace")
        texts.append(t)
        images |= pngs_in_text(t)
        for link in re.findall(r'(?:href|src)\s*=\s*["\']([^"\'#]+)', t):
            v = urllib.parse.urljoin(u, link.replace("&amp;", "&"))
            sp = urllib.parse.urlsplit(v)
            if sp.netloc != base.netloc or sp.path.endswith((".css", ".js", ".woff", ".woff2")):
                continue
            if token and "token=" not in v:
                v += ("&" if sp.query else "?") + "token=" + token
            todo.append(v)
    return "\n".join(texts), images, len(seen)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grader", default=str(HERE.parents[2] / ".venv/bin/grader"))
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-review", action="store_true")
    args = ap.parse_args()
    truth = json.loads((HERE / "truth.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="figures-corpus-"))
    course = work / "course"
    shutil.copytree(HERE / "course", course)
    subprocess.run([args.grader, "assign", "attention_heatmap"], cwd=course, check=True, capture_output=True)
    out = work / "out"
    p = subprocess.run(
        [
            args.grader,
            "grade",
            str(HERE / "notebooks"),
            "-a",
            "attention_heatmap",
            "-o",
            str(out),
            "--formats",
            "yaml,json,html",
        ],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=900,
    )
    rows = []
    cases = truth["cases"]
    saved = {c: saved_images(HERE / "notebooks" / f"{c}.ipynb") for c in cases}
    all_saved = set().union(*saved.values())
    own, alltext = {}, p.stdout + p.stderr
    for c in cases:
        imgs = set()
        for f in out.rglob("*"):
            if not f.is_file() or not f.name.startswith(c):
                continue
            b = f.read_bytes()
            if b.startswith(PNG):
                imgs.add(keep(b))
            elif f.suffix in (".html", ".json", ".yaml", ".md", ".txt"):
                t = b.decode("utf-8", "replace")
                alltext += "\n" + t
                imgs |= pngs_in_text(t)
        for f in out.rglob("*.png"):
            if c in str(f.relative_to(out)):
                imgs.add(keep(f.read_bytes()))
        own[c] = imgs
    shared = set.intersection(*own.values()) if own else set()
    for c, t in cases.items():
        mine = own[c] - shared
        if t["run_figure"]:
            fresh = mine - saved[c]
            heat = [h for h in (fresh if not t["saved_images"] else mine) if drawn_with(h, "magma")]
            rows.append(
                (
                    c,
                    "run_figure",
                    bool(heat),
                    f"{len(mine)} image(s) of its own, {len(fresh)} not saved in the "
                    f"notebook, {len(heat)} of them its magma heat map",
                )
            )
        else:
            extra = mine - saved[c]
            rows.append(
                (
                    c,
                    "run_figure",
                    not extra,
                    "no figure presented as drawn" if not extra else f"{len(extra)} image(s) no code of it drew",
                )
            )
        # grader check
        if t["check"]:
            q = subprocess.run(
                [
                    args.grader,
                    "check",
                    str(HERE / "notebooks" / f"{c}.ipynb"),
                    "heatmap",
                    "--checks",
                    str(course / "assignments/attention_heatmap/public_checks.json"),
                ],
                cwd=course,
                capture_output=True,
                text=True,
                timeout=300,
            )
            qt = q.stdout + q.stderr
            said_not = bool(re.search(r"not answered", qt, re.I))
            said_ans = bool(re.search(r"(?<!not )answered", qt, re.I))
            ok = said_not if t["check"] == "not answered" else (said_ans and not said_not)
            line = next((l.strip() for l in qt.splitlines() if "heatmap" in l or "answered" in l), qt.strip()[-100:])
            rows.append((c, "check", ok, f"truth '{t['check']}'; said: {line[:90]}"))
        # autograded part
        card = out / f"{c}.json"
        score = None
        if card.exists():
            d = json.loads(card.read_text())
            score = sum(q.get("score") or 0 for q in d.get("questions", []) if q.get("id") != "heatmap")
        rows.append(
            (c, "autograded", score == truth["autograded_score"], f"{score}, truth {truth['autograded_score']}")
        )
    # reference and markers
    pages, page_imgs, n = "", set(), 0
    if not args.no_review:
        port = free_port()
        srv = subprocess.Popen(
            [args.grader, "review", "attention_heatmap", "--out", str(out), "--port", str(port)],
            cwd=course,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        url, t0 = None, time.time()
        try:
            while time.time() - t0 < 90 and url is None:
                line = srv.stdout.readline()
                if not line:
                    break
                m = re.search(r"https?://127\.0\.0\.1:\d+/\S*", line)
                url = m.group(0) if m else None
            if url:
                pages, page_imgs, n = crawl(url)
        finally:
            srv.terminate()
            try:
                srv.wait(10)
            except subprocess.TimeoutExpired:
                srv.kill()
    ref = [h for h in (page_imgs | set().union(*own.values())) - all_saved if drawn_with(h, "viridis")]
    rows.append(
        (
            "(reference)",
            "figure",
            bool(ref),
            f"{len(ref)} viridis heat map(s) (the solution's colour map) over OUT and {n} review page(s)",
        )
    )
    marked = MARK.search(alltext + pages)
    rows.append(("(reference)", "no_markers", not marked, "none" if not marked else "found: " + marked.group(0)))
    if args.keep:
        print("kept", work, file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    print("| case | item | agreed | detail |\n|---|---|---|---|")
    for c, item, ok, d in rows:
        print(f"| {c} | {item} | {'agreed' if ok else 'DISAGREED'} | {d} |")
    print(f"\n{sum(r[2] for r in rows)} / {len(rows)} truth items agreed")


if __name__ == "__main__":
    main()
