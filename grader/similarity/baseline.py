"""The common ways of writing an exercise: what two students write alike without having worked
together, known before any notebook is read, so that a section of eight has a baseline too.

Two sources, both read as a student's code is (``canon``: names, numbers and strings set aside, a
library's spellings of one operation made one), so each entry stands for every way of naming it:

- ``IDIOMS``: what students of numerical Python write around any answer: the checks (printing a
  shape, rows that sum to one with ``allclose``), a heat map of the weights, an argmax or a top-k
  "to explore", a seed, the usual softmax and scaling forms, loops over rows;
- ``variants(solution)``: the solution's own matrix products written the other common ways, as
  loops and comprehensions over rows, or entry by entry.

Nothing here is evidence against a student: a fragment found here still counts in proportion to
how rare it is, but as a common one.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

IDIOMS = r"""
print(x)
print(x.shape)
print(x.shape, y.shape)
print("shape:", x.shape)
print(x.dtype)
print(type(x))
print(len(x))
display(x)
x.shape
print(x.sum(axis=-1))
print(x.sum(-1))
print(x.sum(axis=1))
print(x.sum(dim=-1))
print(x.sum(dim=1))
print(x.min(), x.max())
print(x[0])
print(x[i])
print(np.round(x, 3))
print(x.round(3))
print(x.round(decimals=3))
assert x.shape == y.shape
assert x.shape == (n, d)
assert x.shape == (n, n)
print(x.shape == (n, n))
print(np.allclose(x.sum(axis=-1), 1))
print(np.allclose(x.sum(axis=1), 1.0))
assert np.allclose(x.sum(axis=-1), 1)
assert np.allclose(x.sum(axis=1), 1.0)
assert np.allclose(x.sum(-1), 1)
np.allclose(x.sum(axis=-1), 1)
np.allclose(x.sum(axis=1), np.ones(n))
np.allclose(x.sum(axis=1), np.ones(len(x)))
np.allclose(x.sum(axis=1), np.ones(x.shape[0]))
np.testing.assert_allclose(x.sum(axis=-1), 1)
np.testing.assert_allclose(x.sum(axis=1), np.ones(n))
np.isclose(x.sum(axis=-1), 1).all()
print(np.isclose(x.sum(axis=-1), 1).all())
print(torch.allclose(x.sum(dim=-1), torch.ones(n)))
print(torch.allclose(x.sum(-1), torch.ones(x.shape[0])))
assert torch.allclose(x.sum(dim=-1), torch.ones(n))
assert torch.allclose(x.sum(dim=-1), torch.ones(x.shape[0]))
assert torch.allclose(x.sum(dim=1), torch.ones(len(x)))
assert torch.allclose(x.sum(-1), torch.ones_like(x.sum(-1)))
torch.allclose(x.sum(dim=-1), torch.ones(x.size(0)))
print(x.sum(dim=-1).allclose(torch.ones(n)))
assert (x >= 0).all()
assert (x >= 0).all() and (x <= 1).all()
print((x >= 0).all())
print(abs(x.sum(axis=-1) - 1).max())
print((x.sum(-1) - 1).abs().max())
np.set_printoptions(precision=3, suppress=True)
np.set_printoptions(precision=4)
torch.set_printoptions(precision=3)
torch.set_printoptions(precision=4, sci_mode=False)
np.random.seed(0)
torch.manual_seed(0)
rng = np.random.default_rng(0)
plt.imshow(x)
plt.imshow(x, cmap="viridis")
plt.imshow(x, cmap="hot", interpolation="nearest")
plt.imshow(x.detach().numpy(), cmap="viridis")
plt.matshow(x)
plt.colorbar()
plt.title("Attention weights")
plt.xlabel("keys")
plt.ylabel("queries")
plt.xticks(range(len(t)), t)
plt.yticks(range(len(t)), t)
plt.xticks(range(len(t)), t, rotation=90)
plt.xticks(range(len(t)), t, rotation=45)
plt.xticks(ticks=range(len(t)), labels=t)
plt.figure(figsize=(6, 5))
plt.figure()
plt.tight_layout()
plt.show()
fig, ax = plt.subplots()
fig, ax = plt.subplots(figsize=(6, 5))
im = ax.imshow(x)
im = ax.imshow(x, cmap="viridis")
fig.colorbar(im)
fig.colorbar(im, ax=ax)
ax.set_xticks(range(len(t)))
ax.set_yticks(range(len(t)))
ax.set_xticklabels(t)
ax.set_yticklabels(t)
ax.set_title("Attention weights")
sns.heatmap(x, annot=True)
sns.heatmap(x, annot=True, cmap="viridis")
sns.heatmap(x, annot=True, xticklabels=t, yticklabels=t)
sns.heatmap(x, annot=True, fmt=".2f", xticklabels=t, yticklabels=t, cmap="Blues")
sns.heatmap(x, xticklabels=t, yticklabels=t, cmap="viridis")
sns.heatmap(x.detach().numpy(), annot=True, xticklabels=t, yticklabels=t)
print(x.argmax(axis=-1))
print(x.argmax(-1))
print(x.argmax(dim=-1))
print(np.argmax(x, axis=1))
print(np.argmax(x, axis=-1))
print(torch.argmax(x, dim=-1))
m = x.argmax(axis=-1)
m = x.argmax(dim=-1)
m = np.argmax(x, axis=1)
m = torch.argmax(x, dim=1)
print(t[x[i].argmax()])
print(t[np.argmax(x[i])])
print(t[int(x[i].argmax())])
print(t[x[i].argmax().item()])
print([t[j] for j in x.argmax(axis=-1)])
print([t[j] for j in x.argmax(-1)])
for i, w in enumerate(t):
    print(w, t[x[i].argmax()])
