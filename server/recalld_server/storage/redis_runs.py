"""Which run of which Redis server the connections reach.

State derived from Redis is only as good as Redis's memory of its own past, and
that memory can go back in time without anything failing:

- a Redis restarted from its append-only file may miss the last second of writes
  (`appendfsync everysec`), and one restarted without persistence misses all;
- a replica promoted by a failover misses whatever the old primary had not yet
  sent it (replication is asynchronous).

Then a per-user generation can return to a value a replica already saw with other
contents, and a cached profile's invalidation can vanish. Each of these comes with
a different server run (INFO's `run_id`; a promoted replica is another server).
Every new connection reads it before its first command. When it differs from the
last one seen, a new epoch starts, and whatever was stamped with an older epoch is
not trusted again. New connections are exactly what a restart or a failover
forces, so the check costs one INFO per connection, nothing per call.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import redis.asyncio as redis_asyncio
from redis.asyncio.connection import Connection
from redis.exceptions import ResponseError

from recalld_server.storage.redis_connect import redis_client

log = logging.getLogger(__name__)


def run_id_of(info: bytes | str) -> str:
    """The run_id line of an `INFO server` reply ("" when absent)."""
    text = info.decode() if isinstance(info, bytes) else info
    for line in text.splitlines():
        if line.startswith("run_id:"):
            return line.removeprefix("run_id:").strip()
    return ""


class RedisRuns:
    """Counts the Redis runs seen so far; `epoch` names the current one.

    Shared by every client whose state must not outlive a Redis run (generations,
    the profile cache): pass `on_connect` as their `redis_connect_func`, or build
    them with `client`.
    """

    def __init__(self) -> None:
        self.run_id = ""
        self.epoch = 0
        self._warned = False

    async def on_connect(self, connection: Connection) -> None:
        """The usual handshake, then the server's run_id before any command."""
        await connection.on_connect()
        try:
            await connection.send_command("INFO", "server")
            run_id = run_id_of(await connection.read_response())
        except ResponseError:
            run_id = ""
        if not run_id:
            # INFO refused (an ACL or a proxy): a restart cannot be told from a new
            # connection, so every connection starts an epoch. Caches churn; none lies.
            if not self._warned:
                log.warning("redis does not say its run_id; cached state lasts one connection")
                self._warned = True
            run_id = f"unknown-{uuid.uuid4()}"
        if run_id != self.run_id:
            if self.run_id:
                log.warning("redis run changed (restart or failover): cached state dropped")
            self.run_id = run_id
            self.epoch += 1

    def client(self, url: str, **options: Any) -> redis_asyncio.Redis:
        """A client on `url` (a server, or Sentinel's primary) checking each connection's run."""
        return redis_client(url, redis_connect_func=self.on_connect, **options)
