"""Precision and recall of the sensitive-data detector on the labelled bilingual set.

    python benchmarks/masking/measure.py                 # the held-out test split
    python benchmarks/masking/measure.py --split dev -v  # the tuning split, with misses

A labelled value counts as caught when detections of its category cover every letter
and digit of it (a trailing "!" left outside the mask is still caught; half a card
number is not); `masked` counts it caught by a detection of any category, which is
what matters for privacy. A detection is correct when it overlaps a labelled value of
its category. The set was written independently of the rules (data/build_labelled.py);
the rules were tuned on dev only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.detection import Detection, Detector
from recalld_server.domain.sensitive.password_model import PasswordModel

DATA = Path(__file__).parent / "data"
PRECISION = Path(__file__).parents[2] / "server/recalld_server/calibration/data"


def _spans(text: str, labels: list[dict[str, str]]) -> list[tuple[str, int, int]]:
    spans = []
    for label in labels:
        start = text.index(label["value"])
        spans.append((label["category"], start, start + len(label["value"])))
    return spans


def covered(text: str, start: int, end: int, detections: list[Detection]) -> bool:
    """Whether detections cover every letter and digit of `text[start:end]`."""
    needed = {i for i in range(start, end) if text[i].isalnum()}
    for d in detections:
        needed -= set(range(d.start, d.end))
    return not needed


def measure(split: str, verbose: bool, password_model: str = "shipped") -> dict[str, Any]:
    lines = [json.loads(x) for x in (DATA / f"{split}.jsonl").read_text().splitlines() if x]
    if password_model == "shipped":
        detector = Detector()
    elif password_model == "none":
        detector = Detector(password_model=None)
    else:
        detector = Detector(PasswordModel.from_json(Path(password_model).read_text()))
    truth: Counter[str] = Counter()
    caught: Counter[str] = Counter()
    masked: Counter[str] = Counter()
    found: Counter[str] = Counter()
    correct: Counter[str] = Counter()
    negative_lines = flagged_negatives = 0
    elapsed = 0.0
    for line in lines:
        text = line["text"]
        gold = _spans(text, line["spans"])
        began = time.perf_counter()
        detections = detector.find(text)
        elapsed += time.perf_counter() - began
        if not gold:
            negative_lines += 1
            flagged_negatives += bool(detections)
        for category, start, end in gold:
            truth[category] += 1
            same = [d for d in detections if d.category.value == category]
            hit = covered(text, start, end, same)
            caught[category] += hit
            masked[category] += covered(text, start, end, detections)
            if verbose and not hit:
                print(f"MISS {category}: {text[start:end]!r} in {text!r}", file=sys.stderr)
        for d in detections:
            found[d.category.value] += 1
            ok = any(
                c == d.category.value and d.start < end and start < d.end for c, start, end in gold
            )
            correct[d.category.value] += ok
            if verbose and not ok:
                print(
                    f"FALSE {d.category.value}: {text[d.start : d.end]!r} in {text!r}",
                    file=sys.stderr,
                )
    per_category = {
        category.value: {
            "labelled": truth[category.value],
            "recall": _ratio(caught[category.value], truth[category.value]),
            "masked": _ratio(masked[category.value], truth[category.value]),
            "detections": found[category.value],
            "precision": _ratio(correct[category.value], found[category.value]),
        }
        for category in Category
    }
    return {
        "split": split,
        "revision": _revision(),
        "lines": len(lines),
        "negative_lines": negative_lines,
        "negative_lines_flagged": flagged_negatives,
        "overall": {
            "recall": _ratio(sum(caught.values()), sum(truth.values())),
            "precision": _ratio(sum(correct.values()), sum(found.values())),
            "labelled": sum(truth.values()),
            "detections": sum(found.values()),
        },
        "per_category": per_category,
        "mean_us_per_line": round(elapsed / len(lines) * 1e6, 1),
        "mean_us_per_ordinary_memory": _ordinary_cost(detector),
    }


def _ordinary_cost(detector: Detector) -> float:
    """Detection time per memory of the precision set (ordinary memories, few secrets)."""
    users = json.loads((PRECISION / "memories.json").read_text())["users"]
    texts = [m["content"] for user in users for m in user["memories"]]
    detector.find(texts[0])
    began = time.perf_counter()
    for _ in range(3):
        for text in texts:
            detector.find(text)
    return round((time.perf_counter() - began) / (3 * len(texts)) * 1e6, 1)


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def _revision() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--split",
        # Every split built beside this file (data/build_labelled.py writes them).
        choices=sorted(path.stem for path in DATA.glob("*.jsonl")),
        default="test",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print misses and false hits")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    parser.add_argument(
        "--password-model",
        default="shipped",
        help="the learned password scorer: shipped, none (the rules alone), or a JSON file "
        "from train_password_model.py",
    )
    args = parser.parse_args()
    figures = measure(args.split, args.verbose, args.password_model)
    figures["password_model"] = args.password_model
    text = json.dumps(figures, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