for i in range(len(t)):
    print(t[i], t[x[i].argmax()])
for i, w in enumerate(t):
    print(w, x[i])
for i, row in enumerate(x):
    print(t[i], row)
for w, row in zip(t, x):
    print(w, row)
v, j = torch.topk(x[i], 2)
v, j = torch.topk(x[i], k=2)
top = torch.topk(x[i], 2)
top = x[i].topk(2)
j = np.argsort(x[i])[::-1][:2]
j = np.argsort(-x[i])[:2]
j = x[i].argsort()[::-1][:2]
j = torch.argsort(x[i], descending=True)[:2]
print([t[k] for k in j])
print(sorted(zip(x[i], t), reverse=True)[:2])
print(sorted(zip(x[i].tolist(), t), reverse=True)[:2])
d = x.shape[-1]
d = x.shape[1]
d = x.size(-1)
d = k.shape[-1]
d = q.shape[-1]
d = x.shape[0]
n = x.shape[0]
n = len(x)
n, d = x.shape
y = x / np.sqrt(d)
y = x / d ** 0.5
y = x / np.sqrt(k.shape[-1])
y = x / np.sqrt(k.shape[1])
y = x / math.sqrt(k.shape[-1])
y = x / k.shape[-1] ** 0.5
y = x / torch.sqrt(torch.tensor(d, dtype=torch.float32))
y = np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
y = np.exp(x) / np.sum(np.exp(x), axis=-1, keepdims=True)
y = np.exp(x) / np.sum(np.exp(x), axis=1, keepdims=True)
y = np.exp(x) / np.exp(x).sum()
y = np.exp(x) / np.sum(np.exp(x))
e = np.exp(x - np.max(x, axis=-1, keepdims=True))
e = np.exp(x - x.max(axis=-1, keepdims=True))
e = np.exp(x - np.max(x))
e = np.exp(x - x.max())
e = np.exp(x)
y = e / e.sum(axis=-1, keepdims=True)
y = e / np.sum(e, axis=-1, keepdims=True)
y = e / e.sum()
y = e / np.sum(e)
y = torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)
y = torch.exp(x) / torch.sum(torch.exp(x), dim=-1, keepdim=True)
y = torch.exp(x) / torch.exp(x).sum()
e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
e = torch.exp(x - x.max())
y = e / e.sum(dim=-1, keepdim=True)
y = torch.softmax(x, dim=-1)
y = torch.softmax(x, dim=1)
y = torch.softmax(x, dim=0)
y = torch.softmax(x / d ** 0.5, dim=-1)
y = torch.softmax(x / np.sqrt(d), dim=-1)
y = torch.softmax(x / math.sqrt(d), dim=-1)
y = scipy.special.softmax(x, axis=-1)
y = scipy.special.softmax(x, axis=1)
y = np.apply_along_axis(f, 1, x)
y = np.apply_along_axis(f, -1, x)
y = np.array([f(r) for r in x])
y = np.vstack([f(r) for r in x])
y = np.stack([f(r) for r in x])
y = torch.stack([f(r) for r in x])
y = np.array(list(map(f, x)))
rows = []
for r in x:
    rows.append(f(r))
y = np.array(rows)
y = np.vstack(rows)
y = torch.stack(rows)
y = np.zeros_like(x)
y = torch.zeros_like(x)
for i in range(len(x)):
    y[i] = f(x[i])
for i in range(x.shape[0]):
    y[i] = f(x[i])
for i, r in enumerate(x):
    y[i] = f(r)
