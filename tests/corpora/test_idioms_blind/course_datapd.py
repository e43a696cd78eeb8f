"""Data with pandas: in-place columns, cleaning, groupby, sampling with seeds, printing, plots."""

CELLS = [
    (
        "md",
        None,
        "# Assignment 2: a small table of people\n\nAll functions take a DataFrame like the one `make_people()` returns.",
    ),
    (
        "code",
        None,
        """import numpy as np
import pandas as pd
import matplotlib.pyplot as plt


def make_people():
    return pd.DataFrame({
        "name": ["Ana", "Ben", "Cy", "Dee", "Eve", "Fay"],
        "city": ["Oslo", "Rome", "Oslo", "Lima", "Rome", "Oslo"],
        "height_cm": [165, 180, np.nan, 170, 158, 175],
        "weight_kg": [60, 85, 70, np.nan, 50, 68],
        "age": [23, 35, 41, 29, 52, 31],
    })

people = make_people()
people.head()""",
    ),
    (
        "sol",
        "sol_columns",
        '''def add_bmi(df):
    """Add a column 'bmi' = weight / (height in metres)**2 to df, in place. Return nothing."""
    ### BEGIN SOLUTION
    df["bmi"] = df["weight_kg"] / (df["height_cm"] / 100) ** 2
    ### END SOLUTION


def drop_incomplete(df):
    """A NEW DataFrame without the rows that have a missing value, index 0..n-1. Leave df alone."""
    ### BEGIN SOLUTION
    return df.dropna().reset_index(drop=True)
    ### END SOLUTION''',
    ),
    (
        "test",
        "test_bmi",
        2,
        """df = make_people()
add_bmi(df)
assert "bmi" in df.columns, "add_bmi should add a column to the DataFrame it is given"
assert hasattr(df, "bmi")
assert np.isclose(df.loc[0, "bmi"], 60 / 1.65**2)
assert df["bmi"].isna().sum() == 2
print(df)""",
    ),
    (
        "test",
        "test_drop",
        1,
        """df = make_people()
before = df.copy()
clean = drop_incomplete(df)
pd.testing.assert_frame_equal(df, before)  # untouched
assert type(clean).__name__ == "DataFrame"
assert len(clean) == 4
assert list(clean.index) == [0, 1, 2, 3]
assert clean is not df""",
    ),
    (
        "sol",
        "sol_group",
        '''def mean_age_by_city(df):
    """A Series: mean age per city (index: city, sorted). No loops."""
    ### BEGIN SOLUTION
    return df.groupby("city")["age"].mean()
    ### END SOLUTION


def oldest(df, n=2):
    """The n oldest people (rows of df), oldest first."""
    ### BEGIN SOLUTION
    return df.sort_values("age", ascending=False).head(n)
    ### END SOLUTION


def city_counts(df):
    """A dict {city: number of people}."""
    ### BEGIN SOLUTION
    return df["city"].value_counts().to_dict()
    ### END SOLUTION''',
    ),
    (
        "test",
        "test_groupby",
        2,
        """expected = pd.Series({"Lima": 29.0, "Oslo": 95 / 3, "Rome": 43.5}, name="age")
expected.index.name = "city"
got = mean_age_by_city(make_people())
pd.testing.assert_series_equal(got, expected)""",
    ),
    (
        "test",
        "test_oldest",
        1,
        """top = oldest(make_people(), 3)
assert list(top["name"]) == ["Eve", "Cy", "Ben"]
pd.testing.assert_frame_equal(top.reset_index(drop=True), make_people().iloc[[4, 2, 1]].reset_index(drop=True))
import inspect
assert inspect.signature(oldest).parameters["n"].default == 2
assert len(oldest(make_people())) == 2""",
    ),
    (
        "test",
        "test_counts",
        1,
        """counts = city_counts(make_people())
assert isinstance(counts, dict), type(counts).__name__
assert counts == {"Oslo": 3, "Rome": 2, "Lima": 1}
for city, n in counts.items():
    assert n == (make_people()["city"] == city).sum(), city""",
    ),
    (
        "sol",
        "sol_io",
        '''def sample_people(df, k):
    """k random rows. Use numpy's global random state (the caller seeds it): no random_state."""
    ### BEGIN SOLUTION
    return df.sample(k)
    ### END SOLUTION


def describe(df):
    """Print one line per city, sorted: '<city>: <count> people, mean age <mean, 1 decimal>'."""
    ### BEGIN SOLUTION
    for city, group in df.groupby("city"):
        print(f"{city}: {len(group)} people, mean age {group['age'].mean():.1f}")
    ### END SOLUTION


def plot_heights(df):
    """Bar chart of height by name, y label 'height (cm)'; return the Axes."""
    ### BEGIN SOLUTION
    fig, ax = plt.subplots()
    ax.bar(df["name"], df["height_cm"])
    ax.set_ylabel("height (cm)")
    return ax
    ### END SOLUTION''',
    ),
    (
        "test",
        "test_sample",
        1,
        """np.random.seed(7)
s1 = sample_people(make_people(), 3)
np.random.seed(7)
s2 = make_people().sample(3)
pd.testing.assert_frame_equal(s1, s2)
np.random.seed(7)
s3 = sample_people(make_people(), 3)
assert s3.equals(s1)""",
    ),
    (
        "test",
        "test_describe",
        1,
        """import io
from contextlib import redirect_stdout
f = io.StringIO()
with redirect_stdout(f):
    result = describe(make_people())
lines = f.getvalue().strip().splitlines()
print(lines)
assert result is None
assert lines[0] == "Lima: 1 people, mean age 29.0"
assert "Oslo: 3 people, mean age 31.7" in lines
assert len(lines) == 3""",
    ),
    (
        "test",
        "test_plot",
        1,
        """import matplotlib
ax = plot_heights(make_people())
assert isinstance(ax, matplotlib.axes.Axes)
assert ax.get_ylabel() == "height (cm)"
assert len(ax.patches) == 6
ax""",
    ),
    (
        "test",
        "test_partial",
        3,
        """points = 0
df = make_people()
try:
    add_bmi(df)
    if "bmi" in df:
        points += 1
except Exception as err:
    print("add_bmi:", err)
try:
    if city_counts(df) == {"Oslo": 3, "Rome": 2, "Lima": 1}:
        points += 1
except Exception as err:
    print("city_counts:", err)
try:
    if len(oldest(df)) == 2:
        points += 1
except Exception as err:
    print("oldest:", err)
points""",
    ),
    (
        "test",
        "test_source",
        1,
        '''import inspect
src = inspect.getsource(mean_age_by_city)
assert "groupby" in src, "use groupby"
assert "for " not in src, "no loops"''',
    ),
    (
        "test",
        "test_summary",
        1,
        """summary = f"{len(drop_incomplete(make_people()))} complete rows out of {len(make_people())}"
summary""",
    ),
]

