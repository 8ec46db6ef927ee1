"""Crypto-shredding for the Neo4j backend: what it writes of user text, it writes encrypted.

Neo4j does not zero the store records it frees and keeps transaction logs by policy, so
deleting a property never removes its bytes from the server's disk. Instead every
text-bearing value is written as AES-256-GCM ciphertext under a data key of its own —
one per record (content, embedding and its model's id, the record's JSON), one per source (locator,
digest) — and erasing deletes the key from the ``KeyStore``: the ciphertext left in
Neo4j's files can then never be read. Values queries match on for equality (tags,
content hashes, preconditions) are written as keyed HMAC-SHA-256 tokens under a per
tenant key instead, so lookups still work and the server never sees the value.

A record's fingerprint (the SHA-256 of its canonical JSON, which anyone guessing its text
could recompute) is sealed too, live and kept versions alike (``s1:`` and the base64 of
the ciphertext, under the record's key); the gate's fingerprint tokens are taken from the
sealed string (``neo4j_cache.stored_tokens``), which confirms nothing once the key is gone.
Names derived from content (proposal ids, hashed LangGraph scopes and item ids) are keyed
hashes under a per tenant naming key (``name_digest``), which no erase deletes.

A record node keeps, in clear, only what its tombstone keeps (``graphmem.model.erasure``):
its ``json`` is the tombstone-shaped record, the whole record is in ``sealed``. A record
whose key is gone but whose node was not yet rewritten (a crash between the two steps of
an erase) reads as that tombstone, erased: never as its text.

Encryption is deterministic per key (the nonce is derived from the key and the
plaintext, as in SIV), so rewriting an unchanged value writes the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from graphmem.backends.keystore import KeyStore, Owner
from graphmem.model import MemoryRecord, Source, Status, Tombstone
from graphmem.model.erasure import erase_record
from graphmem.model.records import ERASED_UNREAD

__all__ = ["ERASED_UNREAD", "SEALED_FINGERPRINT", "Crypt", "SealedRecord"]

_VERSION = b"\x01"
_Doc = tuple[str, tuple[float, ...] | None, str | None]
#: How a sealed fingerprint starts; a fingerprint without it was written in clear (before
#: fingerprints were sealed, or a tombstone's, which hashes only what the tombstone keeps).
SEALED_FINGERPRINT = "s1:"


def _fingerprint_aad(tenant: str, record_id: str, until: int | None) -> bytes:
    """A live fingerprint's associated data, or (``until``) a kept version's."""
    field = "/fingerprint" if until is None else f"/v/{until}/fingerprint"
    return _aad("record", tenant, record_id) + field.encode()


def _aad(owner: Owner, tenant: str, item: str) -> bytes:
    return f"graphmem/{owner}/{tenant}/{item}".encode()


def seal(key: bytes, aad: bytes, plaintext: bytes) -> bytes:
    """Version byte, 12-byte nonce, AES-GCM ciphertext and tag."""
    nonce = hmac.new(key, aad + b"\0" + plaintext, hashlib.sha256).digest()[:12]
    return _VERSION + nonce + AESGCM(key).encrypt(nonce, plaintext, aad)


def unseal(key: bytes, aad: bytes, blob: bytes) -> bytes:
    """The plaintext of ``seal``; ``ValueError`` for another key, other associated data or
    altered bytes."""
    if blob[:1] != _VERSION:
        raise ValueError("unknown sealed format")
    try:
        return AESGCM(key).decrypt(blob[1:13], blob[13:], aad)
    except InvalidTag:
        raise ValueError("sealed value does not open with this key") from None


def record_of(stored: Sequence[Any]) -> MemoryRecord:
    """A record from what a read returns: [json, status, tombstone JSON or null].

    Version-1 JSON still carries status and tombstone; the node's status always
    wins, and its tombstone when it has one.
    """
    text, status, tombstone = stored
    record = MemoryRecord.model_validate_json(text)
    if record.status.value == status and tombstone is None:
        return record
    update: dict[str, Any] = {"status": Status(status)}
    if tombstone is not None:
        update["tombstone"] = Tombstone.model_validate_json(tombstone)
    return record.model_copy(update=update)


@dataclass(frozen=True, slots=True)
class SealedRecord:
    """The properties a record node stores (see the module docstring)."""

    content: str | bytes
    content_hash: str
    #: The fingerprint as stored: sealed (``SEALED_FINGERPRINT``), or in clear for a tombstone.
    fingerprint: str
    embedding: bytes | None
    embedding_model: bytes | None
    json: str
    sealed: bytes | None
    preconditions: list[str]
    tags: list[str]
    sources: list[dict[str, Any]]


class Crypt:
    """Seals what the Neo4j backend writes and opens what it reads, with keys from ``keys``."""

    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys
        self._token_keys: dict[str, bytes] = {}
        self._naming_keys: dict[str, bytes] = {}

    # -- tokens -------------------------------------------------------------

    def _token_key(self, tenant: str) -> bytes:
        key = self._token_keys.get(tenant)
        if key is None:
            key = self.keys.keys(tenant, "tenant", ["tokens"], create=True)["tokens"]
            self._token_keys[tenant] = key
        return key

    def token(self, tenant: str, value: str) -> str:
        """The keyed hash equality lookups match on in place of ``value``."""
        digest = hmac.new(self._token_key(tenant), value.encode(), hashlib.sha256).hexdigest()
        return f"h1:{digest[:40]}"

    def name_digest(self, tenant: str, value: str) -> str:
        """HMAC-SHA-256 (hex) of ``value`` under the tenant's naming key, for names derived
        from content: a tombstone keeps such a name, and an unkeyed hash of it would confirm
        a guess of the erased text. The naming key is kept (no erase deletes it)."""
        key = self._naming_keys.get(tenant)
        if key is None:
            key = self.keys.keys(tenant, "tenant", ["names"], create=True)["names"]
            self._naming_keys[tenant] = key
        return hmac.new(key, value.encode(), hashlib.sha256).hexdigest()

    def tokens(self, tenant: str, values: Iterable[str]) -> list[str]:
        return [self.token(tenant, v) for v in values]

    def lookup(self, tenant: str, value: str) -> list[str]:
        """What to match a stored value against: its token, and the value itself for records
        written before encryption (until ``graphmem migrate --encrypt`` rewrote them)."""
        return [self.token(tenant, value), value]

    # -- writing ------------------------------------------------------------

    def seal_records(self, tenant: str, records: Sequence[MemoryRecord]) -> list[SealedRecord]:
        """The stored form of each record; creates the data keys it needs."""
        live = [r for r in records if r.status is not Status.ERASED]
        keys = self.keys.keys(tenant, "record", [r.id for r in live], create=True) if live else {}
        # A tombstone keeps a locator only while a live record cites the source: seal it too.
        source_ids = sorted({s.id for r in records for s in r.sources if s.locator or s.digest})
        source_keys = self.keys.keys(tenant, "source", source_ids, create=True) if source_ids else {}
        return [self._seal_record(r, keys.get(r.id), source_keys) for r in records]

    def _seal_record(
        self, record: MemoryRecord, key: bytes | None, source_keys: dict[str, bytes]
    ) -> SealedRecord:
        tenant = record.tenant
        full = record.model_dump_json(exclude={"status", "tombstone"})
        fingerprint = record.fingerprint()
        if key is None:  # an erased record: a tombstone, nothing left to hide
            return SealedRecord(
                content=record.content,
                content_hash=self.token(tenant, record.content_hash),
                fingerprint=fingerprint,
                embedding=None,
                embedding_model=None,
                json=full,
                sealed=None,
                preconditions=[],
                tags=[],
                sources=self.seal_sources(tenant, record.sources, source_keys),
            )
        aad = _aad("record", tenant, record.id)
        shell = erase_record(
            record,
            record.tombstone or Tombstone(at=record.created_at, reason="-", requested_by="-"),
            gone_sources={s.id for s in record.sources},
        ).model_dump_json(exclude={"status", "tombstone"})
        embedding = model = None
        if record.embedding is not None:
            embedding = seal(key, aad + b"/embedding", array("d", record.embedding).tobytes())
        if record.embedding_model is not None:
            model = seal(key, aad + b"/embedding_model", record.embedding_model.encode())
        return SealedRecord(
            content=seal(key, aad + b"/content", record.content.encode()),
            content_hash=self.token(tenant, record.content_hash),
            fingerprint=self._seal_fingerprint(key, tenant, record.id, fingerprint, None),
            embedding=embedding,
            embedding_model=model,
            json=shell,
            sealed=seal(key, aad, full.encode()),
            preconditions=self.tokens(tenant, record.preconditions),
            tags=self.tokens(tenant, record.tags),
            sources=self.seal_sources(tenant, record.sources, source_keys),
        )

    def seal_version(self, record: MemoryRecord, until: int) -> str:
        """A kept version (the whole record as it was until ``until`` µs), sealed under the
        record's key, as text: a node keeps its versions in a list property."""
        key = self.keys.keys(record.tenant, "record", [record.id], create=True)[record.id]
        aad = _aad("record", record.tenant, record.id) + f"/v/{until}".encode()
        return base64.b64encode(seal(key, aad, record.model_dump_json().encode())).decode()

    def seal_version_fingerprint(self, tenant: str, record_id: str, fingerprint: str, until: int) -> str:
        """A kept version's fingerprint sealed under the record's key."""
        key = self.keys.keys(tenant, "record", [record_id], create=True)[record_id]
        return self._seal_fingerprint(key, tenant, record_id, fingerprint, until)

    @staticmethod
    def _seal_fingerprint(
        key: bytes, tenant: str, record_id: str, fingerprint: str, until: int | None
    ) -> str:
        blob = seal(key, _fingerprint_aad(tenant, record_id, until), fingerprint.encode())
        return SEALED_FINGERPRINT + base64.b64encode(blob).decode()

    def seal_sources(
        self, tenant: str, sources: Iterable[Source], keys: dict[str, bytes] | None = None
    ) -> list[dict[str, Any]]:
        """Source node properties: the locator and digest sealed under the source's key."""
        sources = list(sources)
        if keys is None:
            wanted = [s.id for s in sources if s.locator or s.digest]
            keys = self.keys.keys(tenant, "source", wanted, create=True) if wanted else {}
        out: list[dict[str, Any]] = []
        for source in sources:
            # Quotes live only in the records that carry them (sealed in their JSON).
            props: dict[str, Any] = source.model_dump(mode="json", exclude={"quote"})
            key = keys.get(source.id)
            aad = _aad("source", tenant, source.id)
            for name in ("locator", "digest"):
                value = props[name]
                if value is not None:
                    if key is None:
                        props[name] = None
                    else:
                        props[name] = seal(key, aad + f"/{name}".encode(), value.encode())
            out.append(props)
        return out

    # -- reading ------------------------------------------------------------

    def records(self, tenant: str, rows: Sequence[Sequence[Any]]) -> list[MemoryRecord]:
        """Records from stored rows ``[json, status, tombstone JSON, sealed, id]``."""
        wanted = [row[4] for row in rows if row[3] is not None]
        keys = self.keys.keys(tenant, "record", wanted, create=False) if wanted else {}
        return [self._record(tenant, row, keys.get(row[4])) for row in rows]

    def record_keys(self, tenant: str, ids: Iterable[str]) -> dict[str, bytes]:
        """The data keys that still exist of these records (none is created)."""
        wanted = sorted(set(ids))
        return self.keys.keys(tenant, "record", wanted, create=False) if wanted else {}

    def fingerprints(
        self,
        tenant: str,
        stored: Sequence[tuple[str, str, int | None]],
        keys: dict[str, bytes] | None = None,
    ) -> list[str | None]:
        """The fingerprints of stored ``(record id, stored fingerprint, until µs of a kept
        version or None for the live one)``: a clear one as it is, a sealed one opened;
        None where the record's key is gone (erased)."""
        if keys is None:
            keys = self.record_keys(tenant, (rid for rid, fp, _ in stored if _is_sealed(fp)))
        out: list[str | None] = []
        for rid, fingerprint, until in stored:
            if not _is_sealed(fingerprint):
                out.append(fingerprint)
                continue
            key = keys.get(rid)
            try:
                if key is None:
                    raise ValueError("key deleted")
                blob = base64.b64decode(fingerprint[len(SEALED_FINGERPRINT) :])
                out.append(unseal(key, _fingerprint_aad(tenant, rid, until), blob).decode())
            except ValueError:
                out.append(None)
        return out

    def versions(self, tenant: str, kept: Sequence[tuple[str, int, str]]) -> dict[str, MemoryRecord]:
        """The kept versions ``(record id, until µs, sealed text)`` opened, by record id; one
        whose key is gone (erased) is left out."""
        keys = self.keys.keys(tenant, "record", [rid for rid, _, _ in kept], create=False) if kept else {}
        out: dict[str, MemoryRecord] = {}
        for rid, until, text in kept:
            key = keys.get(rid)
            if key is None:
                continue
            aad = _aad("record", tenant, rid) + f"/v/{until}".encode()
            try:
                out[rid] = MemoryRecord.model_validate_json(unseal(key, aad, base64.b64decode(text)))
            except ValueError:
                continue
        return out

    def _record(self, tenant: str, row: Sequence[Any], key: bytes | None) -> MemoryRecord:
        text, status, tombstone, sealed, rid = row[:5]
        if sealed is not None:
            opened = None
            if key is not None:
                try:
                    opened = unseal(key, _aad("record", tenant, rid), bytes(sealed)).decode()
                except ValueError:
                    opened = None
            if opened is None:
                return self._unreadable(text, tombstone)
            text = opened
        return record_of((text, status, tombstone))

    @staticmethod
    def _unreadable(shell: str, tombstone: str | None) -> MemoryRecord:
        record = MemoryRecord.model_validate_json(shell)
        stone = (
            Tombstone.model_validate_json(tombstone)
            if tombstone is not None
            else Tombstone(at=record.created_at, reason=ERASED_UNREAD, requested_by="graphmem")
        )
        return record.model_copy(update={"status": Status.ERASED, "tombstone": stone})

    def source(self, tenant: str, props: dict[str, Any]) -> Source:
        """A source from its node's properties."""
        values = {k: v for k, v in props.items() if v is not None}
        sealed = [n for n in ("locator", "digest") if isinstance(values.get(n), bytes | bytearray)]
        if sealed:
            key = self.keys.keys(tenant, "source", [values["id"]], create=False).get(values["id"])
            aad = _aad("source", tenant, values["id"])
            for name in sealed:
                try:
                    if key is None:
                        raise ValueError("key deleted")
                    values[name] = unseal(key, aad + f"/{name}".encode(), bytes(values[name])).decode()
                except ValueError:
                    del values[name]
        return Source.model_validate(values)

    def docs(
        self, tenant: str, rows: Sequence[Sequence[Any]], keys: dict[str, bytes] | None = None
    ) -> dict[str, _Doc | None]:
        """Decrypted ``(content, embedding, embedding model)`` of ``[id, content, embedding,
        embedding model]`` rows; None for a record whose key is gone (erased)."""
        if keys is None:
            keys = self.record_keys(tenant, (row[0] for row in rows if isinstance(row[1], bytes | bytearray)))
        out: dict[str, _Doc | None] = {}
        for rid, content, embedding, sealed_model in rows:
            if not isinstance(content, bytes | bytearray):  # written before encryption
                out[rid] = (content, None if embedding is None else tuple(embedding), sealed_model)
                continue
            key = keys.get(rid)
            aad = _aad("record", tenant, rid)
            try:
                if key is None:
                    raise ValueError("key deleted")
                text = unseal(key, aad + b"/content", bytes(content)).decode()
                vector = model = None
                if embedding is not None:
                    vector = tuple(array("d", unseal(key, aad + b"/embedding", bytes(embedding))))
                if sealed_model is not None:
                    model = unseal(key, aad + b"/embedding_model", bytes(sealed_model)).decode()
            except ValueError:
                out[rid] = None
                continue
            out[rid] = (text, vector, model)
        return out

    # -- erasing ------------------------------------------------------------

    def shred(self, tenant: str, records: Sequence[MemoryRecord]) -> None:
        """Delete the keys of erased ``records`` and of the sources they no longer keep a
        locator or digest for (erased, or cited only by erased records)."""
        erased = [r for r in records if r.status is Status.ERASED]
        gone = sorted(
            {
                s.id
                for r in records
                for s in r.sources
                if s.status == "erased" or (r.status is Status.ERASED and not (s.locator or s.digest))
            }
        )
        if erased:
            self.keys.delete(tenant, "record", [r.id for r in erased])
        if gone:
            self.keys.delete(tenant, "source", gone)


def _is_sealed(fingerprint: str) -> bool:
    return fingerprint.startswith(SEALED_FINGERPRINT)
