"""The session ports on every adapter: in-memory (the reference), SQLite and real Redis.

The same tests run on each; the adapter-specific ones follow (SQLite durability,
Redis TTLs and an unreachable Redis).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import redis.asyncio as redis_asyncio

from recalld_server.domain.core.conversation import (
    RECENT_REQUESTS,
    ExtractedResult,
    ExtractionJob,
    Message,
    RequestMark,
    Role,
    SessionCursor,
    SessionKey,
)
from recalld_server.domain.core.conversation_ports import Conversations, ExtractionQueue
from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.model import WriteOutcome
from recalld_server.storage.circuit import CircuitBreaker
from recalld_server.storage.memory_conversations import (
    InMemoryConversations,
    InMemoryExtractionQueue,
)
from recalld_server.storage.redis_conversations import RedisConversations
from recalld_server.storage.redis_extraction_queue import RedisExtractionQueue
from recalld_server.storage.redis_session_layout import index_key, messages_key, session_key
from recalld_server.storage.sqlite_conversations import SqliteConversations, open_sessions
from recalld_server.storage.sqlite_extraction_queue import SqliteExtractionQueue
from recalld_server.storage.sqlite_file import SqliteFile
from tests.services import RedisProcess, free_port

ADAPTERS = ["memory", "sqlite", "redis"]


@dataclasses.dataclass
class Ports:
    name: str
    sessions: Conversations
    jobs: ExtractionQueue


@pytest.fixture(params=ADAPTERS)
async def ports(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Ports]:
    closers: list[Callable[[], Awaitable[None]]] = []
    sessions: Conversations
    jobs: ExtractionQueue
    if request.param == "memory":
        sessions, jobs = InMemoryConversations(), InMemoryExtractionQueue()
    elif request.param == "sqlite":
        sqlite_sessions, sqlite_jobs = await open_sessions(tmp_path / "sessions.sqlite3")
        sessions, jobs = sqlite_sessions, sqlite_jobs
        closers += [sqlite_sessions.close, sqlite_jobs.close]
    else:
        server: RedisProcess = request.getfixturevalue("redis_server")
        raw = redis_asyncio.Redis.from_url(server.url)
        await raw.flushdb()  # the job queue is global: no jobs of earlier tests
        await raw.aclose()
        redis_sessions = RedisConversations.from_url(server.url, CircuitBreaker("sessions"))
        redis_jobs = RedisExtractionQueue.from_url(server.url, CircuitBreaker("jobs"))
        sessions, jobs = redis_sessions, redis_jobs
        closers += [redis_sessions.close, redis_jobs.close]
    yield Ports(request.param, sessions, jobs)
    for close in closers:
        await close()


def _key(session_id: str = "s1", user_id: str = "u1", tenant_id: str = "") -> SessionKey:
    return SessionKey(tenant_id or f"t-{uuid.uuid4().hex[:8]}", user_id, session_id)


def _msgs(*contents: str, tokens: int = 3, at: int = 1000) -> list[Message]:
    roles = (Role.USER, Role.ASSISTANT)
    return [
        Message(role=roles[i % 2], content=c, created_at=at + i, token_count=tokens)
        for i, c in enumerate(contents)
    ]


def _job(key: SessionKey, first: int, last: int, created_at: int = 1000) -> ExtractionJob:
    return ExtractionJob(
        key=key,
        agent_scope="agent",
        first_seq=first,
        last_seq=last,
        messages=tuple(
            dataclasses.replace(m, seq=first + i)
            for i, m in enumerate(_msgs(*(f"m{s}" for s in range(first, last + 1))))
        ),
        created_at=created_at,
    )


# --- Sessions ------------------------------------------------------------------------------


async def test_the_first_append_creates_the_session(ports: Ports) -> None:
    key = _key()
    assert await ports.sessions.get(key) is None
    assert await ports.sessions.window(key) is None
    session, stored = await ports.sessions.append(
        key, "agent-a", _msgs("hi", "hello"), 5000, None, False
    )
    assert session.key == key
    assert (session.agent_scope, session.created_at, session.updated_at) == ("agent-a", 5000, 5000)
    assert session.ended_at == 0 and session.summary == "" and session.summarized_through == 0
    assert [m.seq for m in stored] == [1, 2]
    again, _ = await ports.sessions.append(key, "agent-b", _msgs("more"), 6000, None, False)
    assert again.agent_scope == "agent-a"  # the scope is the creating append's
    assert (again.created_at, again.updated_at) == (5000, 6000)
    assert await ports.sessions.get(key) == again


async def test_messages_are_numbered_across_appends(ports: Ports) -> None:
    key = _key()
    _, first = await ports.sessions.append(key, "a", _msgs("1", "2", "3"), 1, None, False)
    _, second = await ports.sessions.append(key, "a", _msgs("4", "5"), 2, None, False)
    assert [m.seq for m in first] == [1, 2, 3]
    assert [(m.seq, m.content) for m in second] == [(4, "4"), (5, "5")]
    session, _ = await ports.sessions.append(key, "a", [], 3, None, False)
    assert session.message_count == 5


async def test_counters_and_window_tokens_grow_with_appends(ports: Ports) -> None:
    key = _key()
    await ports.sessions.append(key, "a", _msgs("a", "b", tokens=4), 1, None, False)
    session, _ = await ports.sessions.append(key, "a", _msgs("c", tokens=7), 2, None, False)
    assert session.message_count == 3
    assert session.token_count == 15
    assert session.window_token_count == 15
    assert session.window_message_count == 3
    assert await ports.sessions.get(key) == session


async def test_request_marks_are_remembered_with_their_seqs_and_bounded(ports: Ports) -> None:
    key = _key()
    mark = RequestMark("req-1", "fp-1", 0, 0)
    session, _ = await ports.sessions.append(key, "a", _msgs("x", "y"), 1, mark, False)
    assert session.request("req-1") == RequestMark("req-1", "fp-1", 1, 2)
    for i in range(RECENT_REQUESTS + 5):
        session, _ = await ports.sessions.append(
            key, "a", _msgs(f"n{i}"), 2 + i, RequestMark(f"r{i}", f"f{i}", 0, 0), False
        )
    assert len(session.recent_requests) == RECENT_REQUESTS
    assert session.request("req-1") is None
    assert session.request("r4") is None
    assert session.request("r5") is not None
    last = RECENT_REQUESTS + 4
    assert session.request(f"r{last}") == RequestMark(f"r{last}", f"f{last}", last + 3, last + 3)
    stored = await ports.sessions.get(key)
    assert stored is not None and stored.recent_requests == session.recent_requests


async def test_extract_moves_requested_through(ports: Ports) -> None:
    key = _key()
    session, _ = await ports.sessions.append(key, "a", _msgs("1", "2"), 1, None, False)
    assert session.extraction.requested_through == 0
    session, _ = await ports.sessions.append(key, "a", _msgs("3", "4"), 2, None, True)
    assert session.extraction.requested_through == 4
    session, _ = await ports.sessions.append(key, "a", _msgs("5"), 3, None, False)
    assert session.extraction.requested_through == 4
    stored = await ports.sessions.get(key)
    assert stored is not None and stored.extraction.requested_through == 4


async def test_the_window_is_oldest_first(ports: Ports) -> None:
    key = _key()
    await ports.sessions.append(key, "a", _msgs("one", "two"), 1, None, False)
    _, appended = await ports.sessions.append(key, "a", _msgs("three", at=2000), 2, None, False)
    window = await ports.sessions.window(key)
    assert window is not None
    session, messages = window
    assert session.message_count == 3
    assert [(m.seq, m.role, m.content, m.created_at, m.token_count) for m in messages] == [
        (1, Role.USER, "one", 1000, 3),
        (2, Role.ASSISTANT, "two", 1001, 3),
        (3, Role.USER, "three", 2000, 3),
    ]
    assert messages[2] == appended[0]


async def test_fold_is_compare_and_set_and_drops_only_folded_messages(ports: Ports) -> None:
    key = _key()
    await ports.sessions.append(key, "a", _msgs("1", "2", "3", tokens=2), 1, None, False)
    await ports.sessions.append(key, "a", _msgs("4", "5", tokens=5), 2, None, False)
    folded = await ports.sessions.fold(key, 3, "summary of 1-3", 0)
    assert folded is not None
    assert folded.summary == "summary of 1-3"
    assert folded.summarized_through == 3
    assert folded.window_token_count == 10  # 16 - 3 * 2
    assert folded.token_count == 16 and folded.message_count == 5
    assert folded.window_message_count == 2
    assert await ports.sessions.fold(key, 4, "stale", 0) is None  # another fold got there
    window = await ports.sessions.window(key)
    assert window is not None
    assert window[0] == folded
    assert [m.seq for m in window[1]] == [4, 5]
    again = await ports.sessions.fold(key, 4, "summary of 1-4", 3)
    assert again is not None and again.summarized_through == 4 and again.window_token_count == 5
    session, appended = await ports.sessions.append(key, "a", _msgs("6", tokens=1), 3, None, False)
    assert appended[0].seq == 6 and session.window_token_count == 6
    window = await ports.sessions.window(key)
    assert window is not None and [m.seq for m in window[1]] == [5, 6]
    assert await ports.sessions.fold(_key(), 1, "none", 0) is None


async def test_a_session_ends_once(ports: Ports) -> None:
    key = _key()
    await ports.sessions.append(key, "a", _msgs("hi"), 1000, None, False)
    ended = await ports.sessions.end(key, 5000, "mem-1")
    assert ended is not None and ended.ended
    assert (ended.ended_at, ended.updated_at, ended.summary_memory_id) == (5000, 5000, "mem-1")
    again = await ports.sessions.end(key, 9000, "mem-2")
    assert again == ended
    assert await ports.sessions.get(key) == ended
    assert await ports.sessions.end(_key(), 1, "x") is None


async def test_record_extraction_success_and_failure(ports: Ports) -> None:
    key = _key()
    await ports.sessions.append(key, "a", _msgs("1", "2", "3", "4"), 1, None, True)
    results = [
        ExtractedResult("m1", WriteOutcome.CREATED),
        ExtractedResult("m2", WriteOutcome.SUPERSEDED, "m0"),
    ]
    await ports.sessions.record_extraction(key, 2, results, "")
    session = await ports.sessions.get(key)
    assert session is not None
    progress = session.extraction
    assert (progress.requested_through, progress.extracted_through) == (4, 2)
    assert progress.last_results == tuple(results) and progress.last_error == ""
    await ports.sessions.record_extraction(
        key, 4, [ExtractedResult("ignored", WriteOutcome.DRAFT)], "model down"
    )
    session = await ports.sessions.get(key)
    assert session is not None
    assert session.extraction.extracted_through == 2  # a failure moves nothing
    assert session.extraction.last_results == tuple(results)
    assert session.extraction.last_error == "model down"
    await ports.sessions.record_extraction(key, 1, [], "")  # late and lower: never down
    session = await ports.sessions.get(key)
    assert session is not None
    assert session.extraction.extracted_through == 2
    assert session.extraction.last_results == () and session.extraction.last_error == ""
    missing = _key()
    await ports.sessions.record_extraction(missing, 3, results, "")
    assert await ports.sessions.get(missing) is None


async def test_pages_are_newest_first_and_the_cursor_is_exclusive(ports: Ports) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    created: list[tuple[int, str]] = []
    for i in range(23):
        at = 1000 + (i // 4) * 10  # four sessions share each created_at
        session_id = f"s-{(i * 7) % 23:02d}"
        await ports.sessions.append(
            SessionKey(tenant, "u1", session_id), "a", _msgs("x"), at, None, False
        )
        created.append((at, session_id))
    await ports.sessions.append(
        SessionKey(tenant, "u2", "other"), "a", _msgs("x"), 9999, None, False
    )
    expected = sorted(created, reverse=True)
    assert [
        (s.created_at, s.key.session_id) for s in await ports.sessions.page(tenant, "u1", None, 100)
    ] == expected
    seen: list[tuple[int, str]] = []
    cursor: SessionCursor | None = None
    while True:
        page = await ports.sessions.page(tenant, "u1", cursor, 5)
        assert len(page) <= 5
        if not page:
            break
        assert all(s.key == SessionKey(tenant, "u1", s.key.session_id) for s in page)
        seen += [(s.created_at, s.key.session_id) for s in page]
        cursor = SessionCursor(page[-1].created_at, page[-1].key.session_id)
    assert seen == expected
    middle = SessionCursor(*expected[9])  # a cursor inside a group of equal created_at
    assert [
        (s.created_at, s.key.session_id) for s in await ports.sessions.page(tenant, "u1", middle, 3)
    ] == expected[10:13]
    assert await ports.sessions.page(tenant, "nobody", None, 10) == []


async def test_sessions_are_confined_to_their_tenant_and_user(ports: Ports) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    other_tenant = f"t-{uuid.uuid4().hex[:8]}"
    mine = SessionKey(tenant, "u1", "same")
    neighbour = SessionKey(tenant, "u2", "same")
    elsewhere = SessionKey(other_tenant, "u1", "same")
    await ports.sessions.append(mine, "a", _msgs("mine", "mine too"), 1, None, False)
    await ports.sessions.append(neighbour, "b", _msgs("theirs"), 2, None, False)
    await ports.sessions.append(elsewhere, "c", _msgs("far"), 3, None, False)
    for key, contents in (
        (mine, ["mine", "mine too"]),
        (neighbour, ["theirs"]),
        (elsewhere, ["far"]),
    ):
        window = await ports.sessions.window(key)
        assert window is not None and [m.content for m in window[1]] == contents
        assert window[0].key == key
    folded = await ports.sessions.fold(mine, 2, "s", 0)
    assert folded is not None
    neighbour_session = await ports.sessions.get(neighbour)
    assert neighbour_session is not None and neighbour_session.summarized_through == 0
    assert [s.key for s in await ports.sessions.page(tenant, "u1", None, 10)] == [mine]

    await ports.sessions.delete_user(tenant, "u1")
    assert await ports.sessions.get(mine) is None
    assert await ports.sessions.get(neighbour) is not None
    assert await ports.sessions.get(elsewhere) is not None
    await ports.sessions.delete_user(tenant, None)
    assert await ports.sessions.get(neighbour) is None
    assert await ports.sessions.page(tenant, "u2", None, 10) == []
    assert await ports.sessions.get(elsewhere) is not None
    assert [s.key for s in await ports.sessions.page(other_tenant, "u1", None, 10)] == [elsewhere]


async def test_ids_holding_separators_never_collide(ports: Ports) -> None:
    suffix = uuid.uuid4().hex[:8]
    first = SessionKey(f"a:{suffix}", "b:c", "d")
    second = SessionKey("a", f"{suffix}:b", "c:d")
    third = SessionKey(f"a:{suffix}:b", "c", "d")
    for i, key in enumerate((first, second, third)):
        await ports.sessions.append(key, "a", _msgs(f"content {i}"), 1, None, False)
    for i, key in enumerate((first, second, third)):
        window = await ports.sessions.window(key)
        assert window is not None and [m.content for m in window[1]] == [f"content {i}"]
    await ports.sessions.delete_user(first.tenant_id, None)
    assert await ports.sessions.get(first) is None
    assert await ports.sessions.get(second) is not None
    assert await ports.sessions.get(third) is not None


async def test_delete(ports: Ports) -> None:
    key = _key()
    assert await ports.sessions.delete(key) is False
    await ports.sessions.append(key, "a", _msgs("x", "y"), 1, None, False)
    assert await ports.sessions.delete(key) is True
    assert await ports.sessions.get(key) is None
    assert await ports.sessions.window(key) is None
    assert await ports.sessions.page(key.tenant_id, key.user_id, None, 10) == []
    assert await ports.sessions.delete(key) is False
    session, stored = await ports.sessions.append(key, "b", _msgs("new"), 2, None, False)
    assert [m.seq for m in stored] == [1] and session.agent_scope == "b"  # a fresh session
    window = await ports.sessions.window(key)
    assert window is not None and [m.content for m in window[1]] == ["new"]


async def test_concurrent_appends_number_without_gaps_or_duplicates(ports: Ports) -> None:
    key = _key()
    results = await asyncio.gather(
        *(ports.sessions.append(key, "a", _msgs(f"m{i}"), 1000 + i, None, False) for i in range(20))
    )
    seqs = sorted(m.seq for _, stored in results for m in stored)
    assert seqs == list(range(1, 21))
    window = await ports.sessions.window(key)
    assert window is not None
    session, messages = window
    assert session.message_count == 20 and session.token_count == 60
    assert [m.seq for m in messages] == list(range(1, 21))
    by_seq = {m.seq: m.content for _, stored in results for m in stored}
    assert [m.content for m in messages] == [by_seq[s] for s in range(1, 21)]


# --- Extraction jobs -----------------------------------------------------------------------


async def test_jobs_are_leased_reclaimed_after_the_lease_and_done(ports: Ports) -> None:
    key = _key()
    job = _job(key, 1, 3, created_at=1000)
    await ports.jobs.put(job)
    await ports.jobs.put(job)  # the same job_id twice is one job
    assert await ports.jobs.claim(999, 500, 10) == []  # not due yet
    claimed = await ports.jobs.claim(1000, 500, 10)
    assert claimed == [dataclasses.replace(job, attempts=1)]
    assert await ports.jobs.claim(1200, 500, 10) == []  # leased
    await ports.jobs.put(job)  # a put while leased changes nothing either
    assert await ports.jobs.claim(1499, 500, 10) == []
    reclaimed = await ports.jobs.claim(1500, 500, 10)
    assert reclaimed == [dataclasses.replace(job, attempts=2)]
    await ports.jobs.done(reclaimed[0])
    assert await ports.jobs.claim(10**9, 500, 10) == []


async def test_claims_are_oldest_first_and_limited(ports: Ports) -> None:
    key = _key()
    jobs = [_job(key, 1 + 2 * i, 2 + 2 * i, created_at=1000 + i) for i in range(5)]
    for job in reversed(jobs):
        await ports.jobs.put(job)
    first = await ports.jobs.claim(2000, 10_000, 2)
    assert [j.job_id for j in first] == [jobs[0].job_id, jobs[1].job_id]
    rest = await ports.jobs.claim(2000, 10_000, 10)
    assert [j.job_id for j in rest] == [j.job_id for j in jobs[2:]]
    assert all(j.attempts == 1 for j in first + rest)
    assert rest[0].messages == jobs[2].messages and rest[0].agent_scope == "agent"


async def test_jobs_are_dropped_by_session_and_by_user(ports: Ports) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    other_tenant = f"t-{uuid.uuid4().hex[:8]}"
    a1 = SessionKey(tenant, "u1", "s1")
    a2 = SessionKey(tenant, "u1", "s10")  # s1 is a prefix of s10: only s1's jobs go
    b1 = SessionKey(tenant, "u2", "s1")
    c1 = SessionKey(other_tenant, "u1", "s1")
    for i, key in enumerate((a1, a2, b1, c1)):
        await ports.jobs.put(_job(key, 1, 2, created_at=1000 + i))
        await ports.jobs.put(_job(key, 3, 4, created_at=1100 + i))

    async def due() -> set[tuple[SessionKey, str]]:
        jobs = await ports.jobs.claim(10**6, 0, 100)  # a zero lease: due again at once
        return {(j.key, j.job_id) for j in jobs}

    everything = await due()
    assert len(everything) == 8
    await ports.jobs.delete_session(a1)
    assert {k for k, _ in await due()} == {a2, b1, c1}
    await ports.jobs.delete_user(tenant, "u1")
    assert {k for k, _ in await due()} == {b1, c1}
    await ports.jobs.delete_user(tenant, None)
    assert {k for k, _ in await due()} == {c1}
    done = await ports.jobs.claim(10**6, 0, 100)
    for job in done:
        await ports.jobs.done(job)
    assert await due() == set()
    await ports.jobs.put(_job(c1, 1, 2))  # done and put again: a new job
    assert {k for k, _ in await due()} == {c1}


async def test_attempts_count_every_claim(ports: Ports) -> None:
    job = _job(_key(), 1, 1)
    await ports.jobs.put(job)
    attempts = [(await ports.jobs.claim(1000 + 100 * i, 100, 1))[0].attempts for i in range(4)]
    assert attempts == [1, 2, 3, 4]


# --- SQLite only ---------------------------------------------------------------------------


async def test_sqlite_keeps_everything_across_close_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "data" / "sessions.sqlite3"
    sessions, jobs = await open_sessions(path)
    key = _key()
    await sessions.append(key, "a", _msgs("1", "2", "3"), 1000, RequestMark("r", "f", 0, 0), True)
    folded = await sessions.fold(key, 1, "one", 0)
    ended = await sessions.end(key, 2000, "mem")
    await sessions.record_extraction(key, 3, [ExtractedResult("m", WriteOutcome.CREATED)], "")
    job = _job(key, 1, 3)
    await jobs.put(job)
    before = await sessions.window(key)
    await sessions.close()
    await jobs.close()
    with pytest.raises(BackendUnavailableError):
        await sessions.get(key)
    assert folded is not None and ended is not None and before is not None

    reopened = await SqliteConversations.open(path)
    queue = await SqliteExtractionQueue.open(path)
    try:
        assert await reopened.window(key) == before
        assert before[0].extraction.extracted_through == 3
        assert [m.seq for m in before[1]] == [2, 3]
        assert await reopened.page(key.tenant_id, key.user_id, None, 5) == [before[0]]
        assert await queue.claim(10**6, 1000, 10) == [dataclasses.replace(job, attempts=1)]
    finally:
        await reopened.close()
        await queue.close()


async def test_sqlite_uses_wal_and_full_sync(tmp_path: Path) -> None:
    file = await SqliteFile.open(tmp_path / "s.sqlite3")
    sessions = SqliteConversations(file)
    try:
        await sessions.append(_key(), "a", _msgs("x"), 1, None, False)
        assert (tmp_path / "s.sqlite3-wal").exists()

        def pragmas(connection: sqlite3.Connection) -> tuple[str, int]:
            mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
            sync = connection.execute("PRAGMA synchronous").fetchone()[0]
            return str(mode), int(sync)

        assert await file.transaction(pragmas, write=False) == ("wal", 2)  # 2: FULL
    finally:
        await sessions.close()
    await sessions.close()  # twice is harmless
    with pytest.raises(BackendUnavailableError):
        await file.transaction(lambda c: None)  # the last adapter closed the file


async def test_sqlite_reports_a_file_it_cannot_open(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a directory")
    with pytest.raises((OSError, sqlite3.Error)):
        await SqliteFile.open(tmp_path / "taken" / "sessions.sqlite3")
    (tmp_path / "garbage.sqlite3").write_bytes(b"not a database" * 100)
    with pytest.raises(sqlite3.Error):
        await SqliteFile.open(tmp_path / "garbage.sqlite3")


# --- Redis only ----------------------------------------------------------------------------


async def test_redis_keys_of_a_session_carry_the_ttl(redis_server: RedisProcess) -> None:
    sessions = RedisConversations.from_url(redis_server.url, CircuitBreaker("s"), ttl_s=60)
    raw = redis_asyncio.Redis.from_url(redis_server.url)
    key = _key()
    try:
        await sessions.append(key, "a", _msgs("x", "y"), 1, None, False)
        for name in (session_key(key), messages_key(key), index_key(key.tenant_id, key.user_id)):
            assert 50_000 < await raw.pttl(name) <= 60_000, name
        await raw.pexpire(session_key(key), 5_000)
        await raw.pexpire(messages_key(key), 5_000)
        await sessions.end(key, 2, "m")  # every change refreshes the TTL
        assert await raw.pttl(session_key(key)) > 50_000
        assert await raw.pttl(messages_key(key)) > 50_000
    finally:
        await sessions.close()
        await raw.aclose()


async def test_redis_without_ttl_keys_do_not_expire(redis_server: RedisProcess) -> None:
    sessions = RedisConversations.from_url(redis_server.url, CircuitBreaker("s"))
    raw = redis_asyncio.Redis.from_url(redis_server.url)
    key = _key()
    try:
        await sessions.append(key, "a", _msgs("x"), 1, None, False)
        assert await raw.pttl(session_key(key)) == -1
        assert await raw.pttl(messages_key(key)) == -1
    finally:
        await sessions.close()
        await raw.aclose()


async def test_redis_expired_sessions_leave_get_and_page(redis_server: RedisProcess) -> None:
    sessions = RedisConversations.from_url(redis_server.url, CircuitBreaker("s"), ttl_s=1)
    raw = redis_asyncio.Redis.from_url(redis_server.url)
    old = _key("old")
    new = SessionKey(old.tenant_id, old.user_id, "new")
    try:
        await sessions.append(old, "a", _msgs("x"), 1000, None, False)
        await asyncio.sleep(0.6)
        await sessions.append(new, "a", _msgs("y"), 2000, None, False)  # keeps the index alive
        await asyncio.sleep(0.6)
        assert await sessions.get(old) is None
        assert await sessions.window(old) is None
        assert await raw.exists(index_key(old.tenant_id, old.user_id))
        assert [s.key for s in await sessions.page(old.tenant_id, old.user_id, None, 10)] == [new]
        members = await raw.zrange(index_key(old.tenant_id, old.user_id), 0, -1)
        assert len(members) == 1  # the expired session's entry was pruned
        recreated, stored = await sessions.append(old, "b", _msgs("z"), 3000, None, False)
        assert [m.seq for m in stored] == [1] and recreated.created_at == 3000
        await asyncio.sleep(1.2)
        assert await sessions.get(new) is None
        assert await sessions.page(old.tenant_id, old.user_id, None, 10) == []
    finally:
        await sessions.close()
        await raw.aclose()


async def test_redis_down_is_backend_unavailable() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    sessions = RedisConversations.from_url(url, CircuitBreaker("sessions"))
    jobs = RedisExtractionQueue.from_url(url, CircuitBreaker("jobs"))
    key = _key()
    try:
        with pytest.raises(BackendUnavailableError):
            await sessions.get(key)
        with pytest.raises(BackendUnavailableError):
            await sessions.append(key, "a", _msgs("x"), 1, None, False)
        with pytest.raises(BackendUnavailableError):
            await sessions.page(key.tenant_id, key.user_id, None, 10)
        with pytest.raises(BackendUnavailableError):
            await jobs.put(_job(key, 1, 1))
        with pytest.raises(BackendUnavailableError):
            await jobs.claim(1, 1, 1)
    finally:
        await sessions.close()
        await jobs.close()


async def test_two_redis_replicas_never_claim_the_same_job(redis_server: RedisProcess) -> None:
    first = RedisExtractionQueue.from_url(redis_server.url, CircuitBreaker("a"))
    second = RedisExtractionQueue.from_url(redis_server.url, CircuitBreaker("b"))
    tenant_sessions = [_key(f"s{i}") for i in range(30)]
    try:
        for key in tenant_sessions:
            await first.put(_job(key, 1, 1, created_at=5))
        # Far in the future: only this test's jobs and any left over are due; count ours.
        claims = await asyncio.gather(
            *(q.claim(10**12, 60_000, 3) for q in (first, second) for _ in range(10))
        )
        ours = [j.key for batch in claims for j in batch if j.key in set(tenant_sessions)]
        assert sorted(ours, key=str) == sorted(tenant_sessions, key=str)
        for key in tenant_sessions:
            await first.delete_session(key)
    finally:
        await first.close()
        await second.close()


async def test_two_redis_replicas_number_appends_together(redis_server: RedisProcess) -> None:
    first = RedisConversations.from_url(redis_server.url, CircuitBreaker("a"))
    second = RedisConversations.from_url(redis_server.url, CircuitBreaker("b"))
    key = _key()
    try:
        results = await asyncio.gather(
            *(
                replica.append(key, "a", _msgs(f"{i}a", f"{i}b"), i, None, False)
                for i in range(10)
                for replica in (first, second)
            )
        )
        seqs = sorted(m.seq for _, stored in results for m in stored)
        assert seqs == list(range(1, 41))
    finally:
        await first.close()
        await second.close()
