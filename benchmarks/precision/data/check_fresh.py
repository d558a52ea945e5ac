"""Checks for the fresh (held-out) query split, standard library only.

    python3 benchmarks/precision/data/check_fresh.py

Loads fresh_queries.json (beside this file), the calibration memories and the existing
queries, and asserts: the file shape; every relevant/outdated key exists and belongs to
the question's user; outdated memories are older than the newest relevant one; no query
text equals (or, after case/space/punctuation folding, matches) an existing query; the
per-user and per-category counts; plus per-category sanity rules (no_answer is empty,
cross-lingual languages, identifier look-alikes, short length). Prints the counts table
and exits 1 with a list of problems if any check fails.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
FRESH = HERE / "fresh_queries.json"
CAL = ROOT / "server" / "recalld_server" / "calibration" / "data"
MEMORIES = CAL / "memories.json"
EXISTING = CAL / "queries.json"

USERS = ["lin", "emma", "shen", "fang"]
PER_USER = 40
TARGET = {  # per user; each may be off by one, the user total must be exact
    "no_answer": 7,
    "paraphrase": 6,
    "cross_lingual_zh_to_en": 5,
    "cross_lingual_en_to_zh": 5,
    "identifier": 5,
    "synonym": 4,
    "time_sensitive": 4,
    "short": 4,
}
QUERY_KEYS = {"id", "user", "query", "category", "relevant", "split"}
OPTIONAL_KEYS = {"outdated"}
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-/·]*[A-Za-z0-9]|[0-9]")


def norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if ch.isalnum() or CJK.match(ch))


def codes(text: str) -> set[str]:
    """Identifier-like tokens: contain a digit, at least 3 characters."""
    return {t for t in CODE.findall(text) if len(t) >= 3 and any(c.isdigit() for c in t)}


def osa_distance(a: str, b: str) -> int:
    """Optimal string alignment distance (edits plus adjacent transpositions)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def look_alike(a: str, b: str) -> bool:
    if a == b:
        return False
    if a.startswith(b) or b.startswith(a):  # SO-57306 / SO-57306-B
        return True
    if len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=False)) <= 3:
        return True
    return osa_distance(a, b) <= 2


