"""Do the variants return the right rows? `--verify` (the ids of the first pool
queries, compared across variants by the driver) and `--filter-order` (counts against
the generator's ground truth, run after the timed ops: it ends with a delete).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:
    from benchmarks.storage_choice.storage_common import short_err
    from benchmarks.storage_choice.storage_data import make_id
    from benchmarks.storage_choice.storage_ops import TimedOps
    from benchmarks.storage_choice.storage_schema import hot_filter
else:  # run as a script: sys.path[0] is this folder
    from storage_common import short_err
    from storage_data import make_id
    from storage_ops import TimedOps
    from storage_schema import hot_filter


def verify(w: TimedOps, n: int) -> dict[str, Any]:
    """Ids returned for the first n pool queries (dense, BM25, user_load) to compare
    variants; a FLAT variant's dense ids are the true top-10 for the ANN ones."""
    out: dict[str, Any] = {"dense": [], "bm25": [], "user_load": [], "errors": []}
    for q in w.pool[:n]:
        try:
            r0 = w.client.query(
                w.coll,
                filter=f'tenant_id == "{q["tenant"]}" and user_id == "{q["user"]}"',
                output_fields=["id"],
                consistency_level="Strong",
                **w.pkw(q["tenant"]),
            )
            out["user_load"].append(sorted(h["id"] for h in r0))
        except Exception as e:
            out["user_load"].append(None)
            out["errors"].append(short_err(e))
        kinds = [("dense", "embedding", q["vec"], "COSINE")]
        if not w.dense_only:
            kinds.append(("bm25", "sparse", q["text"], "BM25"))
        for kind, field, data, metric in kinds:
            try:
                r = w.client.search(
                    w.coll,
                    data=[data],
                    anns_field=field,
                    limit=10,
                    filter=hot_filter(q["tenant"], q["user"]),
                    output_fields=["id"],
                    search_params=w.search_params if kind == "dense" else {"metric_type": metric},
                    consistency_level="Strong",
                    **w.pkw(q["tenant"]),
                )
                out[kind].append([h["id"] for h in r[0]])
            except Exception as e:
                out[kind].append(None)
                out["errors"].append(short_err(e))
    return out


def filter_order(w: TimedOps, n: int) -> dict[str, Any]:
    """Correctness: does `<field> == X and id in [...]` find every row (vs ids first)?

    Each pool query carries 10 ids of its tenant (ground truth from the generator).
    Ends with one delete by the tenant-first filter, to see whether it deletes anything.
    """
    c = w.client
    counts: dict[str, int] = {}
    wrong_tenants: set[str] = set()
    bad_q: dict[str, Any] | None = None

    def q_count(flt: str, tenant: str) -> int:
        return len(
            c.query(
                w.coll,
                filter=flt,
                output_fields=["id"],
                consistency_level="Strong",
                **w.pkw(tenant),
            )
        )

    for q in w.pool[:n]:
        t = q["tenant"]
        lst = ", ".join(f'"{i}"' for i in q["ids"])
        nums = sorted(int(i[1:]) for i in q["ids"])
        lo, hi = make_id("m", nums[0]), make_id("m", nums[-1])
        tn = int(t[1:])
        in_range = sum(1 for i in range(nums[0], nums[-1] + 1) if i % w.gen.tenants == tn)
        cases = {
            "tenant_then_ids": (f'tenant_id == "{t}" and id in [{lst}]', 10),
            "ids_then_tenant": (f'id in [{lst}] and tenant_id == "{t}"', 10),
            "status_then_ids": (f"status >= 0 and id in [{lst}]", 10),
            "tenant_then_paren_ids": (f'tenant_id == "{t}" and (id in [{lst}])', 10),
            "tenant_then_id_eq": (f'tenant_id == "{t}" and id == "{lo}"', 1),
            "tenant_then_id_range": (
                f'tenant_id == "{t}" and id >= "{lo}" and id <= "{hi}"',
                in_range,
            ),
            "id_range_then_tenant": (
                f'id >= "{lo}" and id <= "{hi}" and tenant_id == "{t}"',
                in_range,
            ),
        }
        for k, (flt, expected) in cases.items():
            ok = q_count(flt, t) == expected
            counts[k] = counts.get(k, 0) + ok
            if k == "tenant_then_ids" and not ok:
                wrong_tenants.add(t)
                bad_q = bad_q or q
        got = c.get(w.coll, ids=q["ids"], output_fields=["id", "tenant_id"])
        counts["get_ids"] = counts.get("get_ids", 0) + (len(got) == len(q["ids"]))
        r = c.search(
            w.coll,
            data=[q["vec"]],
            anns_field="embedding",
            limit=20,
            filter=cases["tenant_then_ids"][0],
            output_fields=["id"],
            consistency_level="Strong",
            **w.pkw(t),
        )
        counts["search_tenant_then_ids"] = counts.get("search_tenant_then_ids", 0) + (
            len(r[0]) == len(q["ids"])
        )
    out: dict[str, Any] = {
        "queries": n,
        "correct": counts,
        "wrong_tenants": sorted(wrong_tenants),
    }
    target = bad_q or w.pool[0]
    lst = ", ".join(f'"{i}"' for i in target["ids"])
    t = target["tenant"]
    try:
        c.delete(w.coll, filter=f'tenant_id == "{t}" and id in [{lst}]', **w.ikw(t))
        out["delete_tenant_then_ids_remaining"] = q_count(
            f'id in [{lst}] and tenant_id == "{t}"', t
        )
        c.delete(w.coll, filter=f'id in [{lst}] and tenant_id == "{t}"', **w.ikw(t))
        out["delete_ids_then_tenant_remaining"] = q_count(
            f'id in [{lst}] and tenant_id == "{t}"', t
        )
    except Exception as e:
        out["delete_error"] = short_err(e)
    return out
