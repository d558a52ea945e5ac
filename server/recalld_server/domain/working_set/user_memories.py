"""Users' memories as the use cases see them: the working set and the change writer.

Built once per process and shared by every use case, so a change made by one (a
write, a consolidation) is seen by all.
"""

from __future__ import annotations

from recalld_server.domain.core.ports import Backends
from recalld_server.domain.working_set.cache import WorkingSet, WorkingSetPolicy
from recalld_server.domain.working_set.changes import ChangeWriter, Invalidate
from recalld_server.domain.working_set.group_commit import GroupCommit


class UserMemories:
    """The working set and the change writer that keeps it and storage in step."""

    def __init__(
        self,
        backends: Backends,
        invalidate: Invalidate,
        policy: WorkingSetPolicy | None = None,
    ) -> None:
        self.working_set = WorkingSet(
            backends.store,
            backends.generations,
            backends.analyzer,
            backends.embedder.dimension,
            policy,
        )
        self.commits = GroupCommit(backends.store, backends.history)
        self.changes = ChangeWriter(
            backends.store, backends.history, self.working_set, self.commits, invalidate
        )
