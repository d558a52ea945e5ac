"""Check the precision data set (memories.json, queries.json, pairs.json) and print its counts.

Standard library only. Run from anywhere: python benchmarks/precision/data/validate.py
Exits 1 and lists every problem if a check fails.
"""

from __future__ import annotations

import collections
import datetime
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

MEMORY_TYPES = {"FACT", "PREFERENCE", "EVENT", "STATE", "DECISION", "TASK", "SKILL"}
MEMORY_LANGS = {"en", "zh", "mixed"}
TOPIC_KEYS = {
    "diet",
    "home_city",
    "employer",
    "coffee",
    "editor",
    "os",
    "database",
    "language",
    "pet",
    "timezone",
}
MIN_USERS = 4
MIN_MEMORIES_PER_USER = 200
CONTENT_LEN = (20, 160)
TOPIC_KEY_SHARE = 0.15

MIN_QUERIES = 320
MIN_PER_CATEGORY = {
    "cross_lingual_zh_to_en": 40,
    "cross_lingual_en_to_zh": 40,
    "paraphrase": 50,
    "synonym": 35,
    "identifier": 40,
    "time_sensitive": 25,
    "short": 25,
    "no_answer": 60,
}
MIN_TIME_CHAINS = 15

PAIR_LANGS = {"en", "zh", "cross"}
MIN_PAIRS = {
    ("duplicates", "duplicate"): 120,
    ("duplicates", "distinct"): 120,
    ("contradictions", "contradiction"): 110,
    ("contradictions", "compatible"): 110,
}
PAIR_FIELDS = {"duplicates": ("a", "b"), "contradictions": ("core", "other")}
MIN_NON_EN_SHARE = 0.30

HAN = re.compile(r"[\u4e00-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z]{2,}")

problems: list[str] = []


def fail(msg: str) -> None:
    problems.append(msg)


def load(name: str):
    path = HERE / name
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as exc:
        fail(f"{name}: cannot load: {exc}")
        return None


def nonempty_str(v) -> bool:
    return isinstance(v, str) and v.strip() != "" and v == v.strip()


def check_split_balance(where: str, groups: dict[str, collections.Counter]) -> None:
    for name, c in sorted(groups.items()):
        extra = set(c) - {"train", "test"}
        if extra:
            fail(f"{where} {name}: unknown split values {sorted(extra)}")
        if abs(c["train"] - c["test"]) > 1:
            fail(f"{where} {name}: split unbalanced train={c['train']} test={c['test']}")


def check_memories(doc) -> dict[str, dict]:
    """Returns key -> memory (with the owning user under '_user')."""
    by_key: dict[str, dict] = {}
    if (
        not isinstance(doc, dict)
        or doc.get("version") != 1
        or not isinstance(doc.get("users"), list)
    ):
        fail("memories.json: expected {'version': 1, 'users': [...]}")
        return by_key
    users = doc["users"]
    if len(users) < MIN_USERS:
        fail(f"memories.json: {len(users)} users, need >= {MIN_USERS}")
    seen_users = set()
    for u in users:
        uid = u.get("user") if isinstance(u, dict) else None
        if not nonempty_str(uid) or not isinstance(u.get("memories"), list):
            fail(f"memories.json: bad user entry {str(u)[:80]}")
            continue
        if uid in seen_users:
            fail(f"memories.json: duplicate user {uid}")
        seen_users.add(uid)
        mems = u["memories"]
        if len(mems) < MIN_MEMORIES_PER_USER:
            fail(
                f"memories.json: user {uid} has {len(mems)} memories, need >= {MIN_MEMORIES_PER_USER}"
            )
        contents = set()
        fp = topic = 0
        for m in mems:
            key = m.get("key")
            where = f"memories.json {uid}/{key}"
            allowed = {"key", "content", "type", "occurred_at", "lang", "topic_key"}
            if set(m) - allowed:
                fail(f"{where}: unexpected fields {sorted(set(m) - allowed)}")
            if not nonempty_str(key) or not re.fullmatch(rf"{re.escape(uid)}-m\d{{3,}}", key):
                fail(f"{where}: key must look like {uid}-m001")
            if key in by_key:
                fail(f"{where}: duplicate key")
            content = m.get("content")
            if not nonempty_str(content):
                fail(f"{where}: empty content")
                content = ""
            elif not CONTENT_LEN[0] <= len(content) <= CONTENT_LEN[1]:
                fail(f"{where}: content length {len(content)} outside {CONTENT_LEN}")
            if content in contents:
                fail(f"{where}: duplicate content within user")
            contents.add(content)
            if m.get("type") not in MEMORY_TYPES:
                fail(f"{where}: bad type {m.get('type')!r}")
            try:
                datetime.date.fromisoformat(m.get("occurred_at", ""))
                if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", m["occurred_at"]):
                    raise ValueError
            except (TypeError, ValueError):
                fail(f"{where}: bad occurred_at {m.get('occurred_at')!r}")
            lang = m.get("lang")
            if lang not in MEMORY_LANGS:
                fail(f"{where}: bad lang {lang!r}")
            elif content:
                has_han = bool(HAN.search(content))
                if lang == "en" and has_han:
                    fail(f"{where}: lang en but contains Chinese")
                if lang == "zh" and not has_han:
                    fail(f"{where}: lang zh but no Chinese characters")
                if lang == "mixed" and not (has_han and LATIN_WORD.search(content)):
                    fail(f"{where}: lang mixed needs both Chinese and Latin words")
            if m.get("type") in ("FACT", "PREFERENCE"):
                fp += 1
            if "topic_key" in m:
                topic += 1
                if m["topic_key"] not in TOPIC_KEYS:
                    fail(f"{where}: topic_key {m['topic_key']!r} not in vocabulary")
                if m.get("type") not in ("FACT", "PREFERENCE"):
                    fail(f"{where}: topic_key only on FACT/PREFERENCE")
            by_key[key] = dict(m, _user=uid)
        if fp and topic / fp > TOPIC_KEY_SHARE:
            fail(
                f"memories.json: user {uid} has topic_key on {topic}/{fp} facts+preferences (> {TOPIC_KEY_SHARE:.0%})"
            )
    return by_key


