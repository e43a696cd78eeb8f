"""Intro Python: strings, lists, a class, dicts, printing, generators, functions as values."""

INTRO = "# Lab 3: functions, classes and friends\n\nFill in the cells marked YOUR CODE HERE. Run the tests below each."

CELLS = [
    ("md", None, INTRO),
    (
        "sol",
        "sol_basics",
        '''def count_vowels(word):
    """Number of vowels (a, e, i, o, u; any case) in word."""
    ### BEGIN SOLUTION
    n = 0
    for ch in word.lower():
        if ch in "aeiou":
            n += 1
    return n
    ### END SOLUTION


def running_total(numbers):
    """A new list: element i is the sum of numbers[0..i]. Do not change numbers."""
    ### BEGIN SOLUTION
    out = []
    total = 0
    for x in numbers:
        total += x
        out.append(total)
    return out
    ### END SOLUTION''',
    ),
    (
        "test",
        "test_vowels",
        2,
        """cases = {"banana": 3, "Sky": 0, "AEIOU": 5, "": 0, "Queue": 4}
for w, n in cases.items():
    print("checking", repr(w))
    assert count_vowels(w) == n, f"count_vowels({w!r}) should be {n}"
print("all good!")""",
    ),
    (
        "test",
        "test_running",
        2,
        '''import inspect
assert callable(running_total)
sig = inspect.signature(running_total)
assert len(sig.parameters) == 1, "running_total takes one argument"
assert running_total([1, 2, 3]) == [1, 3, 6]
assert running_total([]) == []
nums = [5, -2, 4]
res = running_total(nums)
assert res == [5, 3, 7]
assert nums == [5, -2, 4], "don't change the list you were given!"''',
    ),
    (
        "md",
        None,
        "## A bank account\n\nWrite a class `BankAccount(owner, balance=0)` with `deposit`, `withdraw` (ValueError when there is not enough money, or for a non-positive deposit) and a `history` list of `(kind, amount)` tuples.",
    ),
    (
        "sol",
        "sol_bank",
        """class BankAccount:
    ### BEGIN SOLUTION
    def __init__(self, owner, balance=0):
        self.owner = owner
        self.balance = balance
        self.history = []

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("amount must be positive")
        self.balance += amount
        self.history.append(("deposit", amount))

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError("insufficient funds")
        self.balance -= amount
        self.history.append(("withdraw", amount))

    def __repr__(self):
        return f"BankAccount({self.owner!r}, {self.balance})"
    ### END SOLUTION""",
    ),
    (
        "test",
        "test_bank_structure",
        1,
        """acct = BankAccount("ada")
for name in ["deposit", "withdraw"]:
    assert name in dir(BankAccount), "missing method " + name
    assert callable(getattr(acct, name))
assert hasattr(acct, "balance") and hasattr(acct, "history")
assert type(acct).__name__ == "BankAccount"
assert isinstance(acct, BankAccount)
assert set(vars(acct)) >= {"owner", "balance", "history"}
assert acct.__dict__["balance"] == 0""",
    ),
    (
        "test",
        "test_bank_ops",
        2,
        """acct = BankAccount("grace", 10)
acct.deposit(50)
acct.withdraw(20)
assert acct.balance == 40
assert len(acct.history) == 2
assert acct.history[0] == ("deposit", 50)
for i in range(5):
    acct.deposit(1)
assert acct.balance == 45, acct.balance
assert acct.history[-1] == ("deposit", 1)""",
    ),
    (
        "test",
        "test_bank_errors",
        2,
        """def raises(exc, func, *args):
    try:
        func(*args)
    except exc:
        return True
    except Exception as e:
        print("wrong exception:", type(e).__name__)
        return False
    return False

acct = BankAccount("linus", 5)
assert raises(ValueError, acct.withdraw, 100), "withdrawing too much should raise ValueError"
assert raises(ValueError, acct.deposit, -3)
assert acct.balance == 5, "a failed withdraw must not change the balance"
try:
    acct.withdraw(6)
    ok = False
except ValueError as err:
    ok = "insufficient" in str(err).lower()
assert ok""",
    ),
    (
        "sol",
        "sol_misc",
        '''def normalize(scores):
    """Divide every value of the dict by the total of the values, IN PLACE (return nothing)."""
    ### BEGIN SOLUTION
    total = sum(scores.values())
    for k in scores:
        scores[k] = scores[k] / total
    ### END SOLUTION


def greet(name, times=1):
    """Print 'Hello, <name>!' times times."""
    ### BEGIN SOLUTION
    for _ in range(times):
        print(f"Hello, {name}!")
    ### END SOLUTION


def squares(n):
    """A generator of 0, 1, 4, ... (n values)."""
    ### BEGIN SOLUTION
    for i in range(n):
        yield i * i
    ### END SOLUTION''',
    ),
    (
        "test",
        "test_normalize",
        1,
        """d = {"a": 1, "b": 3}
normalize(d)
assert d == {"a": 0.25, "b": 0.75}, d
d2 = {"x": 2.0, "y": 2.0, "z": 4.0}
normalize(d2)
assert abs(sum(d2.values()) - 1) < 1e-12
assert d2["z"] == 0.5""",
    ),
    (
        "test",
        "test_greet",
        1,
        """import io, sys, contextlib
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    greet("Ada")
assert buf.getvalue() == "Hello, Ada!\\n", repr(buf.getvalue())

class capsys:
    def __enter__(self):
        self.old, sys.stdout = sys.stdout, io.StringIO()
        return self
    def __exit__(self, *exc):
        self.out = sys.stdout.getvalue()
        sys.stdout = self.old

with capsys() as cap:
    greet("Bob", times=3)
assert cap.out.count("Hello, Bob!") == 3, cap.out
print("greet OK")""",
    ),
    (
        "test",
        "test_squares",
        1,
        """import types
g = squares(4)
assert isinstance(g, types.GeneratorType), "squares should be a generator (use yield)"
assert next(g) == 0
assert next(g) == 1
assert list(g) == [4, 9]
assert sum(squares(10)) == 285
assert list(squares(0)) == []""",
    ),
    (
        "test",
        "test_partial",
        3,
        """def check(f, *args, expected):
    try:
        return f(*args) == expected
    except Exception as e:
        print(f.__name__, "raised", repr(e))
        return False

score = 0.0
score += check(count_vowels, "Education", expected=5)
score += check(running_total, [1, 1, 1], expected=[1, 2, 3])
score += check(lambda n: list(squares(n)), 3, expected=[0, 1, 4])
score""",
    ),
    (
        "md",
        None,
        "## Functions are values\n\n`add` and `mul` are given. Build `OPERATIONS`, a dict mapping `'+'`, `'*'` and `'sqrt'` to `add`, `mul` and `math.sqrt` (the functions themselves), and `apply(op, a, b=None)`.",
    ),
    (
        "code",
        None,
        """import math

def add(a, b):
    return a + b

def mul(a, b):
    return a * b""",
    ),
    (
        "sol",
        "sol_ops",
        """### BEGIN SOLUTION
OPERATIONS = {"+": add, "*": mul, "sqrt": math.sqrt}

def apply(op, a, b=None):
    f = OPERATIONS[op]
    if b is None:
        return f(a)
    return f(a, b)
### END SOLUTION""",
    ),
    (
        "test",
        "test_ops",
        1,
        """assert OPERATIONS["+"] == add
assert OPERATIONS["*"] is mul
assert OPERATIONS["sqrt"] == math.sqrt
assert id(OPERATIONS["+"]) == id(add)
assert apply("+", 2, 3) == 5 and apply("*", 2, 3) == 6
assert apply("sqrt", 16) == 4
import math as m2
assert m2 is math""",
    ),
    (
        "test",
        "test_report",
        1,
        """acct = BankAccount("zoe", 100)
acct.withdraw(30)
acct.deposit(1)
print(acct)
sorted(vars(acct))""",
    ),
]

