"""Train the learned password scorer (`domain/sensitive/password_model.py`).

    python benchmarks/masking/train_password_model.py                  # the shipped model
    python benchmarks/masking/train_password_model.py --before nineteenth --out /tmp/m.json
    python benchmarks/masking/measure.py --split nineteenth --password-model /tmp/m.json

Every candidate word of every labelled split (in ``build_labelled.SEEDS`` order, all of
them or those before ``--before``) is an example: a password when it is a labelled
password value (up to one trailing character), otherwise not. The texts of
``data/password_lookalikes.json`` add examples that are never passwords. The model is
an L2-regularised logistic regression, fitted by full-batch Adam with fixed steps, so
the same data always gives the same file. Every example is seen twice: as it is, and
with the features that name a particular word left out (``without_words``), so that
the kinds of cue word and the shape of a value carry a password on their own. Only
features seen in at least two examples are kept. ``--before SPLIT`` gives the model a
split would have met on first sight, which is how the threshold was chosen
(benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from recalld_server.domain.sensitive.password_model import (
    DEFAULT_THRESHOLD,
    candidates,
    features,
    neutralized,
    without_words,
)

DATA = Path(__file__).parent / "data"
SHIPPED = Path(__file__).parents[2] / "server/recalld_server/domain/sensitive/password_model.json"
L2 = 1.0
STEPS = 400
LEARNING_RATE = 0.1
MIN_EXAMPLES = 2


def splits_in_order() -> list[str]:
    sys.path.insert(0, str(DATA))
    spec = importlib.util.spec_from_file_location("build_labelled", DATA / "build_labelled.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.SEEDS)


def _is_password(span: tuple[int, int], start: int, end: int) -> bool:
    # The candidate may leave out one leading or trailing character ("#4410*" -> 4410*).
    a, b = span
    return start >= a and abs(start - a) + abs(end - b) <= 1


def _line_examples(text: str, spans: list[tuple[str, int, int]]) -> Iterator[tuple[set[str], int]]:
    """The examples of one labelled text, seen as the detector sees it.

    At run time the scorer sees every value the rules found as one mark
    (`password_model.neutralized`), so here every labelled value but the candidate's
    own is one mark. Words of no value are seen with all of them marked; the words
    of a password with every other value marked.
    """
    seen, _ = neutralized(text, [(start, end) for _, start, end in spans])
    for start, end in candidates(seen):
        yield features(seen, start, end), 0
    for index, (category, a, b) in enumerate(spans):
        if category != "password":
            continue
        others = [(start, end) for i, (_, start, end) in enumerate(spans) if i != index]
        seen, origin = neutralized(text, others)
        for start, end in candidates(seen):
            original = (origin[start], origin[end - 1] + 1)
            if original[0] < b and a < original[1]:
                yield features(seen, start, end), int(_is_password((a, b), *original))


Labelled = list[tuple[str, list[tuple[str, int, int]]]]
"""Texts with the (category, start, end) of each labelled value."""


def labelled(split: str) -> Labelled:
    """One split's texts and the spans of their values."""
    texts: Labelled = []
    for line in (DATA / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        text = record["text"]
        spans = []
        for span in record["spans"]:
            at = text.index(span["value"])
            spans.append((span["category"], at, at + len(span["value"])))
        texts.append((text, spans))
    return texts


def examples(splits: list[str]) -> tuple[list[set[str]], list[int]]:
    rows: list[set[str]] = []
    labels: list[int] = []
    texts: Labelled = [line for split in splits for line in labelled(split)]
    lookalikes = json.loads((DATA / "password_lookalikes.json").read_text(encoding="utf-8"))
    texts.extend((text, []) for text in lookalikes["texts"])
    for text, spans in texts:
        for row, label in _line_examples(text, spans):
            rows.append(row)
            labels.append(label)
            # Again with no particular word: what the kinds of its cue words and its
            # shape say must make a password on their own, as they must for the words
            # around a password that no split used.
            rows.append(without_words(row))
            labels.append(label)
    return rows, labels


def fit(rows: list[set[str]], labels: list[int]) -> tuple[dict[str, float], float]:
    counts = Counter(f for row in rows for f in row)
    vocabulary = {
        f: i for i, f in enumerate(sorted(f for f, n in counts.items() if n >= MIN_EXAMPLES))
    }
    row_of: list[int] = []
    column_of: list[int] = []
    for r, row in enumerate(rows):
        for f in sorted(row):
            column = vocabulary.get(f)
            if column is not None:
                row_of.append(r)
                column_of.append(column)
    rows_idx = np.array(row_of)
    cols_idx = np.array(column_of)
    y = np.array(labels, dtype=float)
    n = len(labels)
    w = np.zeros(len(vocabulary))
    b = 0.0
    m_w = np.zeros_like(w)
    v_w = np.zeros_like(w)
    m_b = v_b = 0.0
    for step in range(1, STEPS + 1):
        z = np.bincount(rows_idx, weights=w[cols_idx], minlength=n) + b
        error = 1.0 / (1.0 + np.exp(-z)) - y
        grad_w = np.bincount(cols_idx, weights=error[rows_idx], minlength=len(w)) / n + L2 * w / n
        grad_b = float(error.mean())
        m_w = 0.9 * m_w + 0.1 * grad_w
        v_w = 0.999 * v_w + 0.001 * grad_w * grad_w
        w -= LEARNING_RATE * (m_w / (1 - 0.9**step)) / (np.sqrt(v_w / (1 - 0.999**step)) + 1e-8)
        m_b = 0.9 * m_b + 0.1 * grad_b
        v_b = 0.999 * v_b + 0.001 * grad_b * grad_b
        b -= LEARNING_RATE * (m_b / (1 - 0.9**step)) / (np.sqrt(v_b / (1 - 0.999**step)) + 1e-8)
    weights = {f: round(float(w[i]), 4) for f, i in vocabulary.items() if abs(w[i]) >= 0.001}
    return weights, round(b, 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="train only on the splits before this one")
    parser.add_argument("--out", type=Path, default=SHIPPED)
    args = parser.parse_args()
    splits = splits_in_order()
    if args.before:
        splits = splits[: splits.index(args.before)]
    rows, labels = examples(splits)
    weights, bias = fit(rows, labels)
    model = {
        "about": "Logistic weights of recalld's password scorer; "
        "benchmarks/masking/train_password_model.py wrote this file.",
        "trained_on": splits,
        "examples": len(labels),
        "passwords": sum(labels),
        "threshold": DEFAULT_THRESHOLD,
        "bias": bias,
        "weights": dict(sorted(weights.items())),
    }
    args.out.write_text(json.dumps(model, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(
        f"{args.out}: {len(weights)} features from {len(labels)} examples ({sum(labels)} passwords)"
    )


if __name__ == "__main__":
    main()
