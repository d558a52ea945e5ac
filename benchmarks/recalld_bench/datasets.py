"""Seeded, bilingual synthetic memories spread over many tenants and users.

The same (seed, size, tenants, users) always gives the same memories and queries,
so runs on different days or machines load identical data. Lengths and the type
mix follow what agents store: short facts and preferences, medium events and
decisions, a few long summaries; about half English, 40% Chinese, 10% mixed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Iterator
from pathlib import Path

DAY_MS = 86_400_000
NOW_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: a fixed clock keeps the data reproducible

CITIES = [
    ("Hangzhou", "杭州"),
    ("Shanghai", "上海"),
    ("Berlin", "柏林"),
    ("Lisbon", "里斯本"),
    ("Shenzhen", "深圳"),
    ("Toronto", "多伦多"),
    ("Chengdu", "成都"),
    ("Osaka", "大阪"),
    ("Nairobi", "内罗毕"),
    ("Austin", "奥斯汀"),
    ("Wuhan", "武汉"),
    ("Madrid", "马德里"),
]
FOODS = [
    ("americano without sugar", "不加糖的美式咖啡"),
    ("spicy hotpot", "麻辣火锅"),
    ("oat milk latte", "燕麦拿铁"),
    ("green tea", "绿茶"),
    ("dumplings", "饺子"),
    ("sushi", "寿司"),
    ("vegetarian curry", "素咖喱"),
    ("dark chocolate", "黑巧克力"),
    ("beef noodles", "牛肉面"),
    ("sparkling water", "气泡水"),
]
ALLERGIES = [
    ("peanuts", "花生"),
    ("shellfish", "贝类"),
    ("lactose", "乳糖"),
    ("gluten", "麸质"),
    ("pollen", "花粉"),
    ("penicillin", "青霉素"),
]
LANGS = [
    ("Rust", "Rust"),
    ("Go", "Go"),
    ("TypeScript", "TypeScript"),
    ("Python", "Python"),
    ("Kotlin", "Kotlin"),
    ("C++", "C++"),
    ("Elixir", "Elixir"),
    ("SQL", "SQL"),
]
TOOLS = [
    ("PostgreSQL", "PostgreSQL"),
    ("Kubernetes", "Kubernetes"),
    ("Redis", "Redis"),
    ("Kafka", "Kafka"),
    ("Milvus", "Milvus"),
    ("Grafana", "Grafana"),
    ("Terraform", "Terraform"),
]
PROJECTS = [
    ("the billing migration", "计费系统迁移"),
    ("the mobile app redesign", "移动端改版"),
    ("the search relaunch", "搜索重构"),
    ("the data warehouse", "数据仓库"),
    ("the onboarding flow", "新用户引导流程"),
    ("the Q3 roadmap", "第三季度路线图"),
]
PEOPLE = [
    ("Alice", "王芳"),
    ("Bob", "李伟"),
    ("Carol", "张敏"),
    ("David", "刘洋"),
    ("Erin", "陈静"),
    ("Frank", "杨磊"),
    ("Grace", "赵丽"),
    ("Henry", "黄涛"),
]
HOBBIES = [
    ("trail running", "越野跑"),
    ("playing the piano", "弹钢琴"),
    ("rock climbing", "攀岩"),
    ("photography", "摄影"),
    ("chess", "下国际象棋"),
    ("gardening", "园艺"),
]
WEEKDAYS = [
    ("Monday", "周一"),
    ("Tuesday", "周二"),
    ("Wednesday", "周三"),
    ("Thursday", "周四"),
    ("Friday", "周五"),
]

# (type, weight, English templates, Chinese templates). Slots: {city} {food} ...
TEMPLATES: list[tuple[str, float, list[str], list[str]]] = [
    (
        "fact",
        0.25,
        [
            "The user lives in {city}.",
            "The user is allergic to {allergy}.",
            "The user's manager is {person}.",
            "The user works mostly in {lang}.",
            "The user's team runs {tool} in production.",
            "The user's order number is {ident}.",
            "The user has a daughter who is {n} years old and goes to school in {city}.",
        ],
        [
            "用户住在{city}。",
            "用户对{allergy}过敏。",
            "用户的经理是{person}。",
            "用户主要用{lang}写代码。",
            "用户的团队在生产环境使用{tool}。",
            "用户的订单号是{ident}。",
            "用户有一个{n}岁的女儿，在{city}上学。",
        ],
    ),
    (
        "preference",
        0.20,
        [
            "The user prefers {food}.",
            "The user likes {hobby} on weekends.",
            "The user prefers short answers with code examples in {lang}.",
            "The user does not want meetings on {day} mornings.",
        ],
        [
            "用户喜欢{food}。",
            "用户周末喜欢{hobby}。",
            "用户希望回答简短，并附上{lang}代码示例。",
            "用户不希望在{day}上午开会。",
        ],
    ),
    (
        "event",
        0.25,
        [
            "On {day} the user met {person} in {city} to discuss {project}; they agreed to ship "
            "the first milestone in {n} weeks.",
            "The user flew to {city} for a conference about {tool} and gave a talk on {lang}.",
            "The user reported ticket {ident}: the {tool} cluster ran out of disk during "
            "{project}.",
        ],
        [
            "{day}用户在{city}和{person}讨论了{project}，约定{n}周内交付第一个里程碑。",
            "用户去{city}参加了关于{tool}的会议，并做了一个关于{lang}的分享。",
            "用户提交了工单{ident}：{project}期间{tool}集群磁盘满了。",
        ],
    ),
    (
        "state",
        0.05,
        [
            "The user is currently on a business trip in {city}.",
            "The user is on parental leave until {day}.",
        ],
        ["用户目前在{city}出差。", "用户在休育儿假，{day}回来。"],
    ),
    (
        "decision",
        0.08,
        [
            "The team decided to move {project} from {tool} to {tool2} after the outage {ident}.",
            "The user decided to learn {lang} this quarter.",
        ],
        [
            "团队决定在故障{ident}之后把{project}从{tool}迁移到{tool2}。",
            "用户决定本季度学习{lang}。",
        ],
    ),
    (
        "task",
        0.07,
        [
            "Remind the user to renew the {tool} licence before {day}.",
            "The user needs to send the {project} report to {person} by {day}.",
        ],
        ["提醒用户在{day}之前续订{tool}许可证。", "用户需要在{day}前把{project}报告发给{person}。"],
    ),
    (
        "skill",
        0.05,
        ["The user is an expert in {lang} and has {n} years of experience with {tool}."],
        ["用户精通{lang}，有{n}年{tool}使用经验。"],
    ),
    (
        "summary",
        0.05,
        [
            "Summary of the session: the user worked on {project} with {person}. They debugged a "
            "{tool} timeout, agreed that {lang} services should retry with backoff, and noted that "
            "ticket {ident} is still open. The user asked to be reminded on {day} and mentioned a "
            "trip to {city}. Next steps: benchmark the new index, write the runbook, and review "
            "the alert thresholds with the on-call rotation."
        ],
        [
            "会话摘要：用户和{person}一起处理{project}。他们排查了{tool}超时问题，约定{lang}服务"
            "应当带退避重试，并记录工单{ident}仍未关闭。用户希望{day}提醒他，并提到要去{city}出差。"
            "下一步：对新索引做基准测试，编写运行手册，并和值班同事一起检查告警阈值。"
        ],
    ),
]
TYPE_WEIGHTS = [t[1] for t in TEMPLATES]

QUERIES_EN = [
    "Where does the user live?",
    "What is the user allergic to?",
    "What does the user like to drink?",
    "Who is the user's manager?",
    "What happened with the {tool} cluster?",
    "What did we decide about {project}?",
    "Which programming language does the user prefer?",
    "Any open tickets?",
    "What should I remind the user about?",
    "What does the user do on weekends?",
    "order {ident}",
    "When is the next {project} milestone?",
]
QUERIES_ZH = [
    "用户住在哪里？",
    "用户对什么过敏？",
    "用户喜欢喝什么？",
    "用户的经理是谁？",
    "{tool}集群出了什么问题？",
    "{project}有什么决定？",
    "用户喜欢用什么编程语言？",
    "还有没关闭的工单吗？",
    "需要提醒用户什么？",
    "用户周末做什么？",
]


@dataclasses.dataclass(frozen=True, slots=True)
class DatasetSpec:
    memories: int = 10_000
    tenants: int = 100
    users_per_tenant: int = 10
    seed: int = 42

    @property
    def name(self) -> str:
        return f"m{self.memories}-t{self.tenants}-u{self.users_per_tenant}-s{self.seed}"


@dataclasses.dataclass(frozen=True, slots=True)
class GenMemory:
    tenant: str
    user: str
    type: str
    tier: str
    content: str
    importance: float
    confidence: float
    occurred_at_ms: int
    topic_key: str
    tags: tuple[str, ...]
    lang: str

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def tenant_name(i: int) -> str:
    return f"bench-t{i:03d}"


def user_name(i: int) -> str:
    return f"u{i:04d}"


def _slots(rng: random.Random, zh: bool) -> dict[str, str]:
    pick = 1 if zh else 0
    tool, tool2 = rng.sample(TOOLS, 2)
    return {
        "city": rng.choice(CITIES)[pick],
        "food": rng.choice(FOODS)[pick],
        "allergy": rng.choice(ALLERGIES)[pick],
        "lang": rng.choice(LANGS)[pick],
        "tool": tool[pick],
        "tool2": tool2[pick],
        "project": rng.choice(PROJECTS)[pick],
        "person": rng.choice(PEOPLE)[pick],
        "hobby": rng.choice(HOBBIES)[pick],
        "day": rng.choice(WEEKDAYS)[pick],
        "n": str(rng.randint(2, 15)),
        "ident": f"{rng.choice(['SO', 'INC', 'PO', 'JIRA'])}-{rng.randint(10000, 99999)}",
    }


def _content(rng: random.Random, type_index: int) -> tuple[str, str]:
    _, _, en, zh = TEMPLATES[type_index]
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(en).format(**_slots(rng, False)), "en"
    if roll < 0.9:
        return rng.choice(zh).format(**_slots(rng, True)), "zh"
    # Mixed: a Chinese sentence followed by an English one (code-switching notes).
    first = rng.choice(zh).format(**_slots(rng, True))
    second = rng.choice(en).format(**_slots(rng, False))
    return f"{first} {second}", "mixed"


def users_of(spec: DatasetSpec) -> list[tuple[str, str]]:
    return [
        (tenant_name(t), user_name(u))
        for t in range(spec.tenants)
        for u in range(spec.users_per_tenant)
    ]


def memory_counts(spec: DatasetSpec) -> list[int]:
    """Memories per user: skewed (a few heavy users), summing exactly to spec.memories."""
    rng = random.Random(spec.seed * 7919 + 1)
    users = spec.tenants * spec.users_per_tenant
    weights = [rng.lognormvariate(0.0, 1.0) for _ in range(users)]
    total = sum(weights)
    floor = 1 if spec.memories >= users else 0  # tiny datasets leave some users empty
    counts = [max(floor, int(spec.memories * w / total)) for w in weights]
    diff = spec.memories - sum(counts)
    order = sorted(range(users), key=lambda i: -weights[i])
    i = 0
    while diff != 0:
        j = order[i % users]
        if diff > 0:
            counts[j] += 1
            diff -= 1
        elif counts[j] > floor:
            counts[j] -= 1
            diff += 1
        i += 1
    return counts


def generate(spec: DatasetSpec) -> Iterator[GenMemory]:
    """Every memory of the dataset, user by user (deterministic)."""
    rng = random.Random(spec.seed)
    tiers = ["P0", "P1", "P2"]
    for (tenant, user), count in zip(users_of(spec), memory_counts(spec), strict=True):
        topics_used: set[str] = set()
        for _ in range(count):
            type_index = rng.choices(range(len(TEMPLATES)), weights=TYPE_WEIGHTS)[0]
            kind = TEMPLATES[type_index][0]
            content, lang = _content(rng, type_index)
            topic = ""
            if kind in ("fact", "preference") and rng.random() < 0.3:
                candidate = f"{kind}.{len(topics_used)}"
                topics_used.add(candidate)
                topic = candidate
            age_days = rng.uniform(0, 10) if kind == "event" else rng.uniform(0, 120)
            yield GenMemory(
                tenant=tenant,
                user=user,
                type=kind,
                tier=rng.choices(tiers, weights=[0.03, 0.7, 0.27])[0],
                content=content,
                importance=round(rng.uniform(0.2, 0.9), 2),
                confidence=round(rng.uniform(0.6, 1.0), 2),
                occurred_at_ms=NOW_MS - int(age_days * DAY_MS),
                topic_key=topic,
                tags=tuple(rng.sample(["work", "health", "travel", "family", "food"], 1)),
                lang=lang,
            )


def queries(spec: DatasetSpec, count: int, seed_offset: int = 0) -> list[tuple[str, str, str]]:
    """(tenant, user, query text) triples drawn uniformly over users (deterministic)."""
    rng = random.Random(spec.seed * 31 + 7 + seed_offset)
    users = users_of(spec)
    out = []
    for _ in range(count):
        tenant, user = rng.choice(users)
        zh = rng.random() < 0.45
        template = rng.choice(QUERIES_ZH if zh else QUERIES_EN)
        out.append((tenant, user, template.format(**_slots(rng, zh))))
    return out


def write_jsonl(spec: DatasetSpec, path: Path) -> str:
    """Writes the dataset as JSON Lines; returns its SHA-256 (the reproducibility check)."""
    digest = hashlib.sha256()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for memory in generate(spec):
            line = json.dumps(memory.to_json(), ensure_ascii=False) + "\n"
            digest.update(line.encode())
            out.write(line)
    return digest.hexdigest()


def summary(spec: DatasetSpec) -> dict[str, object]:
    types: dict[str, int] = {}
    langs: dict[str, int] = {}
    lengths: list[int] = []
    digest = hashlib.sha256()
    for m in generate(spec):
        types[m.type] = types.get(m.type, 0) + 1
        langs[m.lang] = langs.get(m.lang, 0) + 1
        lengths.append(len(m.content))
        digest.update(m.content.encode())
    lengths.sort()
    return {
        "name": spec.name,
        "memories": spec.memories,
        "tenants": spec.tenants,
        "users": spec.tenants * spec.users_per_tenant,
        "types": types,
        "languages": langs,
        "content_chars_p50": lengths[len(lengths) // 2],
        "content_chars_p90": lengths[int(len(lengths) * 0.9)],
        "content_chars_max": lengths[-1],
        "sha256": digest.hexdigest(),
    }
