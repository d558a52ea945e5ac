"""Every memory use case, built once from the adapters: the servicer's one entry point.

Each use case lives in its own module (`writing`, `reading`, `updating`,
`forgetting`, `conflicts`, and the recall pipeline in `recall`); the pure write
rules in `write_planner` and `lifecycle`; request checks in `validation` and
`authorization`. Every use case takes the caller's Principal, confines every
storage call to that principal's tenant and the named user, and changes a
user's memories only under that user's lock.
"""

from __future__ import annotations

import dataclasses

from recalld_server.domain.core.model import Principal
from recalld_server.domain.core.ports import Backends, RelevanceJudge
from recalld_server.domain.core.recall_model import RecallQuery, RecallResult
from recalld_server.domain.core.stages import NullStages, Stages
from recalld_server.domain.guards import authorization, validation
from recalld_server.domain.memories.conflicts import Conflicts
from recalld_server.domain.memories.forgetting import ForgetMemories, RestoreMemories
from recalld_server.domain.memories.policy import Policy
from recalld_server.domain.memories.reading import ReadMemories
from recalld_server.domain.memories.updating import UpdateMemory
from recalld_server.domain.memories.writing import WriteMemories
from recalld_server.domain.recall.pipeline import RecallPipeline
from recalld_server.domain.sensitive.guard import SensitiveDataGuard
from recalld_server.domain.working_set.profile import ProfileService
from recalld_server.domain.working_set.user_memories import UserMemories


class MemoryService:
    """The memory use cases, independent of transport and storage engine."""

    def __init__(
        self,
        backends: Backends,
        profiles: ProfileService,
        memories: UserMemories,
        stages: Stages | None = None,
        policy: Policy | None = None,
        write_stages: Stages | None = None,
        judge: RelevanceJudge | None = None,
    ) -> None:
        policy = policy or Policy()
        self.guard = SensitiveDataGuard(policy.sensitive_data)
        """The sensitive-data policy, applied by every use case that stores text."""
        self._dimension = backends.embedder.dimension
        self._pipeline = RecallPipeline(
            backends.store,
            backends.embedder,
            profiles,
            backends.access,
            stages or NullStages(),
            backends.clock,
            memories.working_set,
            backends.analyzer,
            policy.recall,
            judge,
        )
        self.write = WriteMemories(
            backends, memories, policy, write_stages or NullStages(), self.guard
        )
        self.update = UpdateMemory(backends, memories, policy, self.guard)
        self.forget = ForgetMemories(backends, memories)
        self.restore = RestoreMemories(backends, memories, policy)
        reads = ReadMemories(backends, profiles)
        self.get = reads.get
        self.history = reads.history
        self.list_page = reads.list_page
        self.get_profile = reads.get_profile
        conflicts = Conflicts(backends, memories, policy)
        self.confirm = conflicts.confirm
        self.list_conflicts = conflicts.list_conflicts
        self.resolve_conflict = conflicts.resolve_conflict

    @property
    def dimension(self) -> int:
        """Dimension of stored vectors (and of caller-supplied query vectors)."""
        return self._dimension

    async def recall(
        self, principal: Principal, query: RecallQuery, deadline_s: float | None = None
    ) -> RecallResult:
        """The user's most relevant active memories, their profile and a context block."""
        validation.validate_recall(query, self._dimension)
        for scope in sorted(query.scopes):
            field = "agent_scope" if scope == query.agent_scope else "extra_agent_scopes"
            authorization.require_scope(principal, scope, field)
        if query.query:
            query = dataclasses.replace(
                query, query=self.guard.mask_query(principal.tenant_id, query.query)
            )
        return await self._pipeline.run(
            principal.tenant_id, query, authorization.readable_scopes(principal), deadline_s
        )