def main() -> int:
    problems: list[str] = []

    def check(cond: bool, msg: str) -> None:
        if not cond:
            problems.append(msg)

    fresh = json.loads(FRESH.read_text(encoding="utf-8"))
    mem_doc = json.loads(MEMORIES.read_text(encoding="utf-8"))
    existing = json.loads(EXISTING.read_text(encoding="utf-8"))["queries"]

    memories = {}  # key -> (user, memory)
    by_user: dict[str, list[dict[str, Any]]] = {}
    for block in mem_doc["users"]:
        by_user[block["user"]] = block["memories"]
        for m in block["memories"]:
            memories[m["key"]] = (block["user"], m)

    # ---- shape ----
    check(isinstance(fresh, dict), "top level is not an object")
    check(set(fresh) == {"version", "note", "queries"}, f"top-level keys are {sorted(fresh)}")
    check(fresh.get("version") == 1, "version is not 1")
    note = fresh.get("note")
    check(isinstance(note, str) and note.strip() != "", "note is missing or empty")
    queries = fresh.get("queries", [])
    check(isinstance(queries, list), "queries is not a list")

    existing_exact = {q["query"] for q in existing}
    existing_norm = {norm(q["query"]): q["id"] for q in existing}
    seen_norm: dict[str, str] = {}
    last_user_index = 0
    counts: Counter[tuple[str, str]] = Counter()

    for i, q in enumerate(queries, 1):
        qid = q.get("id", f"#{i}")
        keys = set(q)
        check(keys >= QUERY_KEYS, f"{qid}: missing keys {sorted(QUERY_KEYS - keys)}")
        check(
            keys <= QUERY_KEYS | OPTIONAL_KEYS,
            f"{qid}: unexpected keys {sorted(keys - QUERY_KEYS - OPTIONAL_KEYS)}",
        )
        check(q.get("id") == f"f{i:04d}", f"{qid}: expected id f{i:04d}")
        check(q.get("split") == "fresh", f"{qid}: split is {q.get('split')!r}, not 'fresh'")
        user, text, cat = q.get("user"), q.get("query", ""), q.get("category")
        check(user in USERS, f"{qid}: unknown user {user!r}")
        check(cat in TARGET, f"{qid}: unknown category {cat!r}")
        check(
            isinstance(text, str) and text.strip() == text and text != "",
            f"{qid}: empty or unstripped query text",
        )
        if user in USERS:
            idx = USERS.index(user)
            check(idx >= last_user_index, f"{qid}: users are not grouped in the order {USERS}")
            last_user_index = max(last_user_index, idx)
        counts[(user, cat)] += 1

        rel = q.get("relevant", [])
        out = q.get("outdated", [])
        check(
            isinstance(rel, list) and isinstance(out, list),
            f"{qid}: relevant/outdated must be lists",
        )
        check("outdated" not in q or len(out) > 0, f"{qid}: outdated present but empty")
        check(len(rel) == len(set(rel)), f"{qid}: duplicate relevant keys")
        check(len(out) == len(set(out)), f"{qid}: duplicate outdated keys")
        check(not set(rel) & set(out), f"{qid}: key both relevant and outdated")

        # ---- references ----
        for k in rel + out:
            if k not in memories:
                problems.append(f"{qid}: unknown memory key {k}")
            elif memories[k][0] != user:
                problems.append(f"{qid}: {k} belongs to {memories[k][0]}, not {user}")
        rel_mems = [memories[k][1] for k in rel if k in memories]
        out_mems = [memories[k][1] for k in out if k in memories]

        # ---- outdated older than newest relevant ----
        if out:
            check(bool(rel_mems), f"{qid}: outdated without relevant")
            if rel_mems:
                newest = max(m["occurred_at"] for m in rel_mems)
                for m in out_mems:
                    check(
                        m["occurred_at"] < newest,
                        f"{qid}: outdated {m['key']} ({m['occurred_at']}) is not older "
                        f"than the newest relevant ({newest})",
                    )

        # ---- no overlap with existing queries (or within this file) ----
        check(text not in existing_exact, f"{qid}: query text equals an existing query")
        n = norm(text)
        if n in existing_norm:
            problems.append(f"{qid}: query text matches existing {existing_norm[n]} after folding")
        if n in seen_norm:
            problems.append(f"{qid}: query text repeats {seen_norm[n]}")
        seen_norm[n] = qid

        # ---- category rules ----
        has_cjk = bool(CJK.search(text))
        if cat == "no_answer":
            check(rel == [] and not out, f"{qid}: no_answer must have relevant [] and no outdated")
            user_text = " ".join(m["content"] for m in by_user.get(user, []))
            for c in codes(text):
                check(
                    c not in user_text,
                    f"{qid}: no_answer code {c} occurs verbatim in {user}'s memories",
                )
        else:
            check(len(rel) > 0, f"{qid}: answerable query with empty relevant")
        if cat == "time_sensitive":
            check(len(out) > 0, f"{qid}: time_sensitive without outdated")
        if cat == "cross_lingual_zh_to_en":
            check(has_cjk, f"{qid}: zh_to_en query has no Chinese")
            for m in rel_mems:
                check(m["lang"] == "en", f"{qid}: relevant {m['key']} is {m['lang']}, not en")
        if cat == "cross_lingual_en_to_zh":
            check(not has_cjk, f"{qid}: en_to_zh query contains Chinese")
            for m in rel_mems:
                check(m["lang"] == "zh", f"{qid}: relevant {m['key']} is {m['lang']}, not zh")
        if cat == "short":
            if has_cjk:
                check(len(text) <= 6, f"{qid}: Chinese short query longer than 6 characters")
            else:
                check(1 <= len(text.split()) <= 3, f"{qid}: short query is not 1-3 words")
        if cat == "identifier":
            qcodes = codes(text)
            check(bool(qcodes), f"{qid}: identifier query has no code/number")
            rel_text = " ".join(m["content"] for m in rel_mems)
            check(
                any(c in rel_text for c in qcodes),
                f"{qid}: no query code appears in a relevant memory",
            )
            others = [m for m in by_user.get(user, []) if m["key"] not in rel]
            other_codes = set().union(*(codes(m["content"]) for m in others)) if others else set()
            check(
                any(look_alike(c, o) for c in qcodes for o in other_codes),
                f"{qid}: no near-identical code in a non-relevant memory of {user}",
            )

    # ---- counts ----
    check(
        len(queries) == PER_USER * len(USERS),
        f"{len(queries)} queries, expected {PER_USER * len(USERS)}",
    )
    for user in USERS:
        total = sum(counts[(user, c)] for c in TARGET)
        check(total == PER_USER, f"{user}: {total} queries, expected {PER_USER}")
        for cat, want in TARGET.items():
            got = counts[(user, cat)]
            check(abs(got - want) <= 1, f"{user}/{cat}: {got}, expected {want}±1")

    width = max(len(c) for c in TARGET)
    print(f"{'category':<{width}} " + " ".join(f"{u:>5}" for u in USERS) + "   all")
    for cat in TARGET:
        row = [counts[(u, cat)] for u in USERS]
        print(f"{cat:<{width}} " + " ".join(f"{n:>5}" for n in row) + f" {sum(row):>5}")
    totals = [sum(counts[(u, c)] for c in TARGET) for u in USERS]
    print(f"{'all':<{width}} " + " ".join(f"{n:>5}" for n in totals) + f" {sum(totals):>5}")
    with_out = sum(1 for q in queries if q.get("outdated"))
    zh_q = sum(1 for q in queries if CJK.search(q.get("query", "")))
    print(
        f"queries with outdated: {with_out}; zh-query: {zh_q}; no_answer: "
        f"{sum(1 for q in queries if q.get('category') == 'no_answer')}"
    )

    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print("  -", p)
        return 1
    print("OK: all checks passed")
    return 0


if __name__ == "__main__":
    rc = main()
    assert rc == 0, "fresh_queries.json failed its checks"
    sys.exit(rc)
