"""Check the precision data set (memories.json, queries.json, pairs.json) and print its counts.

The set lives in the package (server/recalld_server/calibration/data/: `recalld
calibrate` reads it from an installed wheel). Standard library only. Run from
anywhere: python benchmarks/precision/data/validate.py
Exits 1 and lists every problem if a check fails. Tests call `validate()`, which returns
the problems instead of printing them.
"""

from __future__ import annotations

import collections
import datetime
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeGuard

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE.parents[2] / "server" / "recalld_server" / "calibration" / "data"
"""The data set's directory in the checkout."""

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

Memory = dict[str, Any]
"""One memories.json entry as loaded, plus the owning user under '_user'."""
Tally = collections.Counter[Any]
"""Counts of JSON values (labels, splits, languages), which may be of any type in bad data."""


class Report:
    """Collects problems and passes progress lines to `emit` (print, or drop them)."""

    def __init__(self, data_dir: Path, emit: Callable[[str], None]) -> None:
        self.data_dir = data_dir
        self.emit = emit
        self.problems: list[str] = []

    def fail(self, msg: str) -> None:
        self.problems.append(msg)


def load(r: Report, name: str) -> Any:
    path = r.data_dir / name
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as exc:
        r.fail(f"{name}: cannot load: {exc}")
        return None


def nonempty_str(v: object) -> TypeGuard[str]:
    return isinstance(v, str) and v.strip() != "" and v == v.strip()


def check_split_balance(r: Report, where: str, groups: dict[Any, Tally]) -> None:
    for name, c in sorted(groups.items()):
        extra = set(c) - {"train", "test"}
        if extra:
            r.fail(f"{where} {name}: unknown split values {sorted(extra)}")
        if abs(c["train"] - c["test"]) > 1:
            r.fail(f"{where} {name}: split unbalanced train={c['train']} test={c['test']}")


def check_memories(r: Report, doc: Any) -> dict[str, Memory]:
    """Returns key -> memory (with the owning user under '_user')."""
    by_key: dict[str, Memory] = {}
    if (
        not isinstance(doc, dict)
        or doc.get("version") != 1
        or not isinstance(doc.get("users"), list)
    ):
        r.fail("memories.json: expected {'version': 1, 'users': [...]}")
        return by_key
    users = doc["users"]
    if len(users) < MIN_USERS:
        r.fail(f"memories.json: {len(users)} users, need >= {MIN_USERS}")
    seen_users: set[str] = set()
    for u in users:
        uid = u.get("user") if isinstance(u, dict) else None
        if not nonempty_str(uid) or not isinstance(u.get("memories"), list):
            r.fail(f"memories.json: bad user entry {str(u)[:80]}")
            continue
        if uid in seen_users:
            r.fail(f"memories.json: duplicate user {uid}")
        seen_users.add(uid)
        mems = u["memories"]
        if len(mems) < MIN_MEMORIES_PER_USER:
            r.fail(
                f"memories.json: user {uid} has {len(mems)} memories, "
                f"need >= {MIN_MEMORIES_PER_USER}"
            )
        contents: set[str] = set()
        fp = topic = 0
        for m in mems:
            key = m.get("key")
            where = f"memories.json {uid}/{key}"
            allowed = {"key", "content", "type", "occurred_at", "lang", "topic_key"}
            if set(m) - allowed:
                r.fail(f"{where}: unexpected fields {sorted(set(m) - allowed)}")
            if not nonempty_str(key) or not re.fullmatch(rf"{re.escape(uid)}-m\d{{3,}}", key):
                r.fail(f"{where}: key must look like {uid}-m001")
            if key in by_key:
                r.fail(f"{where}: duplicate key")
            content = m.get("content")
            if not nonempty_str(content):
                r.fail(f"{where}: empty content")
                content = ""
            elif not CONTENT_LEN[0] <= len(content) <= CONTENT_LEN[1]:
                r.fail(f"{where}: content length {len(content)} outside {CONTENT_LEN}")
            if content in contents:
                r.fail(f"{where}: duplicate content within user")
            contents.add(content)
            if m.get("type") not in MEMORY_TYPES:
                r.fail(f"{where}: bad type {m.get('type')!r}")
            try:
                datetime.date.fromisoformat(m.get("occurred_at", ""))
                if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", m["occurred_at"]):
                    raise ValueError
            except (TypeError, ValueError):
                r.fail(f"{where}: bad occurred_at {m.get('occurred_at')!r}")
            lang = m.get("lang")
            if lang not in MEMORY_LANGS:
                r.fail(f"{where}: bad lang {lang!r}")
            elif content:
                has_han = bool(HAN.search(content))
                if lang == "en" and has_han:
                    r.fail(f"{where}: lang en but contains Chinese")
                if lang == "zh" and not has_han:
                    r.fail(f"{where}: lang zh but no Chinese characters")
                if lang == "mixed" and not (has_han and LATIN_WORD.search(content)):
                    r.fail(f"{where}: lang mixed needs both Chinese and Latin words")
            if m.get("type") in ("FACT", "PREFERENCE"):
                fp += 1
            if "topic_key" in m:
                topic += 1
                if m["topic_key"] not in TOPIC_KEYS:
                    r.fail(f"{where}: topic_key {m['topic_key']!r} not in vocabulary")
                if m.get("type") not in ("FACT", "PREFERENCE"):
                    r.fail(f"{where}: topic_key only on FACT/PREFERENCE")
            by_key[key] = dict(m, _user=uid)
        if fp and topic / fp > TOPIC_KEY_SHARE:
            r.fail(
                f"memories.json: user {uid} has topic_key on {topic}/{fp} facts+preferences "
                f"(> {TOPIC_KEY_SHARE:.0%})"
            )
    return by_key


