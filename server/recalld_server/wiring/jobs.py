"""The server's background work: the extraction worker and the periodic jobs."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

from recalld_server.config import ServerConfig
from recalld_server.domain.memories.consolidation import Consolidator
from recalld_server.domain.sessions.service import SessionService
from recalld_server.storage.leases import Leases

log = logging.getLogger(__name__)


async def _every(
    interval_s: float, job: Callable[[], Awaitable[object]], name: str, leases: Leases
) -> None:
    """Runs a job periodically, on one replica at a time; a failure is retried next time."""
    while True:
        await asyncio.sleep(interval_s)
        try:
            async with leases.hold(name) as mine:
                if mine:
                    await job()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background job %s failed", name)


def background_jobs(
    config: ServerConfig, sessions: SessionService, consolidator: Consolidator, leases: Leases
) -> list[asyncio.Task[None]]:
    """The extraction worker and the periodic jobs (one replica at a time each)."""
    # Every replica works the extraction queue: claims are leased, writes idempotent.
    jobs = [asyncio.create_task(sessions.extraction.work())]
    if config.access_flush_interval_s > 0:
        flush = _every(
            config.access_flush_interval_s,
            consolidator.flush_access_stats,
            "access-flush",
            leases,
        )
        jobs.append(asyncio.create_task(flush))
    if config.consolidate_interval_s > 0:
        consolidate = _every(
            config.consolidate_interval_s,
            # Twice the interval: one missed pass loses no merge.
            functools.partial(
                consolidator.run_all,
                changed_within_ms=int(2 * config.consolidate_interval_s * 1000),
            ),
            "consolidation",
            leases,
        )
        jobs.append(asyncio.create_task(consolidate))
    return jobs
