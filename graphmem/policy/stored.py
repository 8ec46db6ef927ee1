"""Secrets in records that arrive without a proposal (an import): the write gate's secret rule
applied to every free-text field a record keeps. Pure: model only."""

from __future__ import annotations

from graphmem.model import MemoryRecord
from graphmem.policy.secrets import find_secrets, redact_secrets

__all__ = ["record_secret_labels", "redacted_record"]


def _stored_text(record: MemoryRecord) -> dict[str, str]:
    """Every free-text field ``record`` keeps, by field path."""
    fields = {"content": record.content}
    for i, source in enumerate(record.sources):
        fields[f"sources[{i}].quote"] = source.quote or ""
        fields[f"sources[{i}].locator"] = source.locator or ""
    for name in ("tags", "preconditions"):
        for i, value in enumerate(getattr(record, name)):
            fields[f"{name}[{i}]"] = value
    for name in ("procedure_name", "procedure_version", "outcome"):
        fields[name] = getattr(record, name) or ""
    if record.tombstone is not None:
        fields["tombstone.reason"] = record.tombstone.reason
    return {k: v for k, v in fields.items() if v}


def record_secret_labels(record: MemoryRecord) -> list[str]:
    """Labels of the secrets in ``record`` (``secret:<kind>``, ``@<field>`` outside the content);
    never the secret text itself."""
    labels = []
    for path, text in _stored_text(record).items():
        for finding in find_secrets(text):
            labels.append(finding.label if path == "content" else f"{finding.label}@{path}")
    return list(dict.fromkeys(labels))


def redacted_record(record: MemoryRecord) -> MemoryRecord:
    """``record`` with every secret in its free text replaced by ``[REDACTED:<kind>]``."""

    def red(text: str | None) -> str | None:
        return None if text is None else redact_secrets(text)[0]

    data = record.model_dump()
    data.update(
        content=red(record.content),
        sources=[
            {**s.model_dump(), "quote": red(s.quote), "locator": red(s.locator)} for s in record.sources
        ],
        tags=[red(t) for t in record.tags],
        preconditions=[red(p) for p in record.preconditions],
        procedure_name=red(record.procedure_name),
        procedure_version=red(record.procedure_version),
        outcome=red(record.outcome),
    )
    if record.tombstone is not None:
        data["tombstone"] = {**record.tombstone.model_dump(), "reason": red(record.tombstone.reason)}
    return MemoryRecord.model_validate(data)
