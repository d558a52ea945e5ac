"""A recall's filters, built once from the request.

The request's filters are one `MemoryFilter`: storage compiles it (`build_filter`),
the working set evaluates it (`matches`), and its `reason` names why explain
leaves a candidate out, so what the searches return and the reasons explain gives
read the same conditions. Explain's wider search and the profile's memories are
derived from it here, not rebuilt field by field.
"""

from __future__ import annotations

import dataclasses

from recalld_server.domain.core.model import DropReason, Memory, MemoryFilter, MemoryType, Status
from recalld_server.domain.core.recall_model import RecallQuery


@dataclasses.dataclass(frozen=True, slots=True)
class RecallFilter:
    """What one recall may return, what its searches read, and what its profile is made of."""

    request: MemoryFilter
    """The user's active, unexpired memories of the request's scopes that pass its filters."""
    search: MemoryFilter
    """What the dense and keyword searches read: `request`, or with explain every memory
    of the user in the scopes the caller may read, so explain can say why the rest
    were left out."""
    active: MemoryFilter
    """The user's active, unexpired memories of the request's scopes: the profile and
    recent events are chosen among these."""

    @classmethod
    def of(
        cls, tenant_id: str, query: RecallQuery, readable: frozenset[str] | None, now: int
    ) -> RecallFilter:
        """The filters of one recall; `readable` are the scopes the caller may read at all."""
        active = MemoryFilter(
            tenant_id,
            query.user_id,
            statuses=frozenset({Status.ACTIVE}),
            scopes=query.scopes,
            unexpired_at=now,
        )
        request = dataclasses.replace(
            active,
            types=query.types,
            tiers=query.tiers,
            tags=query.tags,
            session_id=query.session_id,
            occurred_after=query.occurred_after,
            occurred_before=query.occurred_before,
            created_after=query.created_after,
            created_before=query.created_before,
        )
        search = (
            MemoryFilter(tenant_id, query.user_id, scopes=readable) if query.explain else request
        )
        return cls(request, search, active)

    def reason(self, memory: Memory) -> DropReason | None:
        """Why the request's filters leave the memory out (None: they do not)."""
        return self.request.reason(memory)

    def admits(self, memory: Memory) -> bool:
        """Whether the memory passes the request's filters."""
        return self.request.matches(memory)

    def asks_for(self, memory_type: MemoryType) -> bool:
        """Whether the request's type filter lets memories of this type through."""
        return not self.request.types or memory_type in self.request.types
