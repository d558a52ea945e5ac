"""The session use cases: append, context, end, reads, and the extraction they drive."""

from __future__ import annotations

from recalld_server.domain.sessions.context_assembly import ContextRequest, ContextResult
from recalld_server.domain.sessions.service import SessionService
from recalld_server.domain.sessions.session_window import SessionPolicy

__all__ = ["ContextRequest", "ContextResult", "SessionPolicy", "SessionService"]