def check_queries(r: Report, doc: Any, memories: dict[str, Memory]) -> None:
    if (
        not isinstance(doc, dict)
        or doc.get("version") != 1
        or not isinstance(doc.get("queries"), list)
    ):
        r.fail("queries.json: expected {'version': 1, 'queries': [...]}")
        return
    qs = doc["queries"]
    if len(qs) < MIN_QUERIES:
        r.fail(f"queries.json: {len(qs)} queries, need >= {MIN_QUERIES}")
    ids: set[Any] = set()
    texts: set[tuple[Any, Any]] = set()
    per_cat: Tally = collections.Counter()
    splits: dict[Any, Tally] = collections.defaultdict(collections.Counter)
    chains: set[tuple[Any, tuple[Any, ...]]] = set()
    users = {m["_user"] for m in memories.values()}
    for q in qs:
        qid = q.get("id")
        where = f"queries.json {qid}"
        allowed = {"id", "user", "query", "category", "relevant", "split", "outdated"}
        if set(q) - allowed:
            r.fail(f"{where}: unexpected fields {sorted(set(q) - allowed)}")
        if not nonempty_str(qid) or not re.fullmatch(r"q\d{4}", qid):
            r.fail(f"{where}: id must look like q0001")
        if qid in ids:
            r.fail(f"{where}: duplicate id")
        ids.add(qid)
        user = q.get("user")
        if user not in users:
            r.fail(f"{where}: unknown user {user!r}")
        text = q.get("query")
        if not nonempty_str(text):
            r.fail(f"{where}: empty query")
        elif (user, text) in texts:
            r.fail(f"{where}: duplicate query text for {user}")
        texts.add((user, text))
        cat = q.get("category")
        if cat not in MIN_PER_CATEGORY:
            r.fail(f"{where}: unknown category {cat!r}")
        per_cat[cat] += 1
        splits[cat][q.get("split")] += 1
        rel = q.get("relevant")
        out = q.get("outdated", [])
        if not isinstance(rel, list) or not isinstance(out, list):
            r.fail(f"{where}: relevant/outdated must be lists")
            continue
        if "outdated" in q and not out:
            r.fail(f"{where}: empty outdated list (omit the field instead)")
        for field, keys in (("relevant", rel), ("outdated", out)):
            if len(set(keys)) != len(keys):
                r.fail(f"{where}: duplicate keys in {field}")
            for k in keys:
                if k not in memories:
                    r.fail(f"{where}: {field} key {k!r} does not exist")
                elif memories[k]["_user"] != user:
                    r.fail(
                        f"{where}: {field} key {k!r} belongs to {memories[k]['_user']}, not {user}"
                    )
        if set(rel) & set(out):
            r.fail(f"{where}: key both relevant and outdated")
        if cat == "no_answer":
            if rel or out:
                r.fail(f"{where}: no_answer must have relevant == [] and no outdated")
        elif not rel:
            r.fail(f"{where}: category {cat} needs at least one relevant memory")
        if cat == "time_sensitive":
            if not out:
                r.fail(f"{where}: time_sensitive needs an outdated list")
            elif all(k in memories for k in rel + out):
                newest_rel = max(memories[k]["occurred_at"] for k in rel)
                newest_out = max(memories[k]["occurred_at"] for k in out)
                if newest_out >= newest_rel:
                    r.fail(
                        f"{where}: an outdated memory ({newest_out}) is not older than "
                        f"the newest relevant one ({newest_rel})"
                    )
                chains.add((user, tuple(sorted(out))))
            for k in rel + out:
                if k in memories and "topic_key" in memories[k]:
                    r.fail(
                        f"{where}: time-evolving memory {k} must not carry a topic_key "
                        "(the newer fact has to win on its own)"
                    )
        if cat == "short" and nonempty_str(text):
            words = text.split()
            if len(words) > 2 or (HAN.search(text) and len(text) > 6):
                r.fail(f"{where}: short query should be one or two words")
    for cat, need in MIN_PER_CATEGORY.items():
        if per_cat[cat] < need:
            r.fail(f"queries.json: category {cat} has {per_cat[cat]}, need >= {need}")
    if len(chains) < MIN_TIME_CHAINS:
        r.fail(
            f"queries.json: {len(chains)} distinct time-evolving chains, need >= {MIN_TIME_CHAINS}"
        )
    check_split_balance(r, "queries.json category", splits)

    r.emit(f"queries: {len(qs)} ({len(chains)} distinct outdated chains in time_sensitive)")
    by_user = collections.Counter(q.get("user") for q in qs)
    r.emit("  per user: " + ", ".join(f"{u}={n}" for u, n in sorted(by_user.items())))
    r.emit(f"  {'category':26s} {'total':>5s} {'train':>5s} {'test':>5s} {'zh-query':>8s}")
    for cat in MIN_PER_CATEGORY:
        zhq = sum(1 for q in qs if q.get("category") == cat and HAN.search(q.get("query", "")))
        r.emit(
            f"  {cat:26s} {per_cat[cat]:5d} {splits[cat]['train']:5d} "
            f"{splits[cat]['test']:5d} {zhq:8d}"
        )


