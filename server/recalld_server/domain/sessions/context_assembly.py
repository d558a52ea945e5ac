"""GetContext: everything the next model turn needs, within one token budget.

The session's window and the long-term recall are fetched concurrently (when
the caller names the query; otherwise the query is the last user message, so
the window comes first), then fitted by `context_packing.assemble`. Window
messages the budget cannot hold are folded, for this answer only, into the
summary by the offline summarizer: nothing said is silently left out, and a
read never rewrites the session.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from collections.abc import Awaitable, Callable

from recalld_server.domain.core.conversation import Message, Role, Session, SessionKey
from recalld_server.domain.core.conversation_ports import Conversations
from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.model import Memory, Principal
from recalld_server.domain.core.ports import Summarizer
from recalld_server.domain.core.recall_model import Profile, RecallQuery, RecallResult, ScoredMemory
from recalld_server.domain.core.stages import Stages
from recalld_server.domain.guards import authorization
from recalld_server.domain.guards.session_rules import can_see, validate_context
from recalld_server.domain.sessions.context_packing import Assembly, assemble
from recalld_server.domain.sessions.session_window import SessionPolicy

Recall = Callable[[Principal, RecallQuery, float | None], Awaitable[RecallResult]]
GetProfile = Callable[[Principal, str, str], Awaitable[tuple[Profile, list[str]]]]


@dataclasses.dataclass(frozen=True, slots=True)
class ContextRequest:
    """A validated GetContext request's fields (0 means the server's default)."""

    user_id: str
    session_id: str
    query: str = ""
    token_budget: int = 0
    agent_scope: str = ""
    memory_top_k: int = 0
    skip_profile: bool = False
    skip_memories: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class ContextResult:
    """The assembled context, the memories it holds, the session, and what degraded."""

    assembly: Assembly
    memories: list[ScoredMemory]
    session: Session | None
    omitted_messages: int
    degraded: list[str]


class GetContext:
    """Assembles one turn's context."""

    def __init__(
        self,
        conversations: Conversations,
        recall: Recall,
        get_profile: GetProfile,
        offline_summarizer: Summarizer,
        policy: SessionPolicy,
        stages: Stages,
    ) -> None:
        self._conversations = conversations
        self._recall = recall
        self._get_profile = get_profile
        self._folds = EphemeralFolds(offline_summarizer, policy.summary_tokens)
        self._policy = policy
        self._stages = stages

    async def __call__(
        self, principal: Principal, request: ContextRequest, deadline_s: float | None = None
    ) -> ContextResult:
        """The context for the next turn (see SessionService.GetContext in the proto)."""
        validate_context(
            request.user_id,
            request.session_id,
            request.token_budget,
            request.memory_top_k,
            request.agent_scope,
        )
        authorization.require_scope(principal, request.agent_scope, "agent_scope")
        key = SessionKey(principal.tenant_id, request.user_id, request.session_id)
        degraded: list[str] = []
        if request.query:
            (session, window), recalled = await asyncio.gather(
                self._window(principal, key),
                self._memories(principal, request, request.query, deadline_s, degraded),
            )
        else:
            session, window = await self._window(principal, key)
            query = _last_user_message(window)
            recalled = await self._memories(principal, request, query, deadline_s, degraded)
        budget = request.token_budget or self._policy.default_context_budget
        items, profile = recalled
        summary = session.summary if session is not None else ""
        with self._stages.stage("assemble") as record:
            assembly = assemble(
                budget, summary, window, profile, [i.memory for i in items], self._policy
            )
            omitted = window[: len(window) - len(assembly.messages)]
            if omitted:
                # Fold what the budget cannot hold into this answer's summary (offline:
                # fast and deterministic), then fit again around the longer summary.
                summary = await self._folds.summary(session, omitted) if session else summary
                assembly = assemble(
                    budget,
                    summary,
                    assembly.messages,
                    profile,
                    [i.memory for i in items],
                    self._policy,
                )
            record.set("messages", len(assembly.messages))
            record.set("omitted", len(omitted))
            record.set("memories", len(assembly.memories))
            record.set("tokens", assembly.token_estimate)
        return ContextResult(
            assembly=assembly,
            memories=[items[i] for i in assembly.memories],
            session=session,
            omitted_messages=len(window) - len(assembly.messages),
            degraded=degraded,
        )

    async def _window(
        self, principal: Principal, key: SessionKey
    ) -> tuple[Session | None, list[Message]]:
        with self._stages.stage("window") as record:
            loaded = await self._conversations.window(key)
            if loaded is None or not can_see(principal, loaded[0]):
                record.set("messages", 0)
                return None, []
            record.set("messages", len(loaded[1]))
            return loaded

    async def _memories(
        self,
        principal: Principal,
        request: ContextRequest,
        query: str,
        deadline_s: float | None,
        degraded: list[str],
    ) -> tuple[list[ScoredMemory], list[Memory]]:
        """The recalled memories and the profile; ([], []) when storage cannot answer."""
        with self._stages.stage("memories") as record:
            try:
                if query and not request.skip_memories:
                    result = await self._recall(
                        principal,
                        RecallQuery(
                            user_id=request.user_id,
                            query=query,
                            top_k=request.memory_top_k or self._policy.default_memory_top_k,
                            agent_scope=request.agent_scope,
                            skip_profile=request.skip_profile,
                        ),
                        deadline_s,
                    )
                    degraded.extend(result.degraded_stages)
                    profile = result.profile.memories if result.profile is not None else []
                    record.set("memories", len(result.items))
                    return result.items, list(profile)
                if request.skip_profile:
                    return [], []
                # Nothing to recall for: the profile still belongs in the context.
                found, profile_degraded = await self._get_profile(
                    principal, request.user_id, request.agent_scope
                )
                degraded.extend(profile_degraded)
                return [], list(found.memories)
            except BackendUnavailableError:
                record.set("degraded", True)
                degraded.append("memories")
                return [], []


