"""Append-only audit events."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from graphmem.model.base import AwareDatetime, GraphmemModel, Tenant, utcnow
from graphmem.model.records import new_id

__all__ = ["AuditEvent"]


class AuditEvent(GraphmemModel):
    """One thing that happened: ids, actor, reason, time — never record content."""

    id: str = Field(default_factory=lambda: new_id("evt"))
    tenant: Tenant
    action: str
    actor: str | None = None
    record_ids: tuple[str, ...] = ()
    reason: str | None = None
    at: AwareDatetime = Field(default_factory=utcnow)
    details: dict[str, Any] = Field(default_factory=dict)
