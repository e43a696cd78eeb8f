"""Build the three otter master notebooks of the blind otter-idioms corpus (and their data files).

    python build.py OUT_DIR [--execute PYTHON]

Writes OUT_DIR/hw02-tips/, OUT_DIR/lab05-dice/, OUT_DIR/hw07-housing/, each with its master
notebook and the files its ``files:`` lists. With ``--execute`` the masters are run in place by
that Python's nbconvert so every test cell stores its output (otter reads those outputs).
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell


def md(text: str):
    return new_markdown_cell(text.strip("\n"))


def code(text: str):
    return new_code_cell(text.strip("\n"))


def raw(text: str):
    return new_raw_cell(text.strip("\n"))


def question(config: str, prompt: str, solution: list, tests: list[str]) -> list:
    cells = [raw("# BEGIN QUESTION\n" + config.strip("\n")), md(prompt)]
    cells += [raw("# BEGIN SOLUTION"), *solution, raw("# END SOLUTION")]
    if tests:
        cells.append(raw("# BEGIN TESTS"))
        cells += [code(t) for t in tests]
        cells.append(raw("# END TESTS"))
    cells.append(raw("# END QUESTION"))
    return cells


def manual_md(config: str, prompt: str, answer: str) -> list:
    return [
        raw("# BEGIN QUESTION\n" + config.strip("\n")),
        md(prompt),
        raw("# BEGIN SOLUTION"),
        md(answer),
        raw("# END SOLUTION"),
        raw("# END QUESTION"),
    ]


TIPS_CSV = """total_bill,tip,sex,smoker,day,time,size
16.99,1.01,Female,No,Sun,Dinner,2
10.34,1.66,Male,No,Sun,Dinner,3
21.01,3.5,Male,No,Sun,Dinner,3
23.68,3.31,Male,No,Sun,Dinner,2
24.59,3.61,Female,No,Sun,Dinner,4
25.29,4.71,Male,Yes,Sat,Dinner,4
8.77,2.0,Male,Yes,Sat,Dinner,2
26.88,3.12,Male,Yes,Sat,Dinner,4
15.04,1.96,Male,No,Thur,Lunch,2
14.78,3.23,Male,Yes,Thur,Lunch,2
10.27,1.71,Male,No,Fri,Dinner,2
35.26,5.0,Female,Yes,Fri,Dinner,1
"""


def tips_course() -> tuple[nbformat.NotebookNode, dict[str, str]]:
    cells = [
        raw(
            """
# ASSIGNMENT CONFIG
name: hw02
files:
    - tips.csv
requirements:
    - pandas
    - numpy
export_cell: false
"""
        ),
        md("# Homework 2: Restaurant Tips\n\nIn this homework we explore a small sample of restaurant bills."),
        code('import numpy as np\nimport pandas as pd\n\ntips = pd.read_csv("tips.csv")\ntips.head()'),
    ]
    cells += question(
        "name: q1\npoints: 1",
        "**Question 1.** Assign `n_rows` and `n_cols` to the number of rows and columns of `tips`.",
        [code("n_rows, n_cols = tips.shape # SOLUTION")],
        ["n_rows", "n_cols"],
    )
    cells += question(
        "name: q2\npoints: [1, 1, 2]",
        "**Question 2.** Compute the average tip, `mean_tip`, as a Python or NumPy float.",
        [code('# BEGIN SOLUTION\nmean_tip = tips["tip"].mean()\n# END SOLUTION\nmean_tip')],
        [
            "isinstance(mean_tip, float)",
            'np.isclose(mean_tip, tips["tip"].sum() / len(tips))',
            "# HIDDEN\nround(mean_tip, 3)",
        ],
    )
    cells += question(
        "name: q3\npoints: 2",
        "**Question 3.** Build `by_day`, a DataFrame indexed by day with the total of `total_bill` and of "
        "`tip` for each day (columns in that order).",
        [code('by_day = tips.groupby("day")[["total_bill", "tip"]].sum() # SOLUTION\nby_day')],
        ["list(by_day.index)", "by_day"],
    )
    cells += question(
        "name: q4\npoints: 3",
        "**Question 4.** Write `tip_rate(bill, tip)`, the tip as a fraction of the bill. It should raise a "
        "`ValueError` when the bill is not positive.",
        [
            code(
                '''
""" # BEGIN PROMPT
def tip_rate(bill, tip):
    ...