SUBMISSIONS = {
    "early": {
        "edits": [
            {
                "find": r'df\["weight_kg"\] / \(df\["height_cm"\] / 100\) \*\* 2',
                "replace": 'df["weight_kg"] / df["height_cm"] ** 2',
                "cell": "sol_columns",
            }
        ]
    },
    "late": {
        "edits": [
            {
                "find": r'return df\.groupby\("city"\)\["age"\]\.mean\(\)',
                "cell": "sol_group",
                "replace": """out = {}
    for city in sorted(df["city"].unique()):
        out[city] = df[df["city"] == city]["age"].mean()
    s = pd.Series(out, name="age")
    s.index.name = "city"
    return s""",
            }
        ]
    },
    "variant": {
        "edits": [
            {
                "find": r"(?s)\A.*\Z",
                "cell": "sol_columns",
                "replace": """def add_bmi(df):
    height_m = df.height_cm / 100
    df.insert(len(df.columns), "bmi", df.weight_kg / height_m / height_m)

def drop_incomplete(df):
    mask = df.notna().all(axis=1)
    return df[mask].reset_index(drop=True)""",
            },
            {
                "find": r"(?s)\A.*\Z",
                "cell": "sol_group",
                "replace": """def mean_age_by_city(df):
    return df.groupby("city").age.agg("mean")

def oldest(df, n=2):
    return df.nlargest(n, "age")

def city_counts(df):
    counts = {}
    for c in df["city"]:
        counts[c] = counts.get(c, 0) + 1
    return counts""",
            },
            {
                "find": r"(?s)\A.*\Z",
                "cell": "sol_io",
                "replace": """def sample_people(df, k):
    rows = np.random.permutation(len(df))[:k]
    return df.iloc[rows]

def describe(df):
    stats = df.groupby("city")["age"].agg(["count", "mean"])
    for city, row in stats.iterrows():
        print("%s: %d people, mean age %.1f" % (city, row["count"], row["mean"]))

def plot_heights(df):
    ax = df.plot.bar(x="name", y="height_cm", legend=False)
    ax.set_ylabel("height (cm)")
    return ax""",
            },
        ]
    },
    "swap": {
        "edits": [
            {
                "find": r'df\["bmi"\] = df\["weight_kg"\] / \(df\["height_cm"\] / 100\) \*\* 2',
                "cell": "sol_columns",
                "replace": 'return df.assign(bmi=df["weight_kg"] / (df["height_cm"] / 100) ** 2)',
            },
            {
                "find": r"return df\.dropna\(\)\.reset_index\(drop=True\)",
                "cell": "sol_columns",
                "replace": "df.dropna(inplace=True)\n    df.reset_index(drop=True, inplace=True)\n    return df",
            },
        ]
    },
    "warns": {
        "edits": [
            {
                "find": r'return df\.groupby\("city"\)\["age"\]\.mean\(\)',
                "cell": "sol_group",
                "replace": 'return df.groupby("city")["age"].agg(np.mean)',
            },
        ]
    },
}
