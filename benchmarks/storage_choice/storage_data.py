"""The seeded data set: the same rows, queries and ids in every worker.

Rows go round-robin to tenants (every tenant has rows / tenants rows), users uniformly at
random inside the tenant; clustered, normalised 512-d vectors; bilingual sentences of
20-200 characters made of the word lists below.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

DIM = 512
NOW_MS = 1_767_225_600_000  # fixed "now" (2026-01-01T00:00:00Z) so runs are reproducible
DAY_MS = 86_400_000

ZH_WORDS = [
    "咖啡",
    "茶",
    "项目",
    "会议",
    "北京",
    "上海",
    "深圳",
    "数据库",
    "部署",
    "周末",
    "旅行",
    "猫",
    "狗",
    "跑步",
    "游泳",
    "医生",
    "预算",
    "合同",
    "客户",
    "报告",
    "火锅",
    "面条",
    "米饭",
    "水果",
    "电影",
    "音乐",
    "钢琴",
    "吉他",
    "篮球",
    "足球",
    "学校",
    "老师",
    "孩子",
    "父母",
    "生日",
    "礼物",
    "飞机",
    "火车",
    "酒店",
    "机场",
    "天气",
    "下雨",
    "冬天",
    "夏天",
    "医院",
    "银行",
    "手机",
    "电脑",
    "键盘",
    "服务器",
    "接口",
    "缓存",
    "日志",
    "测试",
    "上线",
    "版本",
    "需求",
    "设计",
    "文档",
    "邮件",
]
ZH_GLUE = [
    "我",
    "喜欢",
    "不喜欢",
    "明天",
    "昨天",
    "需要",
    "计划",
    "提醒",
    "记得",
    "已经",
    "在",
    "和",
]
EN_WORDS = [
    "coffee",
    "tea",
    "project",
    "meeting",
    "beijing",
    "shanghai",
    "database",
    "deploy",
    "weekend",
    "travel",
    "cat",
    "dog",
    "running",
    "swimming",
    "doctor",
    "budget",
    "contract",
    "customer",
    "report",
    "hotpot",
    "noodles",
    "rice",
    "fruit",
    "movie",
    "music",
    "piano",
    "guitar",
    "basketball",
    "football",
    "school",
    "teacher",
    "children",
    "parents",
    "birthday",
    "gift",
    "flight",
    "train",
    "hotel",
    "airport",
    "weather",
    "rain",
    "winter",
    "summer",
    "hospital",
    "bank",
    "phone",
    "laptop",
    "keyboard",
    "server",
    "api",
    "cache",
    "logs",
    "testing",
    "release",
    "version",
    "requirements",
    "design",
    "docs",
    "email",
    "vegan",
]
EN_GLUE = ["user", "prefers", "likes", "dislikes", "plans", "needs", "the", "and", "next", "week"]
BM25_QUERIES = ["咖啡", "database", "旅行", "coffee", "服务器", "birthday"]


def tenant_name(t: int) -> str:
    return f"t{t:04d}"


def user_name(t: int, u: int) -> str:
    return f"t{t:04d}_u{u:04d}"


def partition_name(tenant: str) -> str:
    # Partition names allow [A-Za-z0-9_] only: real tenant ids need a safe mapping.
    return f"p_{tenant}"


def make_id(prefix: str, n: int) -> str:
    return f"{prefix}{n:020d}"[:32]


class DataGen:
    """Deterministic data: same seed -> same rows, queries and ids in every worker."""

    def __init__(self, seed: int, rows: int, tenants: int, users: int) -> None:
        import numpy as np

        self.np = np
        self.seed = seed
        self.rows = rows
        self.tenants = tenants
        self.users = users
        rng = np.random.default_rng(seed)
        n_centers = 64
        centers = rng.standard_normal((n_centers, DIM)).astype(np.float32)
        self.centers = centers / np.linalg.norm(centers, axis=1, keepdims=True)
        # Rows are assigned round-robin to tenants (so every tenant has rows / tenants rows),
        # users uniformly at random inside the tenant.
        self.tenant_of = np.arange(rows) % tenants
        self.user_of = rng.integers(0, users, size=rows)
        self.center_of = rng.integers(0, n_centers, size=rows)
        self.status_of = rng.choice([1, 2, 3, 4], size=rows, p=[0.85, 0.08, 0.05, 0.02])
        self.expire_kind = rng.choice([0, 1, 2], size=rows, p=[0.7, 0.2, 0.1])
        self.rng_seed_content = int(rng.integers(0, 2**31))
        self.rows_by_tenant: dict[int, list[int]] = {}
        for i in range(rows):
            self.rows_by_tenant.setdefault(int(self.tenant_of[i]), []).append(i)

    def vectors(self, idx: Any, salt: int = 0) -> Any:
        np = self.np
        rng = np.random.default_rng((self.seed, 7, salt, int(idx[0]) if len(idx) else 0))
        noise = rng.standard_normal((len(idx), DIM)).astype(np.float32)
        v = self.centers[self.center_of[idx] % len(self.centers)] + 0.6 * noise / np.sqrt(DIM) * 8
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    @staticmethod
    def sentence(rng: random.Random) -> str:
        parts: list[str] = []
        target = rng.randint(20, 200)
        length = 0
        while length < target:
            if rng.random() < 0.5:
                seg = "".join(
                    rng.choice(ZH_GLUE) + rng.choice(ZH_WORDS) for _ in range(rng.randint(1, 3))
                )
            else:
                seg = " ".join(
                    rng.choice(EN_GLUE) + " " + rng.choice(EN_WORDS)
                    for _ in range(rng.randint(1, 3))
                )
            parts.append(seg)
            length += len(seg) + 1
        text = "\uff0c".join(parts)  # fullwidth comma
        return text[:200] if len(text) > 200 else text

    def row(self, i: int, vec: Any, rng: random.Random, id_: str | None = None) -> dict[str, Any]:
        t = int(self.tenant_of[i % self.rows])
        u = int(self.user_of[i % self.rows])
        ek = int(self.expire_kind[i % self.rows])
        created = NOW_MS - rng.randint(0, 200) * DAY_MS
        expire = 0 if ek == 0 else (NOW_MS + 30 * DAY_MS if ek == 1 else NOW_MS - DAY_MS)
        content = self.sentence(rng)
        return {
            "id": id_ or make_id("m", i),
            "tenant_id": tenant_name(t),
            "user_id": user_name(t, u),
            "agent_scope": f"agent{rng.randint(0, 3)}",
            "session_id": f"s{rng.randint(0, 10_000):08d}",
            "type": rng.randint(1, 8),
            "tier": rng.randint(0, 2),
            "status": int(self.status_of[i % self.rows]),
            "topic_key": f"topic/{rng.choice(EN_WORDS)}/{rng.randint(0, 50)}",
            "content": content,
            "content_hash": hashlib.sha256(content.encode()).hexdigest(),
            "importance": round(rng.random(), 3),
            "confidence": round(rng.random(), 3),
            "source": rng.choice(["chat", "import", "tool", "summary"]),
            "tags": [rng.choice(EN_WORDS) for _ in range(rng.randint(0, 4))],
            "metadata": {"lang": "mixed", "n": rng.randint(0, 9)},
            "created_at": created,
            "occurred_at": created,
            "updated_at": created,
            "expire_at": expire,
            "valid_to": 0,
            "supersedes_id": "",
            "superseded_by_id": "",
            "version": 1,
            "embedding_model": "use-m3-512",
            "embedding": vec,
        }

    def rows_for(self, idx: list[int]) -> list[dict[str, Any]]:
        np = self.np
        arr = np.asarray(idx)
        vecs = self.vectors(arr)
        rng = random.Random(self.rng_seed_content * 1_000_003 + (idx[0] if idx else 0))
        return [self.row(i, vecs[k], rng) for k, i in enumerate(idx)]

    def queries(self, n: int) -> list[dict[str, Any]]:
        """A fixed pool of queries: (tenant, user, vector, bm25 text, ids of that tenant)."""
        np = self.np
        rng = random.Random(self.seed * 31 + 5)
        out = []
        qrng = np.random.default_rng((self.seed, 99))
        for k in range(n):
            i = rng.randrange(self.rows)  # a real row: its (tenant, user) exist
            t = int(self.tenant_of[i])
            u = int(self.user_of[i])
            v = (
                self.centers[self.center_of[i] % len(self.centers)]
                + 0.5 * qrng.standard_normal(DIM).astype(np.float32) / np.sqrt(DIM) * 8
            )
            v = (v / np.linalg.norm(v)).astype(np.float32)
            ids = [make_id("m", j) for j in rng.sample(self.rows_by_tenant[t], 10)]
            out.append(
                {
                    "tenant": tenant_name(t),
                    "user": user_name(t, u),
                    "vec": v.tolist(),
                    "text": BM25_QUERIES[k % len(BM25_QUERIES)],
                    "ids": ids,
                }
            )
        return out
