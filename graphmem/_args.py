"""Validation of plain arguments to the public API: every failure is a ``ContractViolation``."""

from __future__ import annotations

import re
from datetime import datetime

from graphmem.errors import ContractViolation
from graphmem.model import GraphmemModel
from graphmem.model.base import AwareDatetime, ScopeKey, Tenant

__all__ = ["check_aware", "check_rel_type", "check_scope", "check_tenant"]

_REL_TYPE = re.compile(r"[A-Z][A-Z0-9_]{0,31}")


class _TenantArg(GraphmemModel):
    error_code = "invalid_tenant"
    tenant: Tenant


class _ScopeArg(GraphmemModel):
    error_code = "invalid_scope"
    scope: ScopeKey


class _TimeArg(GraphmemModel):
    error_code = "invalid_time"
    at: AwareDatetime


def check_tenant(tenant: str) -> str:
    return str(_TenantArg(tenant=tenant).tenant)


def check_scope(scope: str) -> str:
    return str(_ScopeArg(scope=scope).scope)


def check_aware(at: datetime) -> datetime:
    return _TimeArg(at=at).at


def check_rel_type(rel_type: str) -> str:
    if not isinstance(rel_type, str) or not _REL_TYPE.fullmatch(rel_type):
        raise ContractViolation(
            f"relation type {rel_type!r} must be upper-case letters, digits and _, e.g. USES",
            code="invalid_relation_type",
        )
    return rel_type
