"""Users' memories as the use cases see them.

In-process sets, the change writer, group commit and the cached profile.
"""

from __future__ import annotations

from recalld_server.domain.working_set.cache import WorkingSet, WorkingSetPolicy
from recalld_server.domain.working_set.changes import Batch, Change, bump, scan
from recalld_server.domain.working_set.profile import ProfileService, select_profile
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.domain.working_set.user_set import UserSet

__all__ = [
    "Batch",
    "Change",
    "ProfileService",
    "UserMemories",
    "UserSet",
    "WorkingSet",
    "WorkingSetPolicy",
    "bump",
    "scan",
    "select_profile",
]
