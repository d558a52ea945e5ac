"""The tunable rules of every use case, and the one lock key changes take."""

from __future__ import annotations

import dataclasses
import json

from recalld_server.domain.recall.policy import RecallPolicy
from recalld_server.domain.rules.lifecycle import LifecyclePolicy
from recalld_server.domain.sensitive.policy import SensitiveDataPolicy


@dataclasses.dataclass(frozen=True, slots=True)
class Policy:
    """Tunable rules, with the documented defaults.

    Attributes:
        lifecycle: Duplicate, draft, tier and consolidation thresholds.
        recall: Ranking, fusion and relevance knobs of the recall pipeline.
        default_importance: Importance of a memory written without one.
        max_memories_per_user: Live (active and draft) memories one user may hold;
            0 means no quota.
        max_memories_per_tenant: Live memories one tenant may hold; 0 means no quota.
        sensitive_data: What is masked, refused or kept of each sensitive category.
    """

    lifecycle: LifecyclePolicy = dataclasses.field(default_factory=LifecyclePolicy)
    recall: RecallPolicy = dataclasses.field(default_factory=RecallPolicy)
    default_importance: float = 0.5
    max_memories_per_user: int = 0
    max_memories_per_tenant: int = 0
    sensitive_data: SensitiveDataPolicy = dataclasses.field(default_factory=SensitiveDataPolicy)


def user_lock_key(tenant_id: str, user_id: str) -> str:
    """The lock serialising changes to one user's memories."""
    return json.dumps(["user", tenant_id, user_id], ensure_ascii=False)
