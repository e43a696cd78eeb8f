#!/usr/bin/env python3
"""Check the notebooks themselves, outside any grader: run a notebook's code cells in one Python
process as an ordinary user under real kernel limits (prlimit --nproc=64 --fsize=64 MB, a tmpfs
of 256 MB for the working directory where mount is allowed) and print what the verdict saw. Runs only the attack cells (no NumPy needed), with Debian's python3.
Used to decide that the verdict logic is right (a limited run gives limit_ok True), not to grade.

usage (root): selftest.py NOTEBOOK [--user nobody]
"""

import argparse
import os
import subprocess
import tempfile

import nbformat

ap = argparse.ArgumentParser()
ap.add_argument("nb")
ap.add_argument("--user", default="nobody")
a = ap.parse_args()
nb = nbformat.read(a.nb, as_version=4)
base = len(nbformat.read(os.path.join(os.path.dirname(os.path.abspath(__file__)), "base.ipynb"), as_version=4).cells)
src = "output = 1\n" + "\n".join(c.source for c in nb.cells[base:])  # the attack cells alone
src += "\nprint('RESULT', globals().get('limit_ok'), globals().get('peak'), globals().get('results'))\n"
d = tempfile.mkdtemp()
os.chmod(d, 0o777)
mounted = (
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m,nr_inodes=16384,mode=1777", "tmpfs", d]).returncode == 0
)
open(os.path.join(d, "run.py"), "w").write(src)
cmd = [
    "prlimit",
    "--nproc=64",
    "--fsize=%d" % (64 << 20),
    "--",
    "runuser",
    "-u",
    a.user,
    "--",
    "/usr/bin/python3",
    "run.py",
]
p = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=300)
print(p.stdout[-2000:], p.stderr[-2000:])
if mounted:
    subprocess.run(["umount", d])
subprocess.run(["rm", "-rf", d])
