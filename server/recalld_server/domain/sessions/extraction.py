"""Turning what a user said into memories (seed 004's judge, extract, refine).

The extractor proposes candidates; every candidate then goes through the normal
write rules (duplicates, supersede, core-memory conflicts, drafts for hedged
statements), so extraction can never do what a Write could not. Jobs are queued
durably before anyone is told they were accepted and written with a request id
derived from the job, so a job run twice (a crash, two replicas) writes once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Sequence

from recalld_server.domain.core.conversation import (
    ExtractedResult,
    ExtractionJob,
    MemoryCandidate,
    SessionKey,
)
from recalld_server.domain.core.conversation_ports import Conversations, ExtractionQueue
from recalld_server.domain.core.errors import (
    BackendUnavailableError,
    FieldViolation,
    RecalldError,
    RequestIdReusedError,
)
from recalld_server.domain.core.model import NewMemory, Principal, WriteResult
from recalld_server.domain.core.ports import Clock, Extractor, Write
from recalld_server.domain.core.stages import Stages
from recalld_server.domain.guards import validation
from recalld_server.domain.sessions.session_window import SessionPolicy

log = logging.getLogger(__name__)

EXTRACTION_SOURCE = "session_extraction"
"""The `source` of every extracted memory."""

LEASE_MS = 60_000
"""How long a claimed job is another replica's to finish before it may be claimed again."""


def job_request_id(key: SessionKey, job: ExtractionJob) -> str:
    """The Write request id of a job: the same job always writes under the same id."""
    raw = "\x00".join((key.tenant_id, key.user_id, job.job_id))
    return "extract-" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:40]


class ExtractionRunner:
    """Runs extraction jobs: the configured extractor, then the write rules."""

    def __init__(
        self,
        conversations: Conversations,
        queue: ExtractionQueue,
        extractor: Extractor,
        fallback: Extractor,
        write: Write,
        clock: Clock,
        policy: SessionPolicy,
        stages: Stages,
    ) -> None:
        self._conversations = conversations
        self._queue = queue
        self._extractor = extractor
        self._fallback = fallback
        self._write = write
        self._clock = clock
        self._policy = policy
        self._stages = stages
        self.wake = asyncio.Event()
        """Set when a job is queued, so the worker need not wait for its next poll."""

    async def run(self, job: ExtractionJob) -> list[WriteResult] | None:
        """Runs one job; the write results, or None when it failed and stays queued."""
        with self._stages.stage("extract") as record:
            record.set("messages", len(job.messages))
            try:
                results = await self._extract_and_write(job)
            except (BackendUnavailableError, RecalldError) as error:
                # A transient failure (the model endpoint, storage, a quota): the job
                # stays queued and is claimed again when its lease runs out.
                record.set("error", type(error).__name__)
                log.warning(
                    "extraction %s failed (attempt %d): %s", job.job_id, job.attempts, error
                )
                reason = f"{type(error).__name__}: {error}"[:500]
                if job.attempts > self._policy.extraction_attempts:
                    # The offline extractor failed too (storage refusing, a quota):
                    # give up rather than retry forever; the reason stays visible.
                    reason = f"gave up after {job.attempts} attempts: {reason}"
                    await self._queue.done(job)
                await self._conversations.record_extraction(job.key, job.last_seq, [], reason)
                return None
        await self._conversations.record_extraction(
            job.key,
            job.last_seq,
            [ExtractedResult(r.memory.id, r.outcome, r.related_id) for r in results],
            "",
        )
        await self._queue.done(job)
        return results

    async def _extract_and_write(self, job: ExtractionJob) -> list[WriteResult]:
        # Out of attempts with the configured extractor: the offline one still
        # turns the messages into memories rather than losing them.
        last_chance = job.attempts >= self._policy.extraction_attempts
        extractor = self._fallback if last_chance else self._extractor
        candidates = await extractor.extract(job.messages)
        memories = usable(candidates, job)
        if not memories:
            return []
        principal = Principal(
            tenant_id=job.key.tenant_id,
            role="writer",
            allowed_scopes=frozenset({job.agent_scope}) if job.agent_scope else frozenset(),
        )
        try:
            return await self._write(
                principal, job.key.user_id, memories, job_request_id(job.key, job)
            )
        except RequestIdReusedError:
            # An earlier attempt wrote this job (with other candidates: a model is
            # not deterministic) and crashed before marking it done.
            return []

    async def drain(self, limit: int = 8) -> int:
        """Claims due jobs and runs them; how many were claimed."""
        jobs = await self._queue.claim(self._clock.now_ms(), LEASE_MS, limit)
        for job in jobs:
            await self.run(job)
        return len(jobs)

    async def work(self, poll_s: float = 1.0) -> None:
        """Runs queued jobs until cancelled: woken by new jobs, polling for orphaned ones."""
        while True:
            try:
                while await self.drain():
                    pass
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("extraction worker failed; retrying")
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), poll_s)


def usable(candidates: Sequence[MemoryCandidate], job: ExtractionJob) -> list[NewMemory]:
    """The candidates as memories of the job's user, scope and session; invalid ones left out.

    One unusable candidate (too long, a bad topic key) must not cost the others.
    """
    last_said = job.messages[-1].created_at if job.messages else job.created_at
    out = []
    for candidate in candidates:
        memory = NewMemory(
            content=candidate.content.strip()[: validation.MAX_CONTENT_CHARS],
            type=candidate.type,
            agent_scope=job.agent_scope,
            session_id=job.key.session_id,
            topic_key=candidate.topic_key,
            importance=min(1.0, max(0.0, candidate.importance)),
            confidence=min(1.0, max(0.0, candidate.confidence)),
            source=EXTRACTION_SOURCE,
            occurred_at=candidate.occurred_at or last_said,
        )
        violations: list[FieldViolation] = []
        validation.check_new_memory(memory, "memory", violations)
        if memory.content and not violations:
            out.append(memory)
    return out[: validation.MAX_BATCH]
