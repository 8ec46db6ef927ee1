"""The key store the Neo4j backend's crypto-shredding relies on: shared, and truly deleting."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from graphmem.backends.keystore import KEYS_ENV, SqliteKeyStore, default_key_path
from graphmem.backends.neo4j_crypt import seal, unseal


def test_keys_are_created_once_and_shared_by_every_client_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "keys.sqlite3"
    a, b = SqliteKeyStore(path), SqliteKeyStore(path)
    try:
        made = a.keys("t1", "record", ["r1", "r2"], create=True)
        assert {len(k) for k in made.values()} == {32}
        assert b.keys("t1", "record", ["r1", "r2", "r3"], create=False) == made
        assert b.keys("t1", "record", ["r1"], create=True) == {"r1": made["r1"]}
        assert b.keys("t2", "record", ["r1"], create=False) == {}  # keyed by tenant too
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        a.close()
        b.close()


def test_a_deleted_key_is_in_no_byte_of_the_key_store_files(tmp_path: Path) -> None:
    path = tmp_path / "keys.sqlite3"
    store, reader = SqliteKeyStore(path), SqliteKeyStore(path)
    try:
        keys = store.keys("t1", "record", [f"r{i}" for i in range(50)], create=True)
        reader.keys("t1", "record", ["r0"], create=False)  # a second connection holds the WAL open
        store.delete("t1", "record", ["r7", "r8"])
        assert reader.keys("t1", "record", ["r7", "r8", "r9"], create=False) == {"r9": keys["r9"]}
        blobs = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
        assert keys["r7"] not in blobs
        assert keys["r8"] not in blobs
        assert keys["r9"] in blobs
    finally:
        store.close()
        reader.close()


def test_sealed_text_opens_only_with_its_key_and_its_associated_data() -> None:
    key, other = b"k" * 32, b"o" * 32
    blob = seal(key, b"graphmem/record/t1/r1", b"alice moved to Elm Street")
    assert b"Elm" not in blob
    assert unseal(key, b"graphmem/record/t1/r1", blob) == b"alice moved to Elm Street"
    assert seal(key, b"graphmem/record/t1/r1", b"alice moved to Elm Street") == blob  # deterministic
    with pytest.raises(ValueError, match="does not open"):
        unseal(other, b"graphmem/record/t1/r1", blob)
    with pytest.raises(ValueError, match="does not open"):
        unseal(key, b"graphmem/record/t1/r2", blob)  # moved to another record: refused


def test_the_default_location_is_the_environment_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(KEYS_ENV, str(tmp_path / "k.sqlite3"))
    assert default_key_path() == tmp_path / "k.sqlite3"
    monkeypatch.delenv(KEYS_ENV)
    assert default_key_path().parts[-2:] == ("graphmem", "keys.sqlite3")
