"""Sessions and their windows in Redis, shared by every replica.

Where each part of a session is kept is `redis_session_layout`'s. Every change
is a read, the new Session computed by the same helpers as the in-memory
reference, and one Lua script that writes the hash, the list and the index only
if the session's `version` is still the one read (otherwise the change is
computed again). So messages are numbered atomically even when two replicas
append at once, and a fold is a compare-and-set on `summarized_through`.

With a TTL, every change refreshes it on all of the session's keys and on its
user's index and tenant's set (these outlive each of their sessions). The index
entry of an expired session is skipped and pruned by `page`.

Scripts that delete a whole user compute the session keys from the index they
read: one Redis primary (with Sentinel or not), not Redis Cluster.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import redis.asyncio as redis_asyncio

from recalld_server.domain.core.conversation import (
    ExtractedResult,
    Message,
    RequestMark,
    Session,
    SessionCursor,
    SessionKey,
)
from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.storage.circuit import CircuitBreaker
from recalld_server.storage.redis_connect import redis_client
from recalld_server.storage.redis_session_layout import (
    PREFIX,
    as_text,
    index_key,
    index_member,
    messages_key,
    session_fields,
    session_from_hash,
    session_key,
    users_key,
)
from recalld_server.storage.session_records import (
    appended,
    dumps,
    ended,
    extraction_recorded,
    folded,
    message_from_json,
    message_to_json,
)

_MAX_TRIES = 1000
"""Compare-and-set rounds before a change gives up (each lost round is another's win)."""

_CHUNK = 1000
"""Values per RPUSH/DEL inside scripts (Lua's unpack has a bounded stack)."""

# The Lua twin of `redis_session_layout.encoded` (`#part` counts bytes, as there).
_LUA_ENC = """
local function enc(...)
  local out = {}
  for _, part in ipairs({...}) do out[#out + 1] = #part .. ':' .. part end
  return table.concat(out)
end
"""

# KEYS: hash, messages, index, tenant's users. ARGV: 1 version read ("" when absent),
# 2 new version, 3 TTL ms (0: none), 4 index member, 5 user id, 6 messages to drop from
# the front, 7 field count n, then n field/value pairs, then the messages to push.
_WRITE = """
local current = redis.call('hget', KEYS[1], 'version') or ''
if current ~= ARGV[1] then return 0 end
if current == '' then redis.call('del', KEYS[2]) end
local n = tonumber(ARGV[7])
local fields = {'version', ARGV[2]}
for i = 8, 7 + 2 * n do fields[#fields + 1] = ARGV[i] end
redis.call('hset', KEYS[1], unpack(fields))
local drop = tonumber(ARGV[6])
if drop > 0 then redis.call('ltrim', KEYS[2], drop, -1) end
local first = 8 + 2 * n
while first <= #ARGV do
  local last = math.min(first + CHUNK - 1, #ARGV)
  redis.call('rpush', KEYS[2], unpack(ARGV, first, last))
  first = last + 1
end
redis.call('zadd', KEYS[3], 0, ARGV[4])
redis.call('sadd', KEYS[4], ARGV[5])
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  for i = 1, 4 do redis.call('pexpire', KEYS[i], ttl) end
end
return 1
""".replace("CHUNK", str(_CHUNK))

# KEYS: hash, messages, index, tenant's users. ARGV: user id.
_DELETE = """
local member = redis.call('hget', KEYS[1], 'member')
redis.call('del', KEYS[2])
if not member then return 0 end
redis.call('del', KEYS[1])
redis.call('zrem', KEYS[3], member)
if redis.call('zcard', KEYS[3]) == 0 then redis.call('srem', KEYS[4], ARGV[1]) end
return 1
"""

# KEYS: index, tenant's users. ARGV: prefix, tenant id, user id.
_DELETE_USER = (
    _LUA_ENC
    + """
for _, member in ipairs(redis.call('zrange', KEYS[1], 0, -1)) do
  local token = enc(ARGV[2], ARGV[3], string.sub(member, 22))
  redis.call('del', ARGV[1] .. 'h:' .. token, ARGV[1] .. 'm:' .. token)
end
redis.call('del', KEYS[1])
redis.call('srem', KEYS[2], ARGV[3])
return 1
"""
)

# KEYS: index, then one session hash per member. ARGV: the members. Drops the entries
# whose session is gone (expired) or is another one now.
_PRUNE = """
for i, member in ipairs(ARGV) do
  if redis.call('hget', KEYS[i + 1], 'member') ~= member then
    redis.call('zrem', KEYS[1], member)
  end
end
return 1
"""


class RedisConversations:
    """Sessions and their windows in Redis (see the module docstring)."""

    def __init__(
        self,
        client: redis_asyncio.Redis,
        circuit: CircuitBreaker | None = None,
        ttl_s: int = 0,
    ) -> None:
        self._client = client
        self._circuit = circuit or CircuitBreaker("session store")
        self._ttl_ms = max(ttl_s, 0) * 1000
        self._write_script = client.register_script(_WRITE)
        self._delete_script = client.register_script(_DELETE)
        self._delete_user_script = client.register_script(_DELETE_USER)
        self._prune_script = client.register_script(_PRUNE)

    @classmethod
    def from_url(cls, url: str, circuit: CircuitBreaker, ttl_s: int = 0) -> RedisConversations:
        """Sessions on the Redis at `url` (with `ttl_s`: expiring that long after a change)."""
        return cls(
            redis_client(url, socket_timeout=2.0, socket_connect_timeout=2.0), circuit, ttl_s
        )

    async def _read(
        self, key: SessionKey, with_window: bool
    ) -> tuple[Session | None, str, list[Message]]:
        """The session (None if absent), its version ("" if absent) and its window."""
        if not with_window:
            raw = await self._client.hgetall(session_key(key))
            listed: list[Any] = []
        else:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.hgetall(session_key(key))
                pipe.lrange(messages_key(key), 0, -1)
                raw, listed = await pipe.execute()
        found = session_from_hash(key, raw)
        if found is None:
            return None, "", []
        session, version = found
        window = [message_from_json(json.loads(as_text(m))) for m in listed]
        return session, version, [m for m in window if m.seq > session.summarized_through]

    async def _commit(
        self,
        version: str,
        after: Session,
        drop: int = 0,
        pushed: Sequence[Message] = (),
    ) -> bool:
        """Writes the session if its version is still `version`; whether it did."""
        key = after.key
        fields = session_fields(after)
        written = await self._write_script(
            keys=[
                session_key(key),
                messages_key(key),
                index_key(key.tenant_id, key.user_id),
                users_key(key.tenant_id),
            ],
            args=[
                version,
                os.urandom(12).hex(),
                self._ttl_ms,
                index_member(after.created_at, key.session_id),
                key.user_id,
                drop,
                len(fields) // 2,
                *fields,
                *(dumps(message_to_json(m)) for m in pushed),
            ],
        )
        return bool(written)

    @staticmethod
    def _contended() -> BackendUnavailableError:
        return BackendUnavailableError("session store: too many concurrent changes to a session")

    async def get(self, key: SessionKey) -> Session | None:
        """The session, or None if it does not exist (or has expired)."""
        with self._circuit.guard():
            session, _, _ = await self._read(key, with_window=False)
        return session

    async def window(self, key: SessionKey) -> tuple[Session, list[Message]] | None:
        """The session and its messages after `summarized_through`, oldest first."""
        with self._circuit.guard():
            session, _, window = await self._read(key, with_window=True)
        return None if session is None else (session, window)

    async def append(
        self,
        key: SessionKey,
        agent_scope: str,
        messages: Sequence[Message],
        now_ms: int,
        mark: RequestMark | None,
        extract: bool,
    ) -> tuple[Session, list[Message]]:
        """Numbers and stores messages after the last one, creating the session if absent."""
        with self._circuit.guard():
            for _ in range(_MAX_TRIES):
                session, version, _ = await self._read(key, with_window=False)
                after, numbered = appended(
                    session, key, agent_scope, messages, now_ms, mark, extract
                )
                if await self._commit(version, after, pushed=numbered):
                    return after, numbered
        raise self._contended()

    async def fold(
        self, key: SessionKey, through_seq: int, summary: str, expected_through: int
    ) -> Session | None:
        """Replaces the summary and drops folded messages, if nobody folded first."""
        with self._circuit.guard():
            for _ in range(_MAX_TRIES):
                session, version, window = await self._read(key, with_window=True)
                if session is None or session.summarized_through != expected_through:
                    return None
                after, kept = folded(session, window, through_seq, summary)
                if await self._commit(version, after, drop=len(window) - len(kept)):
                    return after
        raise self._contended()

    async def end(self, key: SessionKey, now_ms: int, summary_memory_id: str) -> Session | None:
        """Marks the session ended (once: a second end changes nothing)."""
        with self._circuit.guard():
            for _ in range(_MAX_TRIES):
                session, version, _ = await self._read(key, with_window=False)
                if session is None or session.ended:
                    return session
                after = ended(session, now_ms, summary_memory_id)
                if await self._commit(version, after):
                    return after
        raise self._contended()

    async def record_extraction(
        self,
        key: SessionKey,
        through_seq: int,
        results: Sequence[ExtractedResult],
        error: str,
    ) -> None:
        """Notes a finished extraction (error "") or a failed attempt (results ignored)."""
        with self._circuit.guard():
            for _ in range(_MAX_TRIES):
                session, version, _ = await self._read(key, with_window=False)
                if session is None:
                    return
                after = extraction_recorded(session, through_seq, results, error)
                if await self._commit(version, after):
                    return
        raise self._contended()

    async def page(
        self, tenant_id: str, user_id: str, after: SessionCursor | None, limit: int
    ) -> list[Session]:
        """The user's sessions, newest created first, after the cursor.

        Index entries of expired sessions are skipped and removed.
        """
        found: list[Session] = []
        index = index_key(tenant_id, user_id)
        upper = "+" if after is None else "(" + index_member(after.created_at, after.session_id)
        with self._circuit.guard():
            while len(found) < limit:
                want = limit - len(found)
                members = [
                    as_text(m)
                    for m in await self._client.zrevrangebylex(index, upper, "-", 0, want)
                ]
                if not members:
                    break
                keys = [SessionKey(tenant_id, user_id, m[21:]) for m in members]
                async with self._client.pipeline(transaction=False) as pipe:
                    for key in keys:
                        pipe.hgetall(session_key(key))
                    hashes = await pipe.execute()
                stale: list[tuple[str, SessionKey]] = []
                for member, key, raw in zip(members, keys, hashes, strict=True):
                    read = session_from_hash(key, raw)
                    if read is None or index_member(read[0].created_at, key.session_id) != member:
                        stale.append((member, key))
                    else:
                        found.append(read[0])
                if stale:
                    await self._prune_script(
                        keys=[index, *(session_key(k) for _, k in stale)],
                        args=[m for m, _ in stale],
                    )
                if len(members) < want:
                    break
                upper = "(" + members[-1]
        return found

    async def delete(self, key: SessionKey) -> bool:
        """Deletes a session with its messages; False if there was none."""
        with self._circuit.guard():
            deleted = await self._delete_script(
                keys=[
                    session_key(key),
                    messages_key(key),
                    index_key(key.tenant_id, key.user_id),
                    users_key(key.tenant_id),
                ],
                args=[key.user_id],
            )
        return bool(deleted)

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Deletes every session of a user (or of the whole tenant when None).

        Each user's sessions go in one script; a tenant's users one after another.
        """
        with self._circuit.guard():
            if user_id is not None:
                users = [user_id]
            else:
                users = [as_text(u) for u in await self._client.smembers(users_key(tenant_id))]
            for user in users:
                await self._delete_user_script(
                    keys=[index_key(tenant_id, user), users_key(tenant_id)],
                    args=[PREFIX, tenant_id, user],
                )

    async def close(self) -> None:
        """Closes the connection pool."""
        await self._client.aclose()
