"""Physics / numerics: Euler, relaxation on a grid, a particle class, quadrature, Monte Carlo."""

CELLS = [
    ("md", None, "# Homework 4: numerical methods\n\nUse numpy. Do not change the test cells."),
    (
        "code",
        None,
        """import numpy as np
import matplotlib.pyplot as plt
%matplotlib inline""",
    ),
    (
        "sol",
        "sol_euler",
        '''def euler_step(f, t, y, dt):
    """One forward Euler step of dy/dt = f(t, y)."""
    ### BEGIN SOLUTION
    return y + dt * f(t, y)
    ### END SOLUTION


def euler(f, y0, t0, t1, n):
    """Integrate from t0 to t1 in n steps; return (t, y) with n+1 entries each."""
    ### BEGIN SOLUTION
    t = np.linspace(t0, t1, n + 1)
    dt = (t1 - t0) / n
    y = np.zeros((n + 1,) + np.shape(y0))
    y[0] = y0
    for i in range(n):
        y[i + 1] = euler_step(f, t[i], y[i], dt)
    return t, y
    ### END SOLUTION''',
    ),
    (
        "test",
        "test_euler_step",
        1,
        """f = lambda t, y: -y
assert euler_step(f, 0.0, 1.0, 0.1) == 0.9
np.testing.assert_allclose(euler_step(f, 0, np.array([1.0, 2.0]), 0.5), [0.5, 1.0])
np.testing.assert_array_equal(euler_step(lambda t, y: t, 2.0, np.zeros(3), 1.0), [2.0, 2.0, 2.0])""",
    ),
    (
        "test",
        "test_euler",
        2,
        '''errors = []
for n in [10, 20, 40, 80]:
    t, y = euler(lambda t, y: -y, 1.0, 0.0, 1.0, n)
    assert len(t) == n + 1 and y.shape == (n + 1,), y.shape
    errors.append(abs(y[-1] - np.exp(-1)))
print(errors)
ratios = [errors[i] / errors[i + 1] for i in range(3)]
print("ratios", ratios)
assert all(1.8 < r < 2.2 for r in ratios), "Euler should be first order"''',
    ),
    (
        "md",
        None,
        "## Relaxation\n\n`set_boundary(grid, top, bottom)` sets the first row to `top`, the last to `bottom` and the left and right columns of the other rows to 0, **in place**. `relax(grid, steps)` does `steps` Jacobi sweeps of the interior, in place.",
    ),
    (
        "sol",
        "sol_grid",
        """def set_boundary(grid, top, bottom):
    ### BEGIN SOLUTION
    grid[0, :] = top
    grid[-1, :] = bottom
    grid[1:-1, 0] = 0
    grid[1:-1, -1] = 0
    ### END SOLUTION


def relax(grid, steps):
    ### BEGIN SOLUTION
    for _ in range(steps):
        grid[1:-1, 1:-1] = 0.25 * (grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
    ### END SOLUTION""",
    ),
    (
        "test",
        "test_boundary",
        1,
        '''g = np.ones((5, 6))
set_boundary(g, 10.0, -10.0)
assert np.all(g[0] == 10) and np.all(g[-1] == -10)
assert g[2, 0] == 0 and g[2, -1] == 0
assert g[2, 3] == 1, "interior should be untouched"''',
    ),
    (
        "test",
        "test_relax",
        2,
        """g = np.zeros((20, 20))
set_boundary(g, 1.0, 0.0)
relax(g, 500)
np.testing.assert_allclose(g, g[:, ::-1], atol=1e-12)  # left-right symmetric
assert 0 < g[10, 10] < 1
mid = g[:, 10]
assert np.all(np.diff(mid[1:-1]) < 0), "potential should decrease from top to bottom"
assert g[0, 5] == 1.0 and g[-1, 5] == 0.0""",
    ),
    (
        "md",
        None,
        "## A particle\n\nComplete the class. `step` uses semi-implicit Euler (velocity first, then position) and appends a copy of the new position to `self.path`.",
    ),
    (
        "sol",
        "sol_particle",
        """class Particle:
    def __init__(self, x, v, m=1.0):
        ### BEGIN SOLUTION
        self.x = np.array(x, dtype=float)
        self.v = np.array(v, dtype=float)
        self.m = m
        self.path = [self.x.copy()]
        ### END SOLUTION

    def step(self, force, dt):
        ### BEGIN SOLUTION
        self.v = self.v + dt * force(self.x) / self.m
        self.x = self.x + dt * self.v
        self.path.append(self.x.copy())
        ### END SOLUTION

    def kinetic_energy(self):
        ### BEGIN SOLUTION
        return 0.5 * self.m * np.dot(self.v, self.v)
        ### END SOLUTION""",
    ),
    (
        "test",
        "test_particle",
        2,
        """p = Particle([0.0, 0.0], [1.0, 0.0])
gravity = lambda x: np.array([0.0, -9.8])
for _ in range(3):
    p.step(gravity, 0.1)
assert len(p.path) == 4
expected = [np.array([0.0, 0.0]), np.array([0.1, -0.098]), np.array([0.2, -0.294]), np.array([0.3, -0.588])]
np.testing.assert_allclose(p.path, expected)
assert all(np.allclose(a, b) for a, b in zip(p.path, expected))
assert p.path[0] is not p.path[1]
assert np.isclose(p.kinetic_energy(), 0.5 * (1 + 2.94**2))""",
    ),
    (
        "test",
        "test_particle_attrs",
        1,
        '''import inspect
p = Particle([1, 2], [0, 0])
assert isinstance(p.x, np.ndarray) and p.x.dtype == float
assert "step" in dir(p) and callable(p.step)
sig = inspect.signature(Particle.step)
assert list(sig.parameters) == ["self", "force", "dt"]
assert "m" in vars(p) and p.m == 1.0
src = inspect.getsource(Particle.kinetic_energy)
assert "for " not in src, "no loops please, use numpy"''',
    ),
    (
        "sol",
        "sol_quad",
        '''def trapezoid(f, a, b, n=100):
    """Composite trapezoid rule with n intervals."""
    ### BEGIN SOLUTION
    x = np.linspace(a, b, n + 1)
    y = f(x)
    h = (b - a) / n
    return h * (0.5 * y[0] + y[1:-1].sum() + 0.5 * y[-1])
    ### END SOLUTION


def mc_integrate(f, a, b, n=1000):
    """Monte Carlo estimate of the integral, with samples from np.random.uniform (do not seed!)."""
    ### BEGIN SOLUTION
    x = np.random.uniform(a, b, n)
    return (b - a) * np.mean(f(x))
    ### END SOLUTION''',
    ),
    (
        "test",
        "test_trapezoid",
        1,
        """import inspect
assert inspect.signature(trapezoid).parameters["n"].default == 100
assert abs(trapezoid(np.sin, 0, np.pi) - 2) < 1e-3
assert abs(trapezoid(lambda x: x**2, 0, 1, 1000) - 1/3) < 1e-6""",
    ),
    (
        "test",
        "test_mc",
        2,
        """np.random.seed(42)
a = mc_integrate(np.cos, 0, np.pi / 2, 5000)
np.random.seed(42)
b = mc_integrate(np.cos, 0, np.pi / 2, 5000)
assert a == b, "use np.random so that the seed makes it reproducible"
assert abs(a - 1) < 0.05, a
np.random.seed(0)
x = np.random.uniform(0, 1, 10)
np.random.seed(0)
assert np.isclose(mc_integrate(lambda t: t, 0, 1, 10), x.mean())""",
    ),
    (
        "test",
        "test_partial",
        2,
        """pts = 0
for n, tol in [(10, 1e-1), (100, 1e-4), (1000, 1e-6)]:
    approx = trapezoid(np.exp, 0, 1, n)
    err = abs(approx - (np.e - 1))
    print(n, err)
    if err < tol:
        pts += 0.5
pts * 4 / 3""",
    ),
    (
        "test",
        "test_plot",
        1,
        """t, y = euler(lambda t, y: -y, 1.0, 0, 5, 50)
fig, ax = plt.subplots()
ax.plot(t, y, label="euler")
ax.plot(t, np.exp(-t), "--", label="exact")
ax.legend()
fig""",
    ),
    (
        "test",
        "test_allclose_end",
        1,
        """t, y = euler(lambda t, y: 2 * t, 0.0, 0.0, 1.0, 1000)
np.allclose(y[-1], 1.0, atol=1e-2)""",
    ),
]

