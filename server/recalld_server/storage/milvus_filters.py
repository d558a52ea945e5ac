"""The Milvus boolean expressions for the domain's filters, and the tenant term on each.

Tenant isolation on Milvus Lite is the filter alone (no partitions), so every
expression the store sends is built here: `build_filter` says in Milvus's
language what `MemoryFilter.matches` says in process, `upkeep_filter` what
`Upkeep.matches` says, and the congruence suite holds each pair together.
Literals go through `expressions.quote`.
"""

from __future__ import annotations

from recalld_server.domain.core.model import PURGEABLE, MemoryFilter, Status, Tier, Upkeep
from recalld_server.storage.expressions import quote


def build_filter(memory_filter: MemoryFilter) -> str:
    """The boolean expression for a MemoryFilter (tenant and user always included)."""
    f = memory_filter
    parts = [f"tenant_id == {quote(f.tenant_id)}"]
    if f.user_id is not None:
        parts.append(f"user_id == {quote(f.user_id)}")
    if f.statuses:
        parts.append(f"status in {sorted(int(s) for s in f.statuses)}")
    if f.types:
        parts.append(f"type in {sorted(int(t) for t in f.types)}")
    if f.tiers:
        parts.append(f"tier in {sorted(int(t) for t in f.tiers)}")
    if f.scopes is not None and not f.scopes:
        parts.append('id == ""')  # no scope at all: nothing (Lite rejects `in []`)
    elif f.scopes is not None:
        parts.append(f"agent_scope in [{', '.join(quote(s) for s in sorted(f.scopes))}]")
    for tag in sorted(f.tags):
        parts.append(f"array_contains(tags, {quote(tag)})")
    if f.session_id:
        parts.append(f"session_id == {quote(f.session_id)}")
    if f.topic_keys:
        parts.append(f"topic_key in [{', '.join(quote(k) for k in sorted(f.topic_keys))}]")
    if f.content_hashes:
        parts.append(f"content_hash in [{', '.join(quote(h) for h in sorted(f.content_hashes))}]")
    if f.occurred_after:
        parts.append(f"occurred_at >= {int(f.occurred_after)}")
    if f.occurred_before:
        parts.append(f"occurred_at < {int(f.occurred_before)}")
    if f.created_after:
        parts.append(f"created_at >= {int(f.created_after)}")
    if f.created_before:
        parts.append(f"created_at < {int(f.created_before)}")
    if f.unexpired_at:
        parts.append(f"(expire_at == 0 or expire_at > {int(f.unexpired_at)})")
    if f.expired_at:
        parts.append(f"(expire_at > 0 and expire_at <= {int(f.expired_at)})")
    if f.tier_unused_before:
        cutoff = int(f.tier_unused_before)
        parts.append(f"(created_at < {cutoff} and last_accessed_at < {cutoff})")
    if f.after_id:
        parts.append(f"id > {quote(f.after_id)}")
    return " and ".join(parts)


def upkeep_filter(upkeep: Upkeep) -> str:
    """The boolean expression for `Upkeep.matches` (the congruence suite holds them together)."""
    u = upkeep
    active, draft, p1 = int(Status.ACTIVE), int(Status.DRAFT), int(Tier.P1)
    expired = f"(expire_at > 0 and expire_at <= {int(u.now)})"
    due = [expired]
    if u.unused_before:
        cutoff = int(u.unused_before)
        due.append(
            f"(tier == {p1} and created_at < {cutoff} and last_accessed_at < {cutoff}"
            f" and (expire_at == 0 or expire_at > {int(u.now)}))"
        )
    if u.changed_since is not None:
        due.append(f"updated_at >= {int(u.changed_since)}")
    branches = [
        f"(status == {draft} and {expired})",
        f"(status == {active} and ({' or '.join(due)}))",
    ]
    if u.purge_before:
        purgeable = ", ".join(str(int(status)) for status in sorted(PURGEABLE))
        branches.append(f"(status in [{purgeable}] and updated_at < {int(u.purge_before)})")
    parts = [f"({' or '.join(branches)})"]
    if u.tenant_id is not None:
        parts.append(f"tenant_id == {quote(u.tenant_id)}")
    if u.scopes is not None and not u.scopes:
        parts.append('id == ""')
    elif u.scopes is not None:
        parts.append(f"agent_scope in [{', '.join(quote(s) for s in sorted(u.scopes))}]")
    return " and ".join(parts)


def tenant_scoped(tenant_id: str, expression: str) -> str:
    """Confines an expression to one tenant.

    The tenant term goes last: Milvus Lite 2.5.1 silently evaluates a primary-key
    `id in [...]` wrongly when another term precedes it, once a collection spans
    several segments (queries miss rows, deletes delete nothing and report
    success; docs/storage-choice.md). Callers put id terms first.
    """
    return f"({expression}) and tenant_id == {quote(tenant_id)}"