SUBMISSIONS = {
    "early": {"edits": [{"find": r"for ch in word\.lower\(\):", "replace": "for ch in word:", "cell": "sol_basics"}]},
    "late": {
        "edits": [{"find": r'"sqrt": math\.sqrt', "replace": '"sqrt": lambda x: math.sqrt(x)', "cell": "sol_ops"}]
    },
    "variant": {
        "edits": [
            {
                "find": r"(?s)\A.*\Z",
                "cell": "sol_basics",
                "replace": """from itertools import accumulate

def count_vowels(word):
    return sum(1 for c in word if c.lower() in "aeiou")

def running_total(numbers):
    return list(accumulate(numbers))""",
            },
            {
                "find": r"(?s)\A.*\Z",
                "cell": "sol_bank",
                "replace": """from dataclasses import dataclass, field

@dataclass
class BankAccount:
    owner: str
    balance: float = 0
    history: list = field(default_factory=list)

    def _record(self, kind, amount):
        self.history.append((kind, amount))

    def deposit(self, amount):
        if not amount > 0:
            raise ValueError("deposit must be > 0")
        self.balance = self.balance + amount
        self._record("deposit", amount)

    def withdraw(self, amount):
        if self.balance - amount < 0:
            raise ValueError("Insufficient balance")
        self.balance = self.balance - amount
        self._record("withdraw", amount)""",
            },
            {
                "find": r"(?s)\A.*\Z",
                "cell": "sol_misc",
                "replace": """def normalize(scores):
    total = sum(scores.values())
    scores.update({k: v / total for k, v in scores.items()})

def greet(name, times=1):
    print(*(["Hello, " + name + "!"] * times), sep=chr(10))

def squares(n):
    return (i ** 2 for i in range(n))""",
            },
            {
                "find": r"(?s)\A.*\Z",
                "cell": "sol_ops",
                "replace": """OPERATIONS = dict([("+", add), ("*", mul)])
OPERATIONS["sqrt"] = math.sqrt

def apply(op, *args):
    return OPERATIONS[op](*args)""",
            },
        ]
    },
    "swap": {
        "edits": [
            {
                "find": r"(?s)    total = sum\(scores\.values\(\)\).*?scores\[k\] / total",
                "cell": "sol_misc",
                "replace": "    total = sum(scores.values())\n    return {k: v / total for k, v in scores.items()}",
            },
            {"find": r'print\(f"Hello, \{name\}!"\)', "cell": "sol_misc", "replace": 'return f"Hello, {name}!"'},
        ]
    },
    "inplace": {
        "edits": [
            {
                "find": r"(?s)    out = \[\].*?return out",
                "cell": "sol_basics",
                "replace": "    for i in range(1, len(numbers)):\n        numbers[i] += numbers[i - 1]\n    return numbers",
            },
        ]
    },
}
