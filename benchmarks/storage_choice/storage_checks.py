"""The functional checks (`--checks`, `--checks-only`), run in a worker per interpreter.

Partition key filters; partition-per-tenant insert/search/query/delete (by ids, by filter
with and without `partition_name`), release/drop partition; inserting into a missing
partition; upsert on a collection with a BM25 function (with and without
`partition_name`); creating `--partition-probe` partitions in a scratch collection.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:
    from benchmarks.storage_choice.storage_common import jsonable, lite_version, short_err
    from benchmarks.storage_choice.storage_data import DataGen, partition_name, tenant_name
    from benchmarks.storage_choice.storage_schema import COLLECTION, create_collection, hot_filter
else:  # run as a script: sys.path[0] is this folder
    from storage_common import jsonable, lite_version, short_err
    from storage_data import DataGen, partition_name, tenant_name
    from storage_schema import COLLECTION, create_collection, hot_filter


def run_checks(cfg: dict[str, Any]) -> dict[str, Any]:
    from pymilvus import MilvusClient

    base = cfg["dbdir"]
    out: dict[str, Any] = {"version": lite_version()}
    gen = DataGen(cfg["seed"], 400, 4, 5)

    def step(name: str, res: dict[str, Any], fn: Callable[[], Any]) -> Any:
        try:
            v = fn()
            res[name] = {"ok": True, "value": jsonable(v)}
            return v
        except Exception as e:
            res[name] = {"ok": False, "error": short_err(e)}
            return None

    def rows_for_tenant(t: int) -> list[dict[str, Any]]:
        return gen.rows_for(gen.rows_by_tenant[t])

    q_t0 = gen.queries(1)[0]
    t0name = tenant_name(0)
    u_any = rows_for_tenant(0)[0]["user_id"]

    def dense_filter(client: Any, flt: str, **kw: Any) -> list[str]:
        r = client.search(
            COLLECTION,
            data=[q_t0["vec"]],
            anns_field="embedding",
            limit=50,
            filter=flt,
            output_fields=["id", "tenant_id"],
            consistency_level="Strong",
            **kw,
        )
        return [*sorted({h["tenant_id"] for h in r[0]}), f"hits={len(r[0])}"]

    # 1. partition key layout ------------------------------------------------------------
    res: dict[str, Any] = {}
    out["partition_key"] = res
    c = MilvusClient(os.path.join(base, "pk.db"))
    step("create", res, lambda: create_collection(c, COLLECTION, "partition_key"))
    step(
        "insert",
        res,
        lambda: sum(c.insert(COLLECTION, rows_for_tenant(t))["insert_count"] for t in range(4)),
    )
    step("flush", res, lambda: c.flush(COLLECTION))
    step("list_partitions", res, lambda: len(c.list_partitions(COLLECTION)))
    step("search_filter_tenant_only", res, lambda: dense_filter(c, f'tenant_id == "{t0name}"'))
    step("search_filter_hot_path", res, lambda: dense_filter(c, hot_filter(t0name, u_any)))
    step("search_filter_without_tenant", res, lambda: dense_filter(c, f'user_id == "{u_any}"'))
    step(
        "bm25_filter_tenant",
        res,
        lambda: len(
            c.search(
                COLLECTION,
                data=["咖啡"],
                anns_field="sparse",
                limit=10,
                filter=f'tenant_id == "{t0name}"',
                output_fields=["id"],
                consistency_level="Strong",
            )[0]
        ),
    )
    step(
        "query_filter_tenant",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'tenant_id == "{t0name}"',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "delete_filter_tenant",
        res,
        lambda: c.delete(COLLECTION, filter=f'tenant_id == "{tenant_name(3)}"'),
    )
    step(
        "count_after_delete",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter='id != ""',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    with contextlib.suppress(Exception):
        c.close()

    # 2. partition per tenant ------------------------------------------------------------
    res = {}
    out["partition_per_tenant"] = res
    c = MilvusClient(os.path.join(base, "ppt.db"))
    step("create", res, lambda: create_collection(c, COLLECTION, "partition_per_tenant"))
    step(
        "create_partitions",
        res,
        lambda: (
            [c.create_partition(COLLECTION, partition_name(tenant_name(t))) for t in range(4)]
            and len(c.list_partitions(COLLECTION))
        ),
    )
    step(
        "insert",
        res,
        lambda: sum(
            c.insert(COLLECTION, rows_for_tenant(t), partition_name=partition_name(tenant_name(t)))[
                "insert_count"
            ]
            for t in range(4)
        ),
    )
    step(
        "insert_into_missing_partition",
        res,
        lambda: c.insert(
            COLLECTION,
            [dict(rows_for_tenant(0)[0], id="missingpart0001")],
            partition_name="p_does_not_exist",
        )["insert_count"],
    )
    step(
        "search_missing_partition",
        res,
        lambda: dense_filter(c, 'id != ""', partition_names=["p_does_not_exist"]),
    )
    with contextlib.suppress(Exception):
        c.delete(COLLECTION, ids=["missingpart0001"])
    # no flush: read-your-writes at Strong
    step(
        "search_before_flush_tenant_partition",
        res,
        lambda: dense_filter(
            c, f'tenant_id == "{t0name}"', partition_names=[partition_name(t0name)]
        ),
    )
    step("flush", res, lambda: c.flush(COLLECTION))
    step(
        "search_partition_names",
        res,
        lambda: dense_filter(
            c, hot_filter(t0name, u_any), partition_names=[partition_name(t0name)]
        ),
    )
    step(
        "search_partition_wrong_tenant_filter",
        res,
        lambda: dense_filter(
            c, f'tenant_id == "{tenant_name(1)}"', partition_names=[partition_name(t0name)]
        ),
    )
    step(
        "bm25_partition_names",
        res,
        lambda: len(
            c.search(
                COLLECTION,
                data=["咖啡"],
                anns_field="sparse",
                limit=10,
                filter=f'tenant_id == "{t0name}"',
                output_fields=["id"],
                partition_names=[partition_name(t0name)],
                consistency_level="Strong",
            )[0]
        ),
    )
    step(
        "query_partition_names",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'tenant_id == "{t0name}"',
                output_fields=["id"],
                partition_names=[partition_name(t0name)],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    ids_t1 = [r["id"] for r in rows_for_tenant(1)][:5]
    step(
        "delete_ids_partition_name",
        res,
        lambda: c.delete(COLLECTION, ids=ids_t1, partition_name=partition_name(tenant_name(1))),
    )
    step(
        "get_deleted_ids",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f"id in {json.dumps(ids_t1)}",
                output_fields=["id"],
                consistency_level="Strong",
            )
        ),
    )
    u_t2 = rows_for_tenant(2)[0]["user_id"]
    step(
        "count_user_t2_before",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'user_id == "{u_t2}"',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "delete_filter_partition_name",
        res,
        lambda: c.delete(
            COLLECTION,
            filter=f'tenant_id == "{tenant_name(2)}" and user_id == "{u_t2}"',
            partition_name=partition_name(tenant_name(2)),
        ),
    )
    step(
        "count_user_t2_after",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'user_id == "{u_t2}"',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "delete_filter_wrong_partition",
        res,
        lambda: c.delete(
            COLLECTION,
            filter=f'tenant_id == "{tenant_name(2)}"',
            partition_name=partition_name(tenant_name(0)),
        ),
    )
    step(
        "count_t2_after_wrong_partition_delete",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'tenant_id == "{tenant_name(2)}"',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "delete_filter_no_partition",
        res,
        lambda: c.delete(COLLECTION, filter=f'tenant_id == "{tenant_name(2)}"'),
    )
    step(
        "count_t2_after_delete",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'tenant_id == "{tenant_name(2)}"',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "release_partition",
        res,
        lambda: c.release_partitions(COLLECTION, [partition_name(tenant_name(3))]),
    )
    step(
        "drop_partition", res, lambda: c.drop_partition(COLLECTION, partition_name(tenant_name(3)))
    )
    step(
        "count_after_drop",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter='id != ""',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "search_after_drop_other_tenant",
        res,
        lambda: dense_filter(
            c, f'tenant_id == "{t0name}"', partition_names=[partition_name(t0name)]
        ),
    )

    # 3. upsert with a BM25 function ------------------------------------------------------
    res = {}
    out["upsert_bm25"] = res
    row = rows_for_tenant(0)[0]
    new = dict(row)
    new["content"] = "我喜欢喝茶 upsertmarker 乌龙茶"
    new["version"] = 2

    def copies(where: str) -> Callable[[], Any]:
        kw = {"partition_names": [partition_name(t0name)]} if where == "tenant_partition" else {}
        return lambda: [
            r["version"]
            for r in c.query(
                COLLECTION,
                filter=f'id == "{row["id"]}"',
                output_fields=["version"],
                consistency_level="Strong",
                **kw,
            )
        ]

    new1 = dict(new, version=2)
    step("upsert_no_partition_name", res, lambda: c.upsert(COLLECTION, [new1]))
    step("after_upsert_no_partition_versions_all", res, copies("all"))
    step("after_upsert_no_partition_versions_in_tenant_partition", res, copies("tenant_partition"))
    new["version"] = 3
    step(
        "upsert_partition_name",
        res,
        lambda: c.upsert(COLLECTION, [new], partition_name=partition_name(t0name)),
    )
    step("after_upsert_partition_versions_all", res, copies("all"))
    step("after_upsert_partition_versions_in_tenant_partition", res, copies("tenant_partition"))
    step(
        "query_after_upsert",
        res,
        lambda: c.query(
            COLLECTION,
            filter=f'id == "{row["id"]}"',
            output_fields=["content", "version"],
            consistency_level="Strong",
        ),
    )
    step(
        "bm25_finds_new_text",
        res,
        lambda: [
            h["id"]
            for h in c.search(
                COLLECTION,
                data=["upsertmarker"],
                anns_field="sparse",
                limit=5,
                output_fields=["id"],
                search_params={"metric_type": "BM25"},
                consistency_level="Strong",
            )[0]
        ],
    )
    step(
        "bm25_scores_sign",
        res,
        lambda: [
            round(float(h["distance"]), 4)
            for h in c.search(
                COLLECTION,
                data=["咖啡"],
                anns_field="sparse",
                limit=3,
                output_fields=["id"],
                consistency_level="Strong",
            )[0]
        ],
    )
    with contextlib.suppress(Exception):
        c.close()

    # 4. partition limit --------------------------------------------------------------------
    res = {}
    out["partition_limit"] = res
    c = MilvusClient(os.path.join(base, "plimit.db"))
    step("create", res, lambda: create_collection(c, COLLECTION, "partition_per_tenant"))
    target = cfg.get("partition_probe", 1100)
    budget = cfg.get("partition_probe_seconds", 240)
    created = 0
    p0 = time.perf_counter()
    err = None
    for k in range(target):
        try:
            c.create_partition(COLLECTION, f"p_{k:05d}")
            created += 1
        except Exception as e:
            err = short_err(e)
            break
        if time.perf_counter() - p0 > budget:
            err = f"stopped by time budget ({budget}s)"
            break
    res["created_ok"] = created
    res["first_error"] = err
    res["seconds"] = round(time.perf_counter() - p0, 2)
    step("list_partitions", res, lambda: len(c.list_partitions(COLLECTION)))
    if created:
        last = f"p_{created - 1:05d}"
        r0 = dict(rows_for_tenant(0)[0])
        step(
            "insert_last_partition",
            res,
            lambda: c.insert(COLLECTION, [r0], partition_name=last)["insert_count"],
        )
        step(
            "search_last_partition",
            res,
            lambda: len(
                c.search(
                    COLLECTION,
                    data=[q_t0["vec"]],
                    anns_field="embedding",
                    limit=5,
                    output_fields=["id"],
                    partition_names=[last],
                    consistency_level="Strong",
                )[0]
            ),
        )
    with contextlib.suppress(Exception):
        c.close()
    return out
