"""Calibrates the near-duplicate threshold of an embedding model.

Run: python benchmarks/calibration/calibrate_near_duplicates.py [--model MODEL_ID]
(default: the default model; `recalld reembed --list` names the others).
Prints every pair's cosine similarity and, for candidate thresholds, how many
true duplicates are caught and how many distinct facts would be wrongly merged.
A false merge loses information (a change of mind swallowed as a duplicate), a
missed duplicate only stores a redundant row, so the threshold is the lowest
one with no false merge on this set, plus a margin.
"""

from __future__ import annotations

import argparse

import numpy as np

from recalld_server.calibration.dataset import load_near_duplicates
from recalld_server.domain.core.text import salient_tokens
from recalld_server.domain.rules.wording import differ_in_detail, script
from recalld_server.embedding.registry import DEFAULT_MODEL_ID, model_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL_ID)
    spec = model_spec(parser.parse_args().model)
    pairs = load_near_duplicates()
    model = spec.load()
    texts = [t for p in pairs for t in (p["a"], p["b"])]
    vectors = model.encode_blocking(texts)
    sims = [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]
    for pair, sim in sorted(zip(pairs, sims, strict=True), key=lambda x: -x[1]):
        label = "DUP " if pair["duplicate"] else "diff"
        print(f"{sim:6.3f} {label} {pair['kind']:<15} {pair['a']} | {pair['b']}")
    dup = np.array([p["duplicate"] for p in pairs])
    s = np.array(sims)
    same_salient = np.array([salient_tokens(p["a"]) == salient_tokens(p["b"]) for p in pairs])
    worded = np.array(
        [not differ_in_detail(p["a"], p["b"]) and script(p["a"]) == script(p["b"]) for p in pairs]
    )
    print(
        "\nthreshold  caught  false_merges  | salient-token guard: caught  false"
        "  | + wording rules (the server's): caught  false"
    )
    for threshold in (0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.93, 0.95, 0.97):
        hit = s >= threshold
        guarded = hit & same_salient
        full = guarded & worded
        print(
            f"{threshold:9.2f}  {int((hit & dup).sum()):>3}/{int(dup.sum())}  "
            f"{int((hit & ~dup).sum()):>12}  | {int((guarded & dup).sum()):>26}/{int(dup.sum())}"
            f"  {int((guarded & ~dup).sum()):>5}"
            f"  | {int((full & dup).sum()):>37}/{int(dup.sum())}  {int((full & ~dup).sum()):>5}"
        )
    unguarded = s[~dup & same_salient]
    print(
        f"\nhighest non-duplicate similarity: {s[~dup].max():.3f}; "
        f"without a differing number/date/identifier: {unguarded.max():.3f}"
    )


if __name__ == "__main__":
    main()
