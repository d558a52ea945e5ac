"""Who may do what: the caller's role and agent scopes, checked before any rule runs.

The tenant itself is never checked here: every storage call is confined to the
caller's tenant (from the credential), and `visible` checks it once more on
each loaded memory.
"""

from __future__ import annotations

from recalld_server.domain.core.errors import PermissionDeniedError
from recalld_server.domain.core.model import Memory, Principal


def require_writer(principal: Principal) -> None:
    """Read-only credentials may not change anything."""
    if not principal.may_write():
        raise PermissionDeniedError("this credential is read-only")


def require_admin(principal: Principal, what: str) -> None:
    """Tenant-wide operations need an admin key."""
    if principal.role != "admin":
        raise PermissionDeniedError(f"{what} needs an admin key")


def require_scope(principal: Principal, scope: str, field: str) -> None:
    """The caller may use this agent scope (default deny outside its list)."""
    if not principal.may_use_scope(scope):
        raise PermissionDeniedError(f"{field}: agent scope {scope!r} is not allowed")


def readable_scopes(principal: Principal) -> frozenset[str] | None:
    """The scopes whose memories the caller may see (None: all); shared ones always."""
    if "*" in principal.allowed_scopes:
        return None
    return principal.allowed_scopes | {""}


def visible(principal: Principal, user_id: str, memory: Memory) -> bool:
    """Whether a loaded memory belongs to the caller's tenant, the user and a scope it may use.

    The store is already confined to the tenant; checking it again costs nothing
    and keeps one storage bug from becoming a cross-tenant leak.
    """
    return (
        memory.tenant_id == principal.tenant_id
        and memory.user_id == user_id
        and principal.may_use_scope(memory.agent_scope)
    )