@dataclasses.dataclass(frozen=True, slots=True)
class _Fold:
    """A summary of the stored summary plus the window up to `through`."""

    base_through: int
    base_summary: str
    through: int
    summary: str


class EphemeralFolds:
    """The per-answer folds of omitted messages, kept per session and extended turn by turn.

    An agent asks for its context every turn with about the same budget: each turn
    only the few messages that newly fell out of the budget need folding, on top of
    the last answer's fold. Summarising a long window from scratch costs tens of
    milliseconds (the summarizer scores every sentence), extending it a fraction.
    In process only: another replica folds once for itself.
    """

    def __init__(self, summarizer: Summarizer, budget_tokens: int, capacity: int = 4096) -> None:
        self._summarizer = summarizer
        self._budget = budget_tokens
        self._capacity = capacity
        self._folds: collections.OrderedDict[SessionKey, _Fold] = collections.OrderedDict()

    async def summary(self, session: Session, omitted: list[Message]) -> str:
        """The session's summary with `omitted` (the oldest window messages) folded in."""
        through = omitted[-1].seq
        last = self._folds.get(session.key)
        reusable = (
            last is not None
            and last.base_through == session.summarized_through
            and last.base_summary == session.summary
            and last.through <= through
        )
        if last is not None and reusable:
            newer = [m for m in omitted if m.seq > last.through]
            summary = (
                await self._summarizer.fold(last.summary, newer, self._budget)
                if newer
                else last.summary
            )
        else:
            summary = await self._summarizer.fold(session.summary, omitted, self._budget)
        self._folds[session.key] = _Fold(
            session.summarized_through, session.summary, through, summary
        )
        self._folds.move_to_end(session.key)
        while len(self._folds) > self._capacity:
            self._folds.popitem(last=False)
        return summary


def _last_user_message(window: list[Message]) -> str:
    for message in reversed(window):
        if message.role is Role.USER:
            return message.content
    return ""
