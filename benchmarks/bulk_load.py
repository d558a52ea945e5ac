"""Loading memories with their vectors: `recalld import --with-vectors` into a fresh store.

    python -m benchmarks.bulk_load --rows 100000 --out benchmarks/results/bulk-load-<rev>.json

Writes a vectors export of `--rows` synthetic memories (512-d unit vectors, the
bundled model's id, `--users` users over 100 tenants, times spread over a year),
then runs the real command on it twice into a fresh Milvus Lite store (or
`--milvus-uri`): the load, and the same file again (everything already there: the
cost of a resumed or repeated run). Then `recalld export --with-vectors` of the
loaded store, timed, checked equal to the input.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from recalld_server.domain.core.ids import new_id
from recalld_server.embedding.usem import USEM3_MODEL_ID
from recalld_server.maintenance.bulk import BulkHeader, row_to_line
from recalld_server.maintenance.bulk_commands import LITE_BATCH, SERVER_BATCH

DIMENSION = 512
TOPICS = ("tea", "running", "Rust", "Lisbon", "jazz", "chess", "sailing", "ramen")


def _rows(count: int, users: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    start_ms = 1_735_689_600_000  # 2025-01-01
    for i in range(count):
        vector = rng.standard_normal(DIMENSION).astype(np.float32)
        vector /= np.linalg.norm(vector)
        user = i % users
        at = start_ms + i * (365 * 86_400_000 // count)
        content = f"user-{user} {TOPICS[i % len(TOPICS)]} note {i}"
        yield {
            "id": new_id(at),
            "tenant_id": f"tenant-{user % 100}",
            "user_id": f"user-{user}",
            "agent_scope": "",
            "session_id": "",
            "type": 1,
            "tier": 1,
            "status": 1,
            "topic_key": "",
            "content": content,
            "content_hash": f"{i:064x}",
            "importance": 0.5,
            "confidence": 1.0,
            "source": "bulk-bench",
            "tags": [TOPICS[i % len(TOPICS)]],
            "metadata": {},
            "created_at": at,
            "occurred_at": at,
            "updated_at": at,
            "expire_at": 0,
            "valid_to": 0,
            "supersedes_id": "",
            "superseded_by_id": "",
            "version": 1,
            "embedding_model": USEM3_MODEL_ID,
            "last_accessed_at": 0,
            "access_count": 0,
            "expire_explicit": False,
            "embedding": vector,
        }


def _run(*argv: str) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "recalld_server", *argv, "--no-progress"],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:2])} failed: {done.stderr}")
    return seconds, done.stderr


def _du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument(
        "--batch-size", type=int, default=None, help="default: the command's own for the store"
    )
    parser.add_argument("--milvus-uri", default="", help="a Milvus server (default: Lite)")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--out", default="bulk-load.json")
    args = parser.parse_args()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="bulk-load-"))
    work.mkdir(parents=True, exist_ok=True)
    source = work / "source.jsonl"
    started = time.monotonic()
    with source.open("w", encoding="utf-8") as out:
        out.write(BulkHeader(USEM3_MODEL_ID, DIMENSION, args.rows).to_line() + "\n")
        for row in _rows(args.rows, args.users, seed=7):
            out.write(row_to_line(row) + "\n")
    generated_s = time.monotonic() - started
    store = (
        ["--milvus-uri", args.milvus_uri]
        if args.milvus_uri
        else ["--data-dir", str(work / "store")]
    )
    batch = args.batch_size or (SERVER_BATCH if args.milvus_uri else LITE_BATCH)
    flags = ["--with-vectors", *store, *(["--batch-size", str(batch)] if args.batch_size else [])]
    load_s, load_report = _run("import", str(source), *flags)
    again_s, again_report = _run("import", str(source), *flags)
    exported = work / "exported.jsonl"
    export_s, _ = _run("export", "--with-vectors", *store, "-o", str(exported))
    same = exported.read_bytes() == source.read_bytes()
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    report = {
        "revision": revision,
        "rows": args.rows,
        "users": args.users,
        "batch_size": batch,
        "store": args.milvus_uri or "milvus-lite",
        "cpus": os.cpu_count(),
        "file_mb": round(source.stat().st_size / 2**20, 1),
        "generate_s": round(generated_s, 1),
        "import_s": round(load_s, 1),
        "import_rows_per_s": round(args.rows / load_s),
        "import_report": load_report.strip().splitlines(),
        "import_again_s": round(again_s, 1),
        "import_again_rows_per_s": round(args.rows / again_s),
        "import_again_report": again_report.strip().splitlines(),
        "export_s": round(export_s, 1),
        "export_rows_per_s": round(args.rows / export_s),
        "export_equals_input": same,
        "store_mb": None if args.milvus_uri else round(_du_mb(work / "store"), 1),
    }
    print(json.dumps(report, indent=1))
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