def f(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()
def f(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
def f(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
def f(x):
    return np.exp(x) / np.sum(np.exp(x))
def f(x):
    return np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
def f(x):
    return np.exp(x - np.max(x)) / np.sum(np.exp(x - np.max(x)))
def f(x):
    x = x - np.max(x)
    return np.exp(x) / np.sum(np.exp(x))
def f(x):
    z = x - x.max()
    e = np.exp(z)
    return e / e.sum()
heads = []
for p in params:
    heads.append(f(x, *p))
heads = [f(x, *p) for p in params]
heads = [f(x, a, b, c) for a, b, c in params]
y = torch.cat(heads, dim=-1)
y = torch.cat(heads, dim=1)
y = np.concatenate(heads, axis=-1)
y = np.hstack(heads)
y = torch.hstack(heads)
print("Output shape:", y.shape)
"""


def _loops(target: str, a: str, b: str, b_is_transposed_of: str | None) -> Iterator[str]:
    """Common loop and comprehension forms of ``target = a @ b``."""
    yield f"{target} = np.array([r @ {b} for r in {a}])"
    yield f"{target} = np.stack([r @ {b} for r in {a}])"
    yield f"{target} = torch.stack([r @ {b} for r in {a}])"
    yield f"{target} = np.vstack([r @ {b} for r in {a}])"
    yield f"rows = []\nfor r in {a}:\n    rows.append(r @ {b})\n{target} = np.array(rows)"
    yield f"n = {a}.shape[0]\nm = {b}.shape[1]"
    yield f"n = len({a})"
    yield f"{target} = np.zeros(({a}.shape[0], {b}.shape[1]))"
    yield f"{target} = torch.zeros({a}.shape[0], {b}.shape[1])"
    yield f"{target} = np.zeros((n, m))\n{target} = np.zeros((n, n))\n{target} = torch.zeros(n, n)"
    # Loop headers over a range are common whatever they are written (``canon``): one form of each
    # body is enough.
    for cell in (f"{a}[i] @ {b}[:, j]", f"np.sum({a}[i] * {b}[:, j])", f"({a}[i] * {b}[:, j]).sum()"):
        yield f"for i in range(n):\n    for j in range(m):\n        {target}[i, j] = {cell}"
        yield f"for i in range(n):\n    for j in range(m):\n        {target}[i][j] = {cell}"
    if b_is_transposed_of is not None:
        k = b_is_transposed_of
        yield f"{target} = np.array([[q @ r for r in {k}] for q in {a}])"
        yield f"{target} = torch.tensor([[q @ r for r in {k}] for q in {a}])"
        for cell in (f"{a}[i] @ {k}[j]", f"np.sum({a}[i] * {k}[j])", f"({a}[i] * {k}[j]).sum()"):
            yield f"for i in range(n):\n    for j in range(n):\n        {target}[i, j] = {cell}"
            yield f"for i in range(n):\n    for j in range(n):\n        {target}[i][j] = {cell}"


def _transposed(node: ast.expr) -> str | None:
    """The source of ``k`` when ``node`` is ``k.T``, ``k.t()`` or ``np.transpose(k)``."""
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        return ast.unparse(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in ("t", "transpose") and not node.args and not isinstance(node.func.value, ast.Name):
            return ast.unparse(node.func.value)
        if node.func.attr in ("t", "transpose") and not node.args:
            return ast.unparse(node.func.value)
        if node.func.attr == "transpose" and len(node.args) == 1:
            return ast.unparse(node.args[0])
    return None


def _product(node: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return node.left, node.right
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 2:
        if node.func.attr in ("dot", "matmul", "mm"):
            return node.args[0], node.args[1]
    return None


def _literal_lists(cells: list[tuple[int, str, list[ast.stmt]]]) -> dict[str, list[ast.expr]]:
    """Names bound to a short list or tuple written out (``head_params = [(W_Q, W_K, W_V), ...]``)."""
    out: dict[str, list[ast.expr]] = {}
    for _, _, body in cells:
        for stmt in body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, (ast.List, ast.Tuple))
                and 0 < len(stmt.value.elts) <= 6
            ):
                out[stmt.targets[0].id] = list(stmt.value.elts)
    return out


class _Put(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, ast.expr]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        found = self.mapping.get(node.id)
        return copy.deepcopy(found) if found is not None else node


def _loop_styles(target: str, comp: ast.ListComp, lists: dict[str, list[ast.expr]]) -> Iterator[str]:
    """A list comprehension of the solution as a loop that appends, and, over a list written out in
    the notebook, item by item."""
    if len(comp.generators) != 1 or comp.generators[0].ifs:
        return
    gen = comp.generators[0]
    elt, var, over = ast.unparse(comp.elt), ast.unparse(gen.target), ast.unparse(gen.iter)
    yield f"{target} = []\nfor {var} in {over}:\n    {target}.append({elt})"
    yield f"{target} = list(map(lambda {var}: {elt}, {over}))" if isinstance(gen.target, ast.Name) else ""
    items = lists.get(gen.iter.id) if isinstance(gen.iter, ast.Name) else None
    if not items:
        return
    written = []
    for item in items:
        if isinstance(gen.target, ast.Name):
            mapping = {gen.target.id: item}
        elif (
            isinstance(gen.target, ast.Tuple)
            and isinstance(item, (ast.Tuple, ast.List))
            and len(item.elts) == len(gen.target.elts)
            and all(isinstance(t, ast.Name) for t in gen.target.elts)
        ):
            mapping = {t.id: e for t, e in zip(gen.target.elts, item.elts, strict=True) if isinstance(t, ast.Name)}
        else:
            return
        written.append(ast.unparse(_Put(mapping).visit(copy.deepcopy(comp.elt))))
    yield f"{target} = [{', '.join(written)}]"


def _composed(body: list[ast.stmt], fixed: frozenset[str] = frozenset(), header: str = "def f():") -> Iterator[str]:
    """Steps written in one expression: each statement of ``body`` with the names earlier statements
    of it computed replaced by their expressions (``softmax(scores / np.sqrt(d_k))`` for ``scaled =
    scores / np.sqrt(d_k)`` then ``softmax(scaled)``), in a function's body as at the top level."""
    env: dict[str, ast.expr] = {}
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            signature = f"def {stmt.name}({ast.unparse(stmt.args)}):"
            yield from _composed([s for s in stmt.body if not isinstance(s, ast.Expr)], header=signature)
            continue
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.Return, ast.Expr)) else None
        if value is None:
            continue
        names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        composed = _Put(env).visit(copy.deepcopy(value)) if names & env.keys() else value
        if names & env.keys():
            text = ast.unparse(composed)
            if len(text) < 400:
                if isinstance(stmt, ast.Assign):
                    yield f"{ast.unparse(stmt.targets[0])} = {text}"
                elif isinstance(stmt, ast.Return):
                    yield f"{header}\n    return {text}"
                else:
                    yield text
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id not in fixed:  # the assignment's names stay names
            env[target.id] = composed  # already written with what its own names were


def variants(
    solution: list[tuple[int, str, list[ast.stmt]]],
    given: list[tuple[int, str, list[ast.stmt]]] | None = None,
    fixed: frozenset[str] = frozenset(),
) -> Iterator[str]:
    """The solution's matrix products written as loops and comprehensions, its comprehensions as
    loops, or item by item over a list the notebook writes out (``given``: the skeleton's cells), and
    its steps written in one expression, each cell on its own (``fixed``: the names that stay)."""
    lists = _literal_lists([*(given or []), *solution])
    for _, _, body in solution:
        yield from _composed(body, fixed)
    for _, _, body in solution:
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.ListComp):
                yield from (v for v in _loop_styles(ast.unparse(stmt.targets[0]), stmt.value, lists) if v)
            for node in ast.walk(stmt):
                if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                    continue
                target = ast.unparse(node.targets[0])
                for sub in ast.walk(node.value):
                    found = _product(sub) if isinstance(sub, ast.expr) else None
                    if found is None:
                        continue
                    a, b = found
                    yield from _loops(target, ast.unparse(a), ast.unparse(b), _transposed(b))


def sources(
    solution: list[tuple[int, str, list[ast.stmt]]],
    given: list[tuple[int, str, list[ast.stmt]]] | None = None,
    fixed: frozenset[str] = frozenset(),
) -> Iterator[str]:
    """Every snippet of the baseline, as Python source, each once (``given``: the skeleton's cells;
    ``fixed``: the names the assignment fixes)."""
    seen: set[str] = set()
    for snippet in _sources(solution, given or [], fixed):
        if snippet not in seen:
            seen.add(snippet)
            yield snippet


def _sources(
    solution: list[tuple[int, str, list[ast.stmt]]],
    given: list[tuple[int, str, list[ast.stmt]]],
    fixed: frozenset[str],
) -> Iterator[str]:
    block: list[str] = []
    for line in IDIOMS.strip("\n").splitlines():  # one snippet per statement with its body
        if line and not line[0].isspace() and block:
            yield "\n".join(block)
            block = []
        block.append(line)
    if block:
        yield "\n".join(block)
    yield from variants(solution, given, fixed)