def check_queries(doc, memories: dict[str, dict]) -> None:
    if (
        not isinstance(doc, dict)
        or doc.get("version") != 1
        or not isinstance(doc.get("queries"), list)
    ):
        fail("queries.json: expected {'version': 1, 'queries': [...]}")
        return
    qs = doc["queries"]
    if len(qs) < MIN_QUERIES:
        fail(f"queries.json: {len(qs)} queries, need >= {MIN_QUERIES}")
    ids = set()
    texts = set()
    per_cat = collections.Counter()
    splits: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    chains = set()
    users = {m["_user"] for m in memories.values()}
    for q in qs:
        qid = q.get("id")
        where = f"queries.json {qid}"
        allowed = {"id", "user", "query", "category", "relevant", "split", "outdated"}
        if set(q) - allowed:
            fail(f"{where}: unexpected fields {sorted(set(q) - allowed)}")
        if not nonempty_str(qid) or not re.fullmatch(r"q\d{4}", qid):
            fail(f"{where}: id must look like q0001")
        if qid in ids:
            fail(f"{where}: duplicate id")
        ids.add(qid)
        user = q.get("user")
        if user not in users:
            fail(f"{where}: unknown user {user!r}")
        text = q.get("query")
        if not nonempty_str(text):
            fail(f"{where}: empty query")
        elif (user, text) in texts:
            fail(f"{where}: duplicate query text for {user}")
        texts.add((user, text))
        cat = q.get("category")
        if cat not in MIN_PER_CATEGORY:
            fail(f"{where}: unknown category {cat!r}")
        per_cat[cat] += 1
        splits[cat][q.get("split")] += 1
        rel = q.get("relevant")
        out = q.get("outdated", [])
        if not isinstance(rel, list) or not isinstance(out, list):
            fail(f"{where}: relevant/outdated must be lists")
            continue
        if "outdated" in q and not out:
            fail(f"{where}: empty outdated list (omit the field instead)")
        for field, keys in (("relevant", rel), ("outdated", out)):
            if len(set(keys)) != len(keys):
                fail(f"{where}: duplicate keys in {field}")
            for k in keys:
                if k not in memories:
                    fail(f"{where}: {field} key {k!r} does not exist")
                elif memories[k]["_user"] != user:
                    fail(
                        f"{where}: {field} key {k!r} belongs to {memories[k]['_user']}, not {user}"
                    )
        if set(rel) & set(out):
            fail(f"{where}: key both relevant and outdated")
        if cat == "no_answer":
            if rel or out:
                fail(f"{where}: no_answer must have relevant == [] and no outdated")
        elif not rel:
            fail(f"{where}: category {cat} needs at least one relevant memory")
        if cat == "time_sensitive":
            if not out:
                fail(f"{where}: time_sensitive needs an outdated list")
            elif all(k in memories for k in rel + out):
                newest_rel = max(memories[k]["occurred_at"] for k in rel)
                newest_out = max(memories[k]["occurred_at"] for k in out)
                if newest_out >= newest_rel:
                    fail(
                        f"{where}: an outdated memory ({newest_out}) is not older than the newest relevant one ({newest_rel})"
                    )
                chains.add((user, tuple(sorted(out))))
            for k in rel + out:
                if k in memories and "topic_key" in memories[k]:
                    fail(f"{where}: time-evolving memory {k} must not carry a topic_key (the newer fact has to win on its own)")
        if cat == "short" and nonempty_str(text):
            words = text.split()
            if len(words) > 2 or (HAN.search(text) and len(text) > 6):
                fail(f"{where}: short query should be one or two words")
    for cat, need in MIN_PER_CATEGORY.items():
        if per_cat[cat] < need:
            fail(f"queries.json: category {cat} has {per_cat[cat]}, need >= {need}")
    if len(chains) < MIN_TIME_CHAINS:
        fail(
            f"queries.json: {len(chains)} distinct time-evolving chains, need >= {MIN_TIME_CHAINS}"
        )
    check_split_balance("queries.json category", splits)

    print(f"queries: {len(qs)} ({len(chains)} distinct outdated chains in time_sensitive)")
    by_user = collections.Counter(q.get("user") for q in qs)
    print("  per user: " + ", ".join(f"{u}={n}" for u, n in sorted(by_user.items())))
    print(f"  {'category':26s} {'total':>5s} {'train':>5s} {'test':>5s} {'zh-query':>8s}")
    for cat in MIN_PER_CATEGORY:
        zhq = sum(1 for q in qs if q.get("category") == cat and HAN.search(q.get("query", "")))
        print(
            f"  {cat:26s} {per_cat[cat]:5d} {splits[cat]['train']:5d} {splits[cat]['test']:5d} {zhq:8d}"
        )


