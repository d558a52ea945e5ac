"""Redis clients from one URL: a plain server, or a primary that Sentinel names.

`redis://` and `rediss://` (TLS) and `unix://` reach one server, as redis-py reads
them. `redis+sentinel://` (and `rediss+sentinel://`) asks Sentinel for the current
primary of a service and follows it through failovers:

    redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db]
        [?sentinel_password=...]

The password (and user) are the primary's; Sentinel's own, if it has one, is the
`sentinel_password` parameter. Every URL is logged only through `redacted`.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import redis.asyncio as redis_asyncio
from redis.asyncio.sentinel import Sentinel

SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}
"""Sentinel URL schemes, and whether the primary is reached over TLS."""


class RedisUrlError(ValueError):
    """A Redis URL recalld cannot use (the message never repeats a password)."""


def redacted(url: str) -> str:
    """The URL without its password, for logs and errors."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def redis_client(url: str, **options: Any) -> redis_asyncio.Redis:
    """A client for `url`; `options` (timeouts, redis_connect_func) apply to the primary."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("redis", "rediss", "unix"):
        return redis_asyncio.Redis.from_url(url, **options)
    if parts.scheme not in SENTINEL_SCHEMES:
        raise RedisUrlError(
            "a Redis URL starts with redis://, rediss://, unix://, redis+sentinel:// or "
            f"rediss+sentinel://, got {redacted(url)}"
        )
    hosts = parts.netloc.rsplit("@", 1)[-1]
    nodes: list[tuple[str, int]] = []
    for node in filter(None, hosts.split(",")):
        host, _, port = node.rpartition(":")
        if not host or not port.isdigit():
            raise RedisUrlError(f"sentinel address {node!r} is not host:port in {redacted(url)}")
        nodes.append((host.strip("[]"), int(port)))
    path = [p for p in parts.path.split("/") if p]
    if not nodes or not path or len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise RedisUrlError(
            f"expected redis+sentinel://host:port[,host:port...]/service[/db], got {redacted(url)}"
        )
    query = urllib.parse.parse_qs(parts.query)
    timeouts: dict[str, Any] = {
        key: options[key] for key in ("socket_timeout", "socket_connect_timeout") if key in options
    }
    sentinel_options: dict[str, Any] = dict(timeouts)
    if "sentinel_password" in query:
        sentinel_options["password"] = query["sentinel_password"][0]
    primary_options: dict[str, Any] = dict(options)
    if parts.username:
        primary_options["username"] = urllib.parse.unquote(parts.username)
    if parts.password is not None:
        primary_options["password"] = urllib.parse.unquote(parts.password)
    if SENTINEL_SCHEMES[parts.scheme]:
        primary_options["ssl"] = True
    sentinel = Sentinel(nodes, sentinel_kwargs=sentinel_options, **timeouts)  # type: ignore[no-untyped-call]
    primary: redis_asyncio.Redis = sentinel.master_for(
        path[0],
        redis_class=redis_asyncio.Redis,
        db=int(path[1]) if len(path) == 2 else 0,
        **primary_options,
    )
    return primary