""" # END PROMPT
# BEGIN SOLUTION NO PROMPT
def tip_rate(bill, tip):
    if bill <= 0:
        raise ValueError("the bill must be positive")
    return tip / bill
# END SOLUTION
'''
            )
        ],
        [
            "for b, t in [(10, 2), (20, 3), (8.5, 1.7)]:\n    assert np.isclose(tip_rate(b, t), t / b)",
            'try:\n    tip_rate(0, 1)\n    print("no error")\nexcept ValueError:\n    print("ValueError raised")',
            'rates = [tip_rate(b, t) for b, t in zip(tips["total_bill"], tips["tip"])]\nround(max(rates), 4)',
        ],
    )
    cells += manual_md(
        "name: q5\nmanual: true\npoints: 2",
        "**Question 5.** Looking at `by_day`, which day brings the most tips in this sample? Is that a "
        "fair conclusion about the restaurant? Explain in two sentences.",
        "Sunday has the largest total tip, but it also has the most bills in this tiny sample, so the "
        "totals say more about how many tables were sampled than about the day.",
    )
    cells += question(
        "name: q6\npoints: 2\nall_or_nothing: true",
        "**Question 6.** Assign `smokers` to the rows of `tips` for smoking parties.",
        [code('smokers = tips[tips["smoker"] == "Yes"] # SOLUTION\nsmokers.shape')],
        ["smokers.shape", 'set(smokers["smoker"])', '# HIDDEN\nsmokers["tip"].sum()'],
    )
    cells += question(
        "name: q7",
        "**Question 7.** What fraction of the parties have four or more people? Assign `big_party_share`.",
        [code('big_party_share = (tips["size"] >= 4).mean() # SOLUTION')],
        [
            '""" # BEGIN TEST CONFIG\npoints: 1\nsuccess_message: A proportion, good.\n'
            'failure_message: A share is a number between 0 and 1.\n""" # END TEST CONFIG\n'
            "0 <= big_party_share <= 1",
            '""" # BEGIN TEST CONFIG\npoints: 2\nhidden: true\n""" # END TEST CONFIG\nbig_party_share',
        ],
    )
    cells += question(
        "name: q8\npoints: 2",
        "**Question 8.** Assign `size_counts` to a **list** of the number of parties of each size, "
        "from the smallest size to the largest.",
        [code('size_counts = list(tips["size"].value_counts().sort_index()) # SOLUTION')],
        ["len(size_counts)", "size_counts"],
    )
    cells.append(md("You are done! Submit the notebook."))
    return new_notebook(cells=cells), {"tips.csv": TIPS_CSV}


