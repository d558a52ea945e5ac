"""The pure lifecycle rules: duplicates, conflicts, core-memory constraints, the pair judge."""

from __future__ import annotations

from recalld_server.domain.rules.judging import JudgePolicy, VerdictMemory, Verdicts, judge_user
from recalld_server.domain.rules.lifecycle import (
    Action,
    Decision,
    LifecyclePolicy,
    WriteFacts,
    decide_topic,
    decide_write,
    demoted_expiry,
    near_duplicate,
    near_duplicate_groups,
    possible_contradictions,
    refreshed_expiry,
)

__all__ = [
    "Action",
    "Decision",
    "JudgePolicy",
    "LifecyclePolicy",
    "VerdictMemory",
    "Verdicts",
    "WriteFacts",
    "decide_topic",
    "decide_write",
    "demoted_expiry",
    "judge_user",
    "near_duplicate",
    "near_duplicate_groups",
    "possible_contradictions",
    "refreshed_expiry",
]