def pair_lang(a: str, b: str) -> str:
    ha, hb = bool(HAN.search(a)), bool(HAN.search(b))
    if ha and hb:
        return "zh"
    if not ha and not hb:
        return "en"
    return "cross"


def check_pairs(doc) -> None:
    if not isinstance(doc, dict) or doc.get("version") != 1:
        fail("pairs.json: expected {'version': 1, 'duplicates': [...], 'contradictions': [...]}")
        return
    print("pairs:")
    for section, (fa, fb) in PAIR_FIELDS.items():
        items = doc.get(section)
        if not isinstance(items, list):
            fail(f"pairs.json: missing list {section}")
            continue
        labels = {lab for (sec, lab) in MIN_PAIRS if sec == section}
        count = collections.Counter()
        splits: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        langs: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        seen = set()
        for i, p in enumerate(items):
            where = f"pairs.json {section}[{i}]"
            allowed = {fa, fb, "label", "lang", "split"}
            if not isinstance(p, dict):
                fail(f"{where}: not an object")
                continue
            if set(p) - allowed or set(allowed) - set(p):
                fail(f"{where}: fields must be exactly {sorted(allowed)}")
            a, b = p.get(fa), p.get(fb)
            if not nonempty_str(a) or not nonempty_str(b):
                fail(f"{where}: empty text")
                continue
            if a == b:
                fail(f"{where}: identical texts")
            key = (a, b) if section == "contradictions" else tuple(sorted((a, b)))
            if key in seen:
                fail(f"{where}: duplicate pair")
            seen.add(key)
            lab = p.get("label")
            if lab not in labels:
                fail(f"{where}: label {lab!r} not in {sorted(labels)}")
            lang = p.get("lang")
            if lang not in PAIR_LANGS:
                fail(f"{where}: bad lang {lang!r}")
            elif lang != pair_lang(a, b):
                fail(f"{where}: lang {lang!r} but texts look {pair_lang(a, b)!r}")
            count[lab] += 1
            splits[lab][p.get("split")] += 1
            langs[lab][lang] += 1
        for lab in sorted(labels):
            need = MIN_PAIRS[(section, lab)]
            if count[lab] < need:
                fail(f"pairs.json: {section}/{lab} has {count[lab]}, need >= {need}")
            non_en = langs[lab]["zh"] + langs[lab]["cross"]
            if count[lab] and non_en / count[lab] < MIN_NON_EN_SHARE:
                fail(
                    f"pairs.json: {section}/{lab} only {non_en}/{count[lab]} Chinese or cross-language"
                )
            print(
                f"  {section}/{lab:13s} {count[lab]:4d}  train={splits[lab]['train']} test={splits[lab]['test']}"
                f"  en={langs[lab]['en']} zh={langs[lab]['zh']} cross={langs[lab]['cross']}"
            )
        check_split_balance(f"pairs.json {section}", splits)


def main() -> int:
    mem_doc = load("memories.json")
    memories = check_memories(mem_doc) if mem_doc is not None else {}
    if mem_doc is not None and memories:
        print(f"memories: {len(memories)}")
        per_user = collections.Counter(m["_user"] for m in memories.values())
        for u, n in per_user.items():
            ms = [m for m in memories.values() if m["_user"] == u]
            langs = collections.Counter(m["lang"] for m in ms)
            types = collections.Counter(m["type"] for m in ms)
            topics = sum(1 for m in ms if "topic_key" in m)
            print(
                f"  {u:6s} {n:4d}  lang {dict(sorted(langs.items()))}  topic_key {topics}"
                f"  types {dict(sorted(types.items()))}"
            )
    q_doc = load("queries.json")
    if q_doc is not None:
        check_queries(q_doc, memories)
    p_doc = load("pairs.json")
    if p_doc is not None:
        check_pairs(p_doc)
    if problems:
        print(f"\nFAILED: {len(problems)} problem(s)")
        for p in problems:
            print("  - " + p)
        return 1
    print("\nOK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