def dice_course() -> tuple[nbformat.NotebookNode, dict[str, str]]:
    cells = [
        raw(
            """
# ASSIGNMENT CONFIG
name: lab05
seed:
    variable: rng_seed
    autograder_value: 42
    student_value: 7
"""
        ),
        md("# Lab 5: Simulating Dice\n\nWe use a NumPy random generator seeded by `rng_seed`."),
        code(
            'import numpy as np\nimport matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\n\n'
            "rng_seed = 42\nrng = np.random.default_rng(rng_seed)"
        ),
    ]
    cells += question(
        "name: q1",
        "**Question 1.** Make `die`, an array of the faces 1 to 6.",
        [code("die = np.arange(1, 7) # SOLUTION\ndie")],
        ["die"],
    )
    cells += question(
        "name: q2\npoints: 2",
        "**Question 2.** Roll the die 20 times with `rng.choice`; call the array `rolls`.",
        [code("rolls = rng.choice(die, 20) # SOLUTION")],
        ["len(rolls)", "# HIDDEN\nrolls"],
    )
    cells += question(
        "name: q3\npoints: [1, 2]",
        "**Question 3.** What proportion of `rolls` are sixes? Assign `prop_six`.",
        [code("prop_six = np.count_nonzero(rolls == 6) / len(rolls) # SOLUTION\nprop_six")],
        ["0 <= prop_six <= 1", "# HIDDEN\nprop_six"],
    )
    cells += question(
        "name: q4\npoints: [1, 1]",
        "**Question 4.** Write `simulate_sums(n)`, which returns an array of `n` sums of two rolls of "
        "`die`, drawn with `rng`.",
        [
            code(
                "def simulate_sums(n):\n    # BEGIN SOLUTION\n    return rng.choice(die, n) + rng.choice(die, n)\n"
                "    # END SOLUTION"
            )
        ],
        [
            "[len(simulate_sums(k)) for k in (1, 5, 10)]",
            "s = simulate_sums(1000)\nbool(s.min() >= 2 and s.max() <= 12)",
        ],
    )
    cells += question(
        "name: q5\npoints: 2",
        "**Question 5.** Simulate 5000 sums into `sums`, then compute `p_ten_or_more`, the proportion "
        "of sums that are 10 or more.",
        [code("sums = simulate_sums(5000) # SOLUTION\np_ten_or_more = np.mean(sums >= 10) # SOLUTION\np_ten_or_more")],
        [
            "len(sums)",
            "0.1 < p_ten_or_more < 0.25",
            '""" # BEGIN TEST CONFIG\nhidden: true\nfailure_message: Use the sums you simulated.\n'
            '""" # END TEST CONFIG\nnp.isclose(p_ten_or_more, np.count_nonzero(sums >= 10) / 5000)',
        ],
    )
    cells += [
        raw("# BEGIN QUESTION\nname: q6\nmanual: true\npoints: 2"),
        md("**Question 6.** Draw a histogram of `sums` with one bar per possible sum."),
        raw("# BEGIN SOLUTION"),
        code(
            "# BEGIN SOLUTION\nplt.hist(sums, bins=np.arange(1.5, 13.5), density=True)\n"
            'plt.xlabel("sum of two dice");\n# END SOLUTION'
        ),
        raw("# END SOLUTION"),
        raw("# END QUESTION"),
    ]
    cells += question(
        "name: q7\npoints: 3",
        "**Question 7.** Write `summarize(sample)` returning the array of its mean, its standard "
        "deviation and its median, in that order.",
        [
            code(
                '''
""" # BEGIN PROMPT
def summarize(sample):
    ...
""" # END PROMPT
# BEGIN SOLUTION NO PROMPT
def summarize(sample):
    return np.array([np.mean(sample), np.std(sample), np.median(sample)])
# END SOLUTION
'''
            )
        ],
        [
            "print(np.round(summarize(np.array([1, 2, 3, 4])), 3))",
            "summary = summarize(sums)\nlen(summary)",
            "# HIDDEN\nfor sample in ([2, 2, 2], [1, 5], [3, 4, 5, 6, 7]):\n"
            "    out = summarize(np.array(sample))\n"
            '    assert np.allclose(out, [np.mean(sample), np.std(sample), np.median(sample)])\nprint("ok")',
        ],
    )
    cells += question(
        "name: q8\npoints: [1, 1]",
        "**Question 8.** A spinner lands on red with probability `p_red = 0.1` and on blue with "
        "probability `p_blue = 0.2`. Assign `p_red_or_blue` using those two variables.",
        [code("p_red, p_blue = 0.1, 0.2\np_red_or_blue = p_red + p_blue # SOLUTION")],
        ["np.isclose(p_red_or_blue, 0.3)", "p_red_or_blue"],
    )
    cells += question(
        "name: q9",
        "**Question 9.** The expected sum of two dice: assign `expected_sum` to the mean of `die` times two.",
        [code("expected_sum = np.mean(die) * 2 # SOLUTION")],
        ["expected_sum"],
    )
    return new_notebook(cells=cells), {}


HOUSING_CSV = """neighborhood,sqft,price
North,850,210
North,1200,265
North,1500,320
South,700,150
South,1000,205
South,1650,300
East,900,230
East,1300,280
East,2000,410
West,1100,250
"""