def pair_lang(a: str, b: str) -> str:
    ha, hb = bool(HAN.search(a)), bool(HAN.search(b))
    if ha and hb:
        return "zh"
    if not ha and not hb:
        return "en"
    return "cross"


def check_pairs(r: Report, doc: Any) -> None:
    if not isinstance(doc, dict) or doc.get("version") != 1:
        r.fail("pairs.json: expected {'version': 1, 'duplicates': [...], 'contradictions': [...]}")
        return
    r.emit("pairs:")
    for section, (fa, fb) in PAIR_FIELDS.items():
        items = doc.get(section)
        if not isinstance(items, list):
            r.fail(f"pairs.json: missing list {section}")
            continue
        labels = {lab for (sec, lab) in MIN_PAIRS if sec == section}
        count: Tally = collections.Counter()
        splits: dict[Any, Tally] = collections.defaultdict(collections.Counter)
        langs: dict[Any, Tally] = collections.defaultdict(collections.Counter)
        seen: set[tuple[str, ...]] = set()
        for i, p in enumerate(items):
            where = f"pairs.json {section}[{i}]"
            allowed = {fa, fb, "label", "lang", "split"}
            if not isinstance(p, dict):
                r.fail(f"{where}: not an object")
                continue
            if set(p) - allowed or set(allowed) - set(p):
                r.fail(f"{where}: fields must be exactly {sorted(allowed)}")
            a, b = p.get(fa), p.get(fb)
            if not nonempty_str(a) or not nonempty_str(b):
                r.fail(f"{where}: empty text")
                continue
            if a == b:
                r.fail(f"{where}: identical texts")
            key: tuple[str, ...] = (a, b) if section == "contradictions" else tuple(sorted((a, b)))
            if key in seen:
                r.fail(f"{where}: duplicate pair")
            seen.add(key)
            lab = p.get("label")
            if lab not in labels:
                r.fail(f"{where}: label {lab!r} not in {sorted(labels)}")
            lang = p.get("lang")
            if lang not in PAIR_LANGS:
                r.fail(f"{where}: bad lang {lang!r}")
            elif lang != pair_lang(a, b):
                r.fail(f"{where}: lang {lang!r} but texts look {pair_lang(a, b)!r}")
            count[lab] += 1
            splits[lab][p.get("split")] += 1
            langs[lab][lang] += 1
        for lab in sorted(labels):
            need = MIN_PAIRS[(section, lab)]
            if count[lab] < need:
                r.fail(f"pairs.json: {section}/{lab} has {count[lab]}, need >= {need}")
            non_en = langs[lab]["zh"] + langs[lab]["cross"]
            if count[lab] and non_en / count[lab] < MIN_NON_EN_SHARE:
                r.fail(
                    f"pairs.json: {section}/{lab} only {non_en}/{count[lab]} "
                    "Chinese or cross-language"
                )
            r.emit(
                f"  {section}/{lab:13s} {count[lab]:4d}  "
                f"train={splits[lab]['train']} test={splits[lab]['test']}"
                f"  en={langs[lab]['en']} zh={langs[lab]['zh']} cross={langs[lab]['cross']}"
            )
        check_split_balance(r, f"pairs.json {section}", splits)


