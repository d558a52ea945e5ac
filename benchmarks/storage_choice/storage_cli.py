"""The command line: every flag of the study, its default and its help text."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:
    from benchmarks.storage_choice.storage_ops import OPS
    from benchmarks.storage_choice.storage_schema import LAYOUTS, SERVER_INDEXES
else:  # run as a script: sys.path[0] is this folder
    from storage_ops import OPS
    from storage_schema import LAYOUTS, SERVER_INDEXES


def build_parser(description: str | None) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--users-per-tenant", type=int, default=100)
    ap.add_argument("--layout", nargs="+", default=list(LAYOUTS), choices=[*LAYOUTS, "all"])
    ap.add_argument(
        "--python",
        nargs="+",
        default=[sys.executable],
        help="interpreters (one per venv / milvus-lite version) to compare",
    )
    ap.add_argument(
        "--skip", nargs="*", default=[], help="variants to leave out, e.g. 2.5.1/partition_key"
    )
    ap.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    ap.add_argument("--concurrency", nargs="+", type=int, default=[1, 8])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--op-seconds",
        type=float,
        default=3.0,
        help="wall time per (op, concurrency, variant) in each round",
    )
    ap.add_argument(
        "--verify",
        type=int,
        default=30,
        help="compare the ids of this many dense/BM25 searches across variants",
    )
    ap.add_argument(
        "--filter-order",
        type=int,
        default=40,
        help="queries for the `<field> and id in [...]` correctness check (0: skip)",
    )
    ap.add_argument(
        "--tenant-index",
        action="store_true",
        help="also give tenant_id an INVERTED scalar index (as user_id has)",
    )
    ap.add_argument(
        "--dense-only",
        action="store_true",
        help="schema without analyzer, sparse field, BM25 function and scalar index, on every "
        "variant (what a Milvus 2.3 server can hold); op bm25 is then left out",
    )
    ap.add_argument(
        "--server-uri",
        help="also run variants on this Milvus server (e.g. http://127.0.0.1:19530), one "
        "collection per layout",
    )
    ap.add_argument(
        "--server-layout",
        nargs="+",
        default=["partition_key", "filter_only"],
        choices=LAYOUTS,
        help="layouts to run on --server-uri",
    )
    ap.add_argument(
        "--server-index",
        nargs="+",
        default=["FLAT"],
        choices=list(SERVER_INDEXES),
        help="dense index(es) of the server variants (one variant per layout x index): FLAT; "
        "IVF_FLAT nlist 1024, nprobe 32; HNSW M 16, efConstruction 128, ef 64",
    )
    ap.add_argument(
        "--prefetch",
        action="store_true",
        help="generate the next load batch in a thread while the current one is inserted",
    )
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="server variants: time the ops on the collections an earlier run left there "
        "(no load; the load figures are those of that run)",
    )
    ap.add_argument(
        "--parallel-load",
        action="store_true",
        help="load all variants at the same time (server runs: the client is the bottleneck)",
    )
    ap.add_argument(
        "--rounds-deadline",
        metavar="HH:MM",
        help="start no further round after this UTC time (the rounds run so far are kept)",
    )
    ap.add_argument(
        "--index-timeout",
        type=float,
        default=1800.0,
        help="seconds to wait after a server load for the index to be built and served",
    )
    ap.add_argument(
        "--server-python",
        default=sys.executable,
        help="interpreter (pymilvus) for the server variants' workers",
    )
    ap.add_argument("--server-data", default="", help="the server's data dir (disk figures)")
    ap.add_argument("--server-pid", type=int, default=0, help="the server's pid (RSS figures)")
    ap.add_argument("--checks", action="store_true", help="also run the feature checks")
    ap.add_argument("--checks-only", action="store_true")
    ap.add_argument("--partition-probe", type=int, default=1100)
    ap.add_argument(
        "--cooldown",
        type=float,
        default=15.0,
        help="idle seconds between variant loads (thermal throttling)",
    )
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--workdir", default="/tmp/bench_storage")
    ap.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    ap.add_argument("--out", default="results.json")
    ap.add_argument("--report", metavar="JSON", help="print the tables of an earlier run")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    return ap
