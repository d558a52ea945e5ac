"""Folding a session's oldest messages into its running summary, durably and once."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from recalld_server.domain.core.conversation import Message, Session
from recalld_server.domain.core.conversation_ports import Conversations
from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.ports import Summarizer
from recalld_server.domain.core.stages import Stages
from recalld_server.domain.sessions.session_window import SessionPolicy

log = logging.getLogger(__name__)


class Folding:
    """Summarises messages with the configured summarizer, the offline one when it fails.

    A message leaves the window only in the same store call that writes the summary
    holding it, so nothing is dropped without being folded.
    """

    def __init__(
        self,
        conversations: Conversations,
        summarizer: Summarizer,
        fallback: Summarizer,
        policy: SessionPolicy,
        stages: Stages,
    ) -> None:
        self._conversations = conversations
        self._summarizer = summarizer
        self._fallback = fallback
        self._policy = policy
        self._stages = stages

    async def summarise(self, summary: str, messages: Sequence[Message]) -> tuple[str, bool]:
        """The summary with `messages` folded in, and whether the fallback had to write it."""
        with self._stages.stage("fold") as record:
            record.set("messages", len(messages))
            record.set("summarizer", self._summarizer.name)
            try:
                return await self._summarizer.fold(
                    summary, messages, self._policy.summary_tokens
                ), False
            except BackendUnavailableError as error:
                log.warning(
                    "summarizer %s failed (%s); folding offline", self._summarizer.name, error
                )
                record.set("degraded", True)
                return await self._fallback.fold(
                    summary, messages, self._policy.summary_tokens
                ), True

    async def fold(
        self, session: Session, window: Sequence[Message], through_seq: int
    ) -> tuple[Session, list[Message], bool]:
        """Folds the window up to `through_seq`; returns the session, the window left, degraded.

        Callers hold the session's lock; should another replica have folded first
        anyway, the store refuses the stale fold and the current state is returned.
        """
        folded = [m for m in window if m.seq <= through_seq]
        kept = [m for m in window if m.seq > through_seq]
        if not folded:
            return session, kept, False
        summary, degraded = await self.summarise(session.summary, folded)
        after = await self._conversations.fold(
            session.key, through_seq, summary, session.summarized_through
        )
        if after is not None:
            return after, kept, degraded
        current = await self._conversations.window(session.key)
        if current is None:  # forgotten meanwhile
            return session, kept, degraded
        return current[0], current[1], degraded
