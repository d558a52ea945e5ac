"""Seeded bilingual conversations for SessionService, and their loader.

A session is an agent's conversation with one user of the dataset: user and
assistant turns alternating, about half English, 40% Chinese and 10% mixed
(code-switching turn by turn), on support, planning, coding and scheduling
topics, with identifiers (order and ticket numbers) that come back later in the
conversation and preference statements ("I prefer ...", "我不吃..."). The same
(dataset, sessions, messages, seed) always gives the same sessions and messages.

`load` appends them through AppendMessages in batches (one session's batches in
order, sessions concurrently) without extraction, so loading costs nothing of
the model; sessions longer than the server's window fold into its summary at
append time, as they would in use.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import random
import time
from collections.abc import Iterator
from typing import Any

import grpc

from benchmarks.recalld_bench import datasets
from recalld.v1 import session_service_pb2, session_service_pb2_grpc


@dataclasses.dataclass(frozen=True, slots=True)
class SessionSpec:
    """How many sessions of how many messages, over the users of `dataset`."""

    dataset: datasets.DatasetSpec = dataclasses.field(default_factory=datasets.DatasetSpec)
    sessions: int = 1000
    messages: int = 200
    seed: int = 7

    @property
    def name(self) -> str:
        return f"{self.dataset.name}-c{self.sessions}x{self.messages}-s{self.seed}"


@dataclasses.dataclass(frozen=True, slots=True)
class SessionKey:
    tenant: str
    user: str
    session_id: str


# (English, Chinese) turn pairs: the user's turn, then the assistant's answer. Slots as
# in datasets._slots plus {order}; the order and ticket numbers, city, person and
# project stay fixed within a session (they come back turn after turn).
TURNS: list[tuple[tuple[str, str], tuple[str, str]]] = [
    (
        (
            "Hi, my order {order} still hasn't arrived in {city}. Can you check where it is?",
            "你好，我的订单{order}还没送到{city}，能帮我查一下到哪了吗？",
        ),
        (
            "I checked order {order}: it left the warehouse yesterday and should reach {city} "
            "within {n} days. I'll tell you if the carrier reports a delay.",
            "我查了订单{order}：昨天已经出库，预计{n}天内送到{city}。如果快递有延误我会告诉你。",
        ),
    ),
    (
        (
            "By the way, I prefer {food}. Please remember that for next time.",
            "顺便说一下，我比较喜欢{food}，下次请记住。",
        ),
        (
            "Noted: you prefer {food}. I'll keep it in mind when I suggest places.",
            "好的，记住了：你喜欢{food}。以后推荐地方时我会考虑。",
        ),
    ),
    (
        (
            "I'm allergic to {allergy}; keep that in mind for the dinner in {city}.",
            "我对{allergy}过敏，在{city}的晚餐请注意这一点。",
        ),
        (
            "Understood, no {allergy}. I picked {n} places in {city} that can accommodate it.",
            "明白，避开{allergy}。我在{city}挑了{n}家能照顾到这一点的餐厅。",
        ),
    ),
    (
        (
            "Can you draft a short update to {person} about {project}?",
            "能帮我给{person}写一条关于{project}的简短进展吗？",
        ),
        (
            "Here is a draft: 'Hi {person}, quick update on {project}: the first milestone is on "
            "track for {n} weeks from now; the open risk is the {tool} upgrade.'",
            "草稿如下：'{person}你好，{project}进展：第一个里程碑预计{n}周后完成，"
            "目前的风险是{tool}升级。'",
        ),
    ),
    (
        (
            "We're seeing timeouts in the {tool} cluster again, ticket {ident}. Any idea?",
            "{tool}集群又超时了，工单{ident}。有什么思路吗？",
        ),
        (
            "For the {tool} timeouts in {ident}, check the connection pool size first, then raise "
            "the client deadline to {n} seconds and watch the p99 for an hour.",
            "关于{ident}里的{tool}超时：先检查连接池大小，再把客户端超时调到{n}秒，观察一小时的p99。",
        ),
    ),
    (
        (
            "Show me how to retry with exponential backoff in {lang}.",
            "用{lang}怎么写指数退避重试？",
        ),
        (
            "In {lang}, wrap the call in a loop that doubles the wait after each failure, adds "
            "jitter, and gives up after {n} attempts; only retry errors that are transient.",
            "在{lang}里，把调用放进循环，每次失败后等待时间翻倍并加上随机抖动，最多重试{n}次；"
            "只重试临时性错误。",
        ),
    ),
    (
        (
            "Please don't schedule anything on {day} mornings, I have a standing call.",
            "{day}上午请不要给我安排会议，我有固定的电话会。",
        ),
        (
            "Okay, I'll keep your {day} mornings free and move the review to the afternoon.",
            "好的，{day}上午给你空出来，评审挪到下午。",
        ),
    ),
    (
        (
            "I'm flying to {city} next week for {project}. Anything I should prepare?",
            "我下周要去{city}处理{project}，需要准备什么？",
        ),
        (
            "For {city}: book a hotel near the office, keep {n} hours between connecting flights, "
            "and bring the {project} slides on a USB stick in case the projector fails.",
            "去{city}的话：订公司附近的酒店，转机留出{n}小时，再把{project}的幻灯片拷到U盘以防投影出问题。",
        ),
    ),
    (
        (
            "What was the status of {ident} again?",
            "{ident}现在是什么状态来着？",
        ),
        (
            "{ident} is still open: the last update says the fix is in review and should ship "
            "within {n} days.",
            "{ident}还没关闭：最新进展是修复正在评审，预计{n}天内上线。",
        ),
    ),
    (
        (
            "Let's move {project} from {tool} to {tool2}; the costs keep going up.",
            "我们把{project}从{tool}迁到{tool2}吧，成本一直在涨。",
        ),
        (
            "Agreed. A safe path: run {tool2} in shadow mode for {n} days, compare the results, "
            "then switch the writes and keep {tool} read-only for a week.",
            "同意。稳妥的做法是先让{tool2}影子运行{n}天，对比结果后再切写流量，{tool}保留只读一周。",
        ),
    ),
    (
        (
            "I like {hobby} on weekends, so keep Saturday free if you can.",
            "我周末喜欢{hobby}，周六尽量别安排事情。",
        ),
        (
            "Got it, Saturdays stay free for {hobby}. I'll put errands on Friday evening instead.",
            "明白，周六留给{hobby}，杂事我安排到周五晚上。",
        ),
    ),
    (
        (
            "Remind me to renew the {tool} licence before {day}.",
            "提醒我{day}之前续订{tool}的许可证。",
        ),
        (
            "Reminder set: renew the {tool} licence before {day}. I'll ping you {n} days ahead.",
            "已设置提醒：{day}前续订{tool}许可证，我会提前{n}天提醒你。",
        ),
    ),
]
SESSION_LANGS = (("en", 0.5), ("zh", 0.4), ("mixed", 0.1))


def session_keys(spec: SessionSpec) -> list[SessionKey]:
    """The sessions, spread round-robin over the dataset's users (deterministic)."""
    users = datasets.users_of(spec.dataset)
    return [SessionKey(*users[i % len(users)], f"bench-s{i:05d}") for i in range(spec.sessions)]


