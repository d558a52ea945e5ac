"""Every session use case, built once from the adapters: the session servicer's entry point.

Each use case lives in its own module (`appending`, `context_assembly`,
`session_reads`, `session_ending`, with `folding` and `extraction` shared);
the pure rules in `session_window`, `context_packing` and `session_rules`.
"""

from __future__ import annotations

from recalld_server.domain.core.ports import Backends, Extractor, Summarizer
from recalld_server.domain.core.stages import NullStages, Stages
from recalld_server.domain.memories.service import MemoryService
from recalld_server.domain.sessions.appending import AppendMessages
from recalld_server.domain.sessions.context_assembly import GetContext
from recalld_server.domain.sessions.extraction import ExtractionRunner
from recalld_server.domain.sessions.folding import Folding
from recalld_server.domain.sessions.session_ending import EndSession
from recalld_server.domain.sessions.session_reads import ReadSessions
from recalld_server.domain.sessions.session_window import SessionPolicy


class SessionService:
    """The session use cases, independent of transport and storage engine."""

    def __init__(
        self,
        backends: Backends,
        memories: MemoryService,
        summarizer: Summarizer,
        offline_summarizer: Summarizer,
        extractor: Extractor,
        offline_extractor: Extractor,
        policy: SessionPolicy | None = None,
        stages: Stages | None = None,
    ) -> None:
        policy = policy or SessionPolicy()
        stages = stages or NullStages()
        conversations = backends.conversations
        folding = Folding(conversations, summarizer, offline_summarizer, policy, stages)
        self.extraction = ExtractionRunner(
            conversations,
            backends.extractions,
            extractor,
            offline_extractor,
            memories.write,
            backends.clock,
            policy,
            stages,
        )
        self.append = AppendMessages(
            conversations,
            backends.extractions,
            backends.locks,
            backends.clock,
            folding,
            self.extraction,
            policy,
            memories.guard,
        )
        self.get_context = GetContext(
            conversations,
            memories.recall,
            memories.get_profile,
            offline_summarizer,
            policy,
            stages,
        )
        reads = ReadSessions(conversations, backends.store)
        self.get = reads.get
        self.list_page = reads.list_page
        self.memories_of = reads.extracted_memories
        self.end = EndSession(
            conversations, backends.store, backends.locks, backends.clock, folding, memories.write
        )