def _drop(line: str) -> None:
    pass


def validate(data_dir: Path = DATA_DIR, emit: Callable[[str], None] = _drop) -> list[str]:
    """Run every check on the data set in `data_dir`; return the problems (empty if it is fine).

    `emit` receives the summary lines (counts per user, category, label); main() prints them.
    """
    r = Report(data_dir, emit)
    mem_doc = load(r, "memories.json")
    memories = check_memories(r, mem_doc) if mem_doc is not None else {}
    if mem_doc is not None and memories:
        r.emit(f"memories: {len(memories)}")
        per_user = collections.Counter(m["_user"] for m in memories.values())
        for u, n in per_user.items():
            ms = [m for m in memories.values() if m["_user"] == u]
            langs = collections.Counter(m["lang"] for m in ms)
            types = collections.Counter(m["type"] for m in ms)
            topics = sum(1 for m in ms if "topic_key" in m)
            r.emit(
                f"  {u:6s} {n:4d}  lang {dict(sorted(langs.items()))}  topic_key {topics}"
                f"  types {dict(sorted(types.items()))}"
            )
    q_doc = load(r, "queries.json")
    if q_doc is not None:
        check_queries(r, q_doc, memories)
    p_doc = load(r, "pairs.json")
    if p_doc is not None:
        check_pairs(r, p_doc)
    return r.problems


def main() -> int:
    problems = validate(DATA_DIR, print)
    if problems:
        print(f"\nFAILED: {len(problems)} problem(s)")
        for p in problems:
            print("  - " + p)
        return 1
    print("\nOK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