def conversation(spec: SessionSpec, index: int) -> list[tuple[str, str]]:
    """Session `index`'s messages as (role, content), user and assistant alternating."""
    return _conversation(spec, index)[1]


def _conversation(spec: SessionSpec, index: int) -> tuple[str, list[tuple[str, str]]]:
    rng = random.Random(spec.seed * 1_000_003 + index)
    lang = rng.choices([lang for lang, _ in SESSION_LANGS], [w for _, w in SESSION_LANGS])[0]
    fixed = {zh: datasets._slots(rng, zh) for zh in (False, True)}
    order = f"{rng.choice(['SO', 'PO'])}-{rng.randint(10000, 99999)}"
    out: list[tuple[str, str]] = []
    while len(out) < spec.messages:
        (user_en, user_zh), (assistant_en, assistant_zh) = rng.choice(TURNS)
        zh = lang == "zh" or (lang == "mixed" and rng.random() < 0.5)
        slots = datasets._slots(rng, zh)
        # The session's order number, city, person and project come back turn after turn.
        for key in ("ident", "city", "person", "project"):
            slots[key] = fixed[zh][key]
        slots["order"] = order
        user = (user_zh if zh else user_en).format(**slots)
        if lang == "mixed" and rng.random() < 0.3:
            user += " " + (user_en if zh else user_zh).format(**slots)
        out.append(("user", user))
        if len(out) < spec.messages:
            out.append(("assistant", (assistant_zh if zh else assistant_en).format(**slots)))
    return lang, out