SUBMISSIONS = {
    "early": {
        "edits": [{"find": r"return y \+ dt \* f\(t, y\)", "replace": "return y + dt * f(y, t)", "cell": "sol_euler"}]
    },
    "late": {
        "edits": [
            {
                "find": r"x = np\.random\.uniform\(a, b, n\)",
                "replace": "x = np.random.default_rng(42).uniform(a, b, n)",
                "cell": "sol_quad",
            }
        ]
    },
    "variant": {
        "edits": [
            {
                "find": r"(?s)\A.*\Z",
                "cell": "sol_euler",
                "replace": """def euler_step(f, t, y, dt):
    k = f(t, y)
    return y + k * dt

def euler(f, y0, t0, t1, n):
    h = (t1 - t0) / n
    ts, ys = [t0], [y0]
    for i in range(n):
        ys.append(euler_step(f, ts[-1], ys[-1], h))
        ts.append(t0 + (i + 1) * h)
    return np.array(ts), np.array(ys)""",
            },
            {
                "find": r"(?s)\A.*\Z",
                "cell": "sol_grid",
                "replace": """def set_boundary(grid, top, bottom):
    ny, nx = grid.shape
    for j in range(nx):
        grid[0][j] = top
        grid[ny - 1][j] = bottom
    for i in range(1, ny - 1):
        grid[i][0] = 0
        grid[i][nx - 1] = 0

def relax(grid, steps):
    ny, nx = grid.shape
    for _ in range(steps):
        old = grid.copy()
        for i in range(1, ny - 1):
            for j in range(1, nx - 1):
                grid[i, j] = (old[i - 1, j] + old[i + 1, j] + old[i, j - 1] + old[i, j + 1]) / 4""",
            },
            {
                "find": r"return 0\.5 \* self\.m \* np\.dot\(self\.v, self\.v\)",
                "cell": "sol_particle",
                "replace": "return self.m * (self.v ** 2).sum() / 2",
            },
            {
                "find": r"(?s)\A.*\Z",
                "cell": "sol_quad",
                "replace": """def trapezoid(f, a, b, n=100):
    xs = np.linspace(a, b, n + 1)
    return np.trapz(f(xs), xs)

def mc_integrate(f, a, b, n=1000):
    samples = a + (b - a) * np.random.random(n)
    return np.sum(f(samples)) * (b - a) / n""",
            },
        ]
    },
    "swap": {
        "edits": [
            {
                "find": r"(?s)    grid\[0, :\] = top.*?grid\[1:-1, -1\] = 0",
                "cell": "sol_grid",
                "replace": "    new = grid.copy()\n    new[0, :] = top\n    new[-1, :] = bottom\n    new[1:-1, 0] = 0\n    new[1:-1, -1] = 0\n    return new",
            },
        ]
    },
    "riemann": {
        "edits": [
            {
                "find": r"return h \* \(0\.5 \* y\[0\] \+ y\[1:-1\]\.sum\(\) \+ 0\.5 \* y\[-1\]\)",
                "cell": "sol_quad",
                "replace": "return h * y[:-1].sum()",
            },
        ]
    },
    "alias": {
        "edits": [
            {"find": r"self\.path = \[self\.x\.copy\(\)\]", "cell": "sol_particle", "replace": "self.path = [self.x]"},
            {"find": r"self\.x = self\.x \+ dt \* self\.v", "cell": "sol_particle", "replace": "self.x += dt * self.v"},
            {
                "find": r"self\.path\.append\(self\.x\.copy\(\)\)",
                "cell": "sol_particle",
                "replace": "self.path.append(self.x)",
            },
        ]
    },
}
