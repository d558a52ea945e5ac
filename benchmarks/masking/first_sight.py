"""What the learned password scorer would have added to the rules a split first met.

    python benchmarks/masking/first_sight.py --split nineteenth --rules 59322d9

runs the rules of revision ``--rules`` (``server/`` taken from git, without a scorer)
over the split, trains a scorer on the splits before it only
(``train_password_model.py``), lets it score what those rules left, and prints
password recall and precision, and the overall figures, of the rules alone and of
both. Since neither the rules of that revision nor the scorer saw the split, this is
the split's first-sight measurement of the two together. (The look-alike texts the
scorer also learns from were collected later, from the tests; they hold no password.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.password_model import PasswordModel
from recalld_server.domain.sensitive.spans import Detection

HERE = Path(__file__).parent
ROOT = HERE.parents[1]

# Run under the old revision's `server/`: its Detector has no scorer, or is told to
# leave it out.
_DUMP = """
import json, sys
from recalld_server.domain.sensitive.detection import Detector
try:
    detector = Detector(password_model=None)
except TypeError:
    detector = Detector()
texts = json.load(sys.stdin)
json.dump([[(d.category.value, d.start, d.end) for d in detector.find(t)] for t in texts],
          sys.stdout)
"""


def _sibling(name: str) -> Any:
    """Another script of this folder, as a module (they are run as files, not imported)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rules_at(revision: str, texts: list[str]) -> list[list[Detection]]:
    archive = subprocess.run(
        ["git", "archive", revision, "server"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tempfile.TemporaryDirectory() as tree:
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        found = subprocess.run(
            [sys.executable, "-c", _DUMP],
            input=json.dumps(texts),
            env={"PYTHONPATH": str(Path(tree) / "server"), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return [[Detection(Category(c), a, b) for c, a, b in line] for line in json.loads(found)]


def _figures(
    lines: list[tuple[str, list[tuple[str, int, int]]]],
    found: list[list[Detection]],
    covered: Callable[[str, int, int, list[Detection]], bool],
) -> dict[str, float]:
    labelled = caught = detections = correct = 0
    passwords = passwords_caught = password_detections = passwords_correct = 0
    for (text, gold), mine in zip(lines, found, strict=True):
        for category, start, end in gold:
            same = [d for d in mine if d.category.value == category]
            hit = covered(text, start, end, same)
            labelled += 1
            caught += hit
            if category == "password":
                passwords += 1
                passwords_caught += hit
        for d in mine:
            right = any(
                c == d.category.value and d.start < end and start < d.end for c, start, end in gold
            )
            detections += 1
            correct += right
            if d.category is Category.PASSWORD:
                password_detections += 1
                passwords_correct += right
    return {
        "recall": round(caught / labelled, 3),
        "precision": round(correct / max(detections, 1), 3),
        "password_recall": round(passwords_caught / passwords, 3),
        "password_precision": round(passwords_correct / max(password_detections, 1), 3),
        "password_detections": password_detections,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", required=True)
    parser.add_argument("--rules", required=True, help="the revision whose rules the split met")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    trainer = _sibling("train_password_model")
    measure = _sibling("measure")
    lines = trainer.labelled(args.split)
    rules = _rules_at(args.rules, [text for text, _ in lines])
    splits = trainer.splits_in_order()
    before = splits[: splits.index(args.split)]
    weights, bias = trainer.fit(*trainer.examples(before))
    model = PasswordModel(weights, bias)
    both = [
        [*found, *model.passwords(text, found)]
        for (text, _), found in zip(lines, rules, strict=True)
    ]
    figures = {
        "split": args.split,
        "rules": args.rules,
        "scorer_revision": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "scorer_trained_on": before,
        "rules_alone": _figures(lines, rules, measure.covered),
        "rules_and_scorer": _figures(lines, both, measure.covered),
    }
    text = json.dumps(figures, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