def summary(spec: SessionSpec) -> dict[str, Any]:
    """Counts, lengths and a SHA-256 of every message (the reproducibility check)."""
    digest = hashlib.sha256()
    lengths: list[int] = []
    languages: dict[str, int] = {}
    for i in range(spec.sessions):
        lang, messages = _conversation(spec, i)
        languages[lang] = languages.get(lang, 0) + 1
        for role, content in messages:
            digest.update(f"{role}:{content}\n".encode())
            lengths.append(len(content))
    lengths.sort()
    return {
        "name": spec.name,
        "sessions": spec.sessions,
        "messages_per_session": spec.messages,
        "messages": len(lengths),
        "users": len({(k.tenant, k.user) for k in session_keys(spec)}),
        "languages": languages,
        "content_chars_p50": lengths[len(lengths) // 2] if lengths else 0,
        "content_chars_p90": lengths[int(len(lengths) * 0.9)] if lengths else 0,
        "sha256": digest.hexdigest(),
    }


ROLES = {
    "user": session_service_pb2.MESSAGE_ROLE_USER,
    "assistant": session_service_pb2.MESSAGE_ROLE_ASSISTANT,
}


def _requests(
    spec: SessionSpec, batch: int
) -> Iterator[tuple[SessionKey, list[session_service_pb2.AppendMessagesRequest]]]:
    for i, key in enumerate(session_keys(spec)):
        messages = [
            session_service_pb2.Message(role=ROLES[role], content=content)
            for role, content in conversation(spec, i)
        ]
        yield (
            key,
            [
                session_service_pb2.AppendMessagesRequest(
                    user_id=key.user,
                    session_id=key.session_id,
                    messages=messages[j : j + batch],
                    extract=False,
                )
                for j in range(0, len(messages), batch)
            ],
        )


async def load(
    address: str,
    spec: SessionSpec,
    concurrency: int = 4,
    batch: int = 20,
    timeout_s: float = 60.0,
) -> dict[str, Any]:
    """Appends every session's messages; returns counts, errors and throughput."""
    errors: dict[str, int] = {}
    appended = 0
    calls = 0
    window_messages: list[int] = []
    summarized: list[int] = []
    sessions = _requests(spec, batch)
    started = time.perf_counter()
    async with grpc.aio.insecure_channel(address) as channel:
        stub = session_service_pb2_grpc.SessionServiceStub(channel)

        async def worker() -> None:
            nonlocal appended, calls
            for key, requests in sessions:  # a shared iterator: each session is taken once
                response = None
                for request in requests:  # in order: a session's batches never interleave
                    try:
                        response = await stub.AppendMessages(
                            request,
                            timeout=timeout_s,
                            metadata=(("x-recalld-tenant", key.tenant),),
                        )
                    except grpc.aio.AioRpcError as error:
                        name = error.code().name
                        errors[name] = errors.get(name, 0) + len(request.messages)
                        continue
                    calls += 1
                    appended += len(response.messages)
                if response is not None:
                    window_messages.append(response.session.window_message_count)
                    summarized.append(response.session.summarized_message_count)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return {
        "sessions": spec.sessions,
        "messages_per_session": spec.messages,
        "appended": appended,
        "calls": calls,
        "errors": errors,
        "seconds": elapsed,
        "messages_per_s": appended / elapsed if elapsed else 0.0,
        "calls_per_s": calls / elapsed if elapsed else 0.0,
        "concurrency": concurrency,
        "batch": batch,
        "window_messages_mean": sum(window_messages) / len(window_messages)
        if window_messages
        else 0.0,
        "summarized_messages_mean": sum(summarized) / len(summarized) if summarized else 0.0,
    }
