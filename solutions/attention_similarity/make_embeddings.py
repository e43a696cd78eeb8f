"""Generate the synthetic word vectors shipped as data/glove_sample_50d.txt.

The seed notebook loads real 50-dimensional GloVe vectors (glove.6B / wiki-gigaword)
from a pickle on Google Drive.  The course runs offline, so this script writes a
small stand-in file instead.  The vectors are SYNTHETIC: they are not GloVe vectors
and carry no meaning learned from text.  They are random (seeded numpy, so the
file is reproducible bit for bit) plus a few hand-made shared components so that the
similarities are vaguely sensible:

* a "water" direction shared by river, bank and swam (river and bank most strongly),
* a "motion" direction shared by swam, quickly, across and get,
* a "function word" direction shared by i, the, to, other and across.

The file uses the real GloVe *text* format: one word per line followed by its 50
values separated by single spaces, so the notebook's loader would read a real
``glove.6B.50d.txt`` just the same.

Run:  python make_embeddings.py      (writes data/glove_sample_50d.txt beside this file)
"""

from pathlib import Path

import numpy as np

DIM = 50
SEED = 5202  # the course code (AME 5202)
SENTENCE = "i swam quickly across the river to get to the other bank"
OUT = Path(__file__).resolve().parent / "data" / "glove_sample_50d.txt"

# weight of each shared direction in each word's vector
COMPONENTS = {
    "water": {"river": 1.0, "bank": 0.9, "swam": 0.6},
    "motion": {"swam": 0.8, "quickly": 0.7, "across": 0.6, "get": 0.5},
    "function": {"i": 0.6, "the": 0.9, "to": 0.9, "other": 0.5, "across": 0.4},
}


def unique_words(sentence: str) -> list[str]:
    words: list[str] = []
    for word in sentence.split():
        if word not in words:
            words.append(word)
    return words


def make_vectors(seed: int = SEED) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    words = unique_words(SENTENCE)
    # per-word noise, roughly the spread of real 50-d GloVe values
    vectors = {word: rng.normal(0.0, 0.4, DIM) for word in words}
    for name in COMPONENTS:  # dict order is fixed, so the draws are too
        direction = rng.normal(0.0, 1.0, DIM)
        direction *= 2.0 / np.linalg.norm(direction)  # norm 2
        for word, weight in COMPONENTS[name].items():
            vectors[word] = vectors[word] + weight * direction
    return {word: np.round(vec, 5) for word, vec in vectors.items()}


def write_glove_text(vectors: dict[str, np.ndarray], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for word, vec in vectors.items():
            f.write(word + " " + " ".join(f"{v:.5f}" for v in vec) + "\n")


if __name__ == "__main__":
    vecs = make_vectors()
    write_glove_text(vecs, OUT)
    print(f"wrote {len(vecs)} synthetic {DIM}-d vectors to {OUT}")
