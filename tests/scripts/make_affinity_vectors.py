"""Writes tests/scripts/affinity_vectors.json: the replica order every client must
compute for a user (docs/routing.md), from this reference implementation.

    python tests/scripts/make_affinity_vectors.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

OUT = Path(__file__).with_name("affinity_vectors.json")


def weight(replica: str, user_id: str) -> int:
    digest = hashlib.sha256(replica.encode() + b"\n" + user_id.encode()).digest()
    return int.from_bytes(digest[:8], "big")


def order(replicas: list[str], user_id: str) -> list[str]:
    return sorted(set(replicas), key=lambda r: (-weight(r, user_id), r))


def routing_key(user_id: str) -> str:
    return hashlib.sha256(user_id.encode()).hexdigest()[:32]


REPLICA_SETS = [
    ["10.0.0.1:50051"],
    ["10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051"],
    [
        "recalld-0.recalld:50051",
        "recalld-1.recalld:50051",
        "recalld-2.recalld:50051",
        "recalld-3.recalld:50051",
        "recalld-4.recalld:50051",
    ],
    ["[fd00::1]:50051", "[fd00::2]:50051", "127.0.0.1:7001", "127.0.0.1:7002"],
]
USERS = [
    "",
    "u1",
    "alice",
    "alice@example.com",
    "user-42",
    "Ünïcødé",
    "用户七",
    "🙂 emoji",
    "a" * 300,
    "tab\tand space",
    "0",
    "00",
    "x-recalld-user",
]


def main() -> None:
    cases = [
        {"replicas": replicas, "user_id": user, "order": order(replicas, user)}
        for replicas in REPLICA_SETS
        for user in USERS
    ]
    keys = [{"user_id": user, "routing_key": routing_key(user)} for user in USERS]
    # A user's replica moves only when its own replica goes: with one replica removed,
    # the order is the full order without it.
    data = {
        "about": "Rendezvous order of replicas per user and the x-recalld-user header "
        "value (docs/routing.md). Written by tests/scripts/make_affinity_vectors.py.",
        "orders": cases,
        "routing_keys": keys,
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