def housing_course() -> tuple[nbformat.NotebookNode, dict[str, str]]:
    cells = [
        raw(
            """
# ASSIGNMENT CONFIG
name: hw07
requirements: requirements.txt
files:
    - data/housing.csv
generate:
    seed: 2023
"""
        ),
        md("# Homework 7: Least Squares on House Prices"),
        code(
            'import numpy as np\nimport pandas as pd\n\nhousing = pd.read_csv("data/housing.csv")\n'
            'x = housing["sqft"].to_numpy()\ny = housing["price"].to_numpy()\nn = len(housing)'
        ),
    ]
    cells += question(
        "name: q1\npoints: 1",
        "**Question 1.** Build the design matrix `X`: a column of ones, then the square footage.",
        [code("X = np.column_stack([np.ones(n), x]) # SOLUTION")],
        ["X.shape", "np.all(X[:, 0] == 1)"],
    )
    cells += question(
        "name: q2\npoints: [1, 1, 1]",
        "**Question 2.** Fit `theta`, the least-squares coefficients, with `np.linalg.lstsq`.",
        [code("theta = np.linalg.lstsq(X, y, rcond=None)[0] # SOLUTION\ntheta")],
        [
            "theta.shape",
            "np.allclose(X.T @ X @ theta, X.T @ y)",
            "# HIDDEN\nnp.round(theta, 3)",
        ],
    )
    cells += question(
        "name: q3\npoints: 3",
        "**Question 3.** Write `rmse(actual, predicted)`. Raise a `ValueError` if the arrays have different lengths.",
        [
            code(
                "def rmse(actual, predicted):\n    # BEGIN SOLUTION\n    if len(actual) != len(predicted):\n"
                '        raise ValueError("lengths differ")\n'
                "    return np.sqrt(np.mean((actual - predicted) ** 2))\n    # END SOLUTION"
            )
        ],
        [
            "cases = [([1, 2, 3], [1, 2, 3], 0.0), ([0, 0], [3, 4], np.sqrt(12.5)), ([1], [3], 2.0)]\n"
            "all(np.isclose(rmse(np.array(a), np.array(p)), e) for a, p, e in cases)",
            'try:\n    rmse(np.array([1, 2]), np.array([1]))\nexcept ValueError:\n    print("raised")',
            "# HIDDEN\nround(float(rmse(y, X @ theta)), 2)",
        ],
    )
    cells += [code("np.random.seed(2023)  # for reproducibility")]
    cells += question(
        "name: q4\npoints: 2",
        "**Question 4.** Simulate `noise`: 5 draws from a normal distribution with mean 0 and standard "
        "deviation 10, using `np.random.normal`.",
        [code("noise = np.random.normal(0, 10, size=5) # SOLUTION")],
        ["noise.shape", "# HIDDEN\nnp.round(noise, 2)"],
    )
    cells += question(
        "name: q5\npoints: [1, 2]",
        "**Question 5.** Write `bootstrap_means(data, reps)`: `reps` means of resamples (with "
        "replacement, same size) of `data`, drawn with `np.random.choice`.",
        [
            code(
                "def bootstrap_means(data, reps):\n    # BEGIN SOLUTION\n"
                "    return np.array([np.mean(np.random.choice(data, len(data))) for _ in range(reps)])\n"
                "    # END SOLUTION"
            )
        ],
        [
            "len(bootstrap_means(y, 50))",
            "# HIDDEN\nnp.random.seed(0)\na = bootstrap_means(y, 5)\nnp.random.seed(0)\nb = bootstrap_means(y, 5)\n"
            "np.array_equal(a, b) and float(np.std(bootstrap_means(np.ones(10), 20)))",
        ],
    )
    cells += manual_md(
        "name: q6\nmanual: true",
        "**Question 6.** Is a straight line a good model of price here? Explain.",
        "Mostly: price grows roughly linearly with square footage, with neighborhood effects left over.",
    )
    cells += question(
        "name: q7\npoints: 2",
        "**Question 7.** `summary`: per neighborhood, the mean and the count of `price` (columns "
        "`mean` and `count`, neighborhoods sorted).",
        [code('summary = housing.groupby("neighborhood")["price"].agg(["mean", "count"]) # SOLUTION\nsummary')],
        ["summary.columns.tolist()", "summary.round(1)"],
    )
    cells += question(
        "name: q8\npoints: 3\nall_or_nothing: true",
        "**Question 8.** `priciest`: the name of the neighborhood with the highest mean price, and "
        "`price_per_sqft`: the array of price divided by square footage, rounded to 3 decimals.",
        [code('priciest = summary["mean"].idxmax() # SOLUTION\nprice_per_sqft = np.round(y / x, 3) # SOLUTION')],
        ["priciest", "price_per_sqft[:3]", "len(price_per_sqft) == n"],
    )
    return new_notebook(cells=cells), {
        "data/housing.csv": HOUSING_CSV,
        "requirements.txt": "numpy\npandas\n",
    }


COURSES = {
    "hw02-tips/hw02.ipynb": tips_course,
    "lab05-dice/lab05.ipynb": dice_course,
    "hw07-housing/hw07.ipynb": housing_course,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--execute", type=Path, help="a Python with jupyter nbconvert and the courses' libraries")
    args = parser.parse_args()
    for rel, make in COURSES.items():
        nb, files = make()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (path.parent / name).parent.mkdir(parents=True, exist_ok=True)
            (path.parent / name).write_text(text)
        nbformat.write(nb, str(path))
        if args.execute:
            subprocess.run(
                [
                    str(args.execute),
                    "-m",
                    "jupyter",
                    "nbconvert",
                    "--to",
                    "notebook",
                    "--execute",
                    "--inplace",
                    path.name,
                ],
                cwd=path.parent,
                check=True,
            )


if __name__ == "__main__":
    main()
