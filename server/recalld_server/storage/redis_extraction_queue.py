"""The extraction queue in Redis, shared by every replica.

Jobs live in a sorted set of due times and hashes of job JSON and attempts,
keyed by a slot naming (tenant, user, session, job_id), plus a set of slots per
user and of users per tenant for deletes. `claim` leases atomically (one Lua
script), so two replicas never run the same job within one lease.
"""

from __future__ import annotations

import redis.asyncio as redis_asyncio

from recalld_server.domain.core.conversation import ExtractionJob, SessionKey
from recalld_server.storage.circuit import CircuitBreaker
from recalld_server.storage.redis_connect import redis_client
from recalld_server.storage.redis_session_layout import PREFIX, as_text, encoded
from recalld_server.storage.session_records import job_from_json, job_to_json

# KEYS: due, data, attempts, user's slots, tenant's users.
# ARGV: slot, job JSON, due ms, attempts, user id.
_PUT = """
if redis.call('hsetnx', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('zadd', KEYS[1], ARGV[3], ARGV[1])
redis.call('hset', KEYS[3], ARGV[1], ARGV[4])
redis.call('sadd', KEYS[4], ARGV[1])
redis.call('sadd', KEYS[5], ARGV[5])
return 1
"""

# KEYS: due, data, attempts. ARGV: now ms, lease end ms, limit.
# Returns job JSON and attempts, alternating.
_CLAIM = """
local out = {}
for _, slot in ipairs(redis.call('zrangebyscore', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])) do
  local job = redis.call('hget', KEYS[2], slot)
  if job then
    redis.call('zadd', KEYS[1], ARGV[2], slot)
    out[#out + 1] = job
    out[#out + 1] = redis.call('hincrby', KEYS[3], slot, 1)
  else
    redis.call('zrem', KEYS[1], slot)
    redis.call('hdel', KEYS[3], slot)
  end
end
return out
"""

# KEYS: due, data, attempts, user's slots, tenant's users. ARGV: slot prefix ("" for
# every slot of the user), user id.
_DROP = """
local prefix = ARGV[1]
for _, slot in ipairs(redis.call('smembers', KEYS[4])) do
  if prefix == '' or string.sub(slot, 1, #prefix) == prefix then
    redis.call('zrem', KEYS[1], slot)
    redis.call('hdel', KEYS[2], slot)
    redis.call('hdel', KEYS[3], slot)
    redis.call('srem', KEYS[4], slot)
  end
end
if redis.call('scard', KEYS[4]) == 0 then redis.call('srem', KEYS[5], ARGV[2]) end
return 1
"""

_DUE = f"{PREFIX}jobs:due"
_DATA = f"{PREFIX}jobs:data"
_ATTEMPTS = f"{PREFIX}jobs:attempts"


def _job_slots_key(tenant_id: str, user_id: str) -> str:
    return f"{PREFIX}jobs:i:{encoded(tenant_id, user_id)}"


def _job_users_key(tenant_id: str) -> str:
    return f"{PREFIX}jobs:u:{encoded(tenant_id)}"


class RedisExtractionQueue:
    """Extraction jobs in Redis, leased to one replica at a time (see the module docstring)."""

    def __init__(self, client: redis_asyncio.Redis, circuit: CircuitBreaker | None = None) -> None:
        self._client = client
        self._circuit = circuit or CircuitBreaker("extraction queue")
        self._put_script = client.register_script(_PUT)
        self._claim_script = client.register_script(_CLAIM)
        self._drop_script = client.register_script(_DROP)

    @classmethod
    def from_url(cls, url: str, circuit: CircuitBreaker) -> RedisExtractionQueue:
        """Jobs on the Redis at `url`."""
        return cls(redis_client(url, socket_timeout=2.0, socket_connect_timeout=2.0), circuit)

    @staticmethod
    def _slot(key: SessionKey, job_id: str) -> str:
        return encoded(key.tenant_id, key.user_id, key.session_id, job_id)

    @staticmethod
    def _keys(tenant_id: str, user_id: str) -> list[str]:
        return [
            _DUE,
            _DATA,
            _ATTEMPTS,
            _job_slots_key(tenant_id, user_id),
            _job_users_key(tenant_id),
        ]

    async def put(self, job: ExtractionJob) -> None:
        """Queues a job, due at its creation (the same job_id twice is one job)."""
        with self._circuit.guard():
            await self._put_script(
                keys=self._keys(job.key.tenant_id, job.key.user_id),
                args=[
                    self._slot(job.key, job.job_id),
                    job_to_json(job),
                    job.created_at,
                    job.attempts,
                    job.key.user_id,
                ],
            )

    async def claim(self, now_ms: int, lease_ms: int, limit: int) -> list[ExtractionJob]:
        """Leases up to `limit` due jobs, oldest first, counting the attempt.

        One script: two replicas never claim the same job within one lease.
        """
        if limit <= 0:
            return []
        with self._circuit.guard():
            raw = await self._claim_script(
                keys=[_DUE, _DATA, _ATTEMPTS], args=[now_ms, now_ms + lease_ms, limit]
            )
        return [job_from_json(as_text(raw[i]), int(raw[i + 1])) for i in range(0, len(raw), 2)]

    async def done(self, job: ExtractionJob) -> None:
        """Removes a finished job."""
        with self._circuit.guard():
            await self._drop_script(
                keys=self._keys(job.key.tenant_id, job.key.user_id),
                args=[self._slot(job.key, job.job_id), job.key.user_id],
            )

    async def delete_session(self, key: SessionKey) -> None:
        """Drops a session's queued jobs."""
        with self._circuit.guard():
            await self._drop_script(
                keys=self._keys(key.tenant_id, key.user_id),
                args=[encoded(key.tenant_id, key.user_id, key.session_id), key.user_id],
            )

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Drops a user's queued jobs (or the whole tenant's when None)."""
        with self._circuit.guard():
            if user_id is not None:
                users = [user_id]
            else:
                users = [as_text(u) for u in await self._client.smembers(_job_users_key(tenant_id))]
            for user in users:
                await self._drop_script(keys=self._keys(tenant_id, user), args=["", user])

    async def close(self) -> None:
        """Closes the connection pool."""
        await self._client.aclose()
