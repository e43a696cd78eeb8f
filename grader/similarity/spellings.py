"""How libraries spell what they do: the tables ``forms`` reads code with.

Which names are libraries by default, which calls are one operator (``np.dot`` is ``@``), which are
a transpose, which are the same function under another name, which conversions change no value a
person reads, and how each operator is written.
"""

from __future__ import annotations

import ast
import builtins

DEFAULT_LIBRARIES = frozenset(
    {"np", "numpy", "torch", "F", "nn", "plt", "sns", "pd", "math", "scipy", "tf", "jnp", "jax", "sklearn", "random"}
)
BUILTINS = frozenset(dir(builtins))

# One operation, one form.
BINARY = {
    "matmul": ast.MatMult,
    "mm": ast.MatMult,
    "bmm": ast.MatMult,
    "mv": ast.MatMult,
    "dot": ast.MatMult,
    "divide": ast.Div,
    "true_divide": ast.Div,
    "div": ast.Div,
    "multiply": ast.Mult,
    "mul": ast.Mult,
    "add": ast.Add,
    "subtract": ast.Sub,
    "sub": ast.Sub,
    "power": ast.Pow,
    "pow": ast.Pow,
}
TRANSPOSE = frozenset({"transpose", "t", "swapaxes", "swapdims", "permute", "T", "mT", "H", "mH"})
SAME = {
    "amax": "max",
    "amin": "min",
    "concatenate": "cat",
    "concat": "cat",
    "Softmax": "softmax",
    "special_softmax": "softmax",
    "newaxis": "None",
    "argsort": "argsort",
    "topk": "topk",
}
# Conversions that change nothing a person would read in the value: the first argument stands alone.
STRIP = frozenset(
    {
        "float",
        "double",
        "detach",
        "cpu",
        "numpy",
        "clone",
        "copy",
        "contiguous",
        "to",
        "type",
        "astype",
        "asarray",
        "array",
        "tensor",
        "as_tensor",
        "from_numpy",
        "Tensor",
        "FloatTensor",
        "DoubleTensor",
        "item",
        "tolist",
        "float32",
        "float64",
        "requires_grad_",
        "bool",
        "long",
        "half",
    }
)
OPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.MatMult: "@",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.And: "and",
    ast.Or: "or",
    ast.Not: "not",
    ast.Invert: "~",
    ast.USub: "-",
    ast.UAdd: "+",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
