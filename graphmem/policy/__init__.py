"""The write gate's pure rules (SPEC §4): secrets, poisoning, and the decision.

Imports the model and the errors only; ``MemoryStore.propose``/``approve`` orchestrate it.
"""

from graphmem.policy.decide import PolicyVerdict, decide, effective_trust
from graphmem.policy.merge import (
    approved_record,
    dedup_text,
    find_conflicts,
    find_duplicate,
    normalised_key,
)
from graphmem.policy.metrics import corpus_metrics
from graphmem.policy.poisoning import PoisonFinding, concealed_findings, poisoning_findings, scan_poisoning
from graphmem.policy.secrets import SecretFinding, find_secrets, redact_secrets
from graphmem.policy.stored import record_secret_labels, redacted_record

__all__ = [
    "PoisonFinding",
    "PolicyVerdict",
    "SecretFinding",
    "approved_record",
    "concealed_findings",
    "corpus_metrics",
    "decide",
    "dedup_text",
    "effective_trust",
    "find_conflicts",
    "find_duplicate",
    "find_secrets",
    "normalised_key",
    "poisoning_findings",
    "record_secret_labels",
    "redact_secrets",
    "redacted_record",
    "scan_poisoning",
]
