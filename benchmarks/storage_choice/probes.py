"""Ad-hoc probes on a database left by ``bench_storage.py --keep`` (filter_only layout).

1. Dense search cost by filter (hot path, user only, tenant only, none): does the
   filter's selectivity change the cost?
2. Filter correctness with ground truth from the generator: hot-path filter counts,
   ``tenant and user`` counts, ``user_id == U and id in [...]`` vs ids first, and
   ``not (id in [...])``.

Run it with the interpreter of the version that wrote the database, e.g.::

    python3 benchmarks/storage_choice/bench_storage.py --rows 100000 --layout filter_only \
        --python /tmp/venv-lite25/bin/python --ops get --rounds 1 --op-seconds 1 \
        --verify 0 --filter-order 0 --keep --workdir /tmp/bs_keep --out /tmp/bs_keep/r.json
    /tmp/venv-lite25/bin/python benchmarks/storage_choice/probes.py \
        /tmp/bs_keep/2.5.1_filter_only/bench.db --out probes.json
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:
    from benchmarks.storage_choice.storage_common import lite_version, short_err
    from benchmarks.storage_choice.storage_data import DataGen
    from benchmarks.storage_choice.storage_schema import COLLECTION, OUTPUT_FIELDS, hot_filter
else:  # run as a script: sys.path[0] is this folder
    from storage_common import lite_version, short_err
    from storage_data import DataGen
    from storage_schema import COLLECTION, OUTPUT_FIELDS, hot_filter


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--users-per-tenant", type=int, default=100)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--out", help="also write the JSON here (the 2.5.1 engine logs to stdout)")
    args = ap.parse_args()

    from pymilvus import MilvusClient

    gen = DataGen(args.seed, args.rows, args.tenants, args.users_per_tenant)
    pool = gen.queries(args.queries)
    c = MilvusClient(args.db)
    c.load_collection(COLLECTION)
    out: dict[str, Any] = {"version": lite_version(), "db": args.db}

    # 1. dense search cost by filter, interleaved
    cases: dict[str, Callable[[dict[str, Any]], str]] = {
        "hot_filter": lambda q: hot_filter(q["tenant"], q["user"]),
        "user_only": lambda q: f'user_id == "{q["user"]}"',
        "tenant_only": lambda q: f'tenant_id == "{q["tenant"]}"',
        "no_filter": lambda q: "",
    }
    lat: dict[str, list[float]] = {k: [] for k in cases}
    for _rep in range(2):
        for q in pool:
            for k, f in cases.items():
                s = time.perf_counter()
                c.search(
                    COLLECTION,
                    data=[q["vec"]],
                    anns_field="embedding",
                    limit=10,
                    filter=f(q),
                    output_fields=OUTPUT_FIELDS,
                    consistency_level="Strong",
                )
                lat[k].append((time.perf_counter() - s) * 1000)
    out["dense_p50_ms_by_filter"] = {k: round(statistics.median(v), 1) for k, v in lat.items()}

    # 2. filter correctness against the generator's ground truth (rows inserted by the
    # timed ops have other users' ids only through `insert`, so count the generator's rows
    # by id prefix "m")
    per_user = collections.Counter(zip(gen.tenant_of.tolist(), gen.user_of.tolist(), strict=True))
    active = collections.Counter(
        (int(gen.tenant_of[i]), int(gen.user_of[i]))
        for i in range(gen.rows)
        if gen.status_of[i] == 1 and gen.expire_kind[i] != 2
    )
    errors: dict[str, str] = {}

    def count(name: str, flt: str) -> int:
        try:
            return len(
                c.query(
                    COLLECTION,
                    filter=flt,
                    output_fields=["id"],
                    consistency_level="Strong",
                    limit=16000,
                )
            )
        except Exception as e:
            errors[name] = short_err(e)
            return -1

    ok: collections.Counter[str] = collections.Counter()
    for q in pool:
        t = int(q["tenant"][1:])
        u = int(q["user"].split("_u")[1])
        orig = f'id like "m%" and user_id == "{q["user"]}"'
        ids = [
            r["id"]
            for r in c.query(
                COLLECTION, filter=orig, output_fields=["id"], consistency_level="Strong"
            )
        ]
        lst = ", ".join(f'"{i}"' for i in ids)
        tu = f'tenant_id == "{q["tenant"]}" and user_id == "{q["user"]}"'
        checks = {
            "tenant_and_user_count": (f'{tu} and id like "m%"', per_user[(t, u)]),
            "hot_filter_count": (
                f'{hot_filter(q["tenant"], q["user"])} and id like "m%"',
                active[(t, u)],
            ),
            "user_then_ids": (f'user_id == "{q["user"]}" and id in [{lst}]', len(ids)),
            "ids_then_user": (f'id in [{lst}] and user_id == "{q["user"]}"', len(ids)),
            "tenant_user_then_ids": (f"{tu} and id in [{lst}]", len(ids)),
            "tenant_then_not_ids": (f'{tu} and not (id in [{lst}]) and id like "m%"', 0),
        }
        for name, (flt, expected) in checks.items():
            ok[name] += count(name, flt) == expected
    out["correct"] = {k: f"{v}/{len(pool)}" for k, v in ok.items()}
    out["errors"] = errors
    text = json.dumps(out, indent=1, ensure_ascii=False)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
