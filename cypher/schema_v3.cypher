// Schema version 3: the gate list m.g carries the record's fingerprint tokens
// at 8 and 9 (its first 120 bits as two integers of 15 hex digits each; see
// graphmem.backends.neo4j.fingerprint_tokens), so the gate reports two
// integers per candidate instead of a 64-digit fingerprint. The edge times
// move to 10 and 11. Data migration in batches; it only touches version-2
// lists (10 entries), so re-running is harmless.
MATCH (m:Memory) WHERE size(m.g) = 10
CALL (m) {
  WITH m, {`0`: 0, `1`: 1, `2`: 2, `3`: 3, `4`: 4, `5`: 5, `6`: 6, `7`: 7, `8`: 8, `9`: 9,
    a: 10, b: 11, c: 12, d: 13, e: 14, f: 15} AS hex
  SET m.g = m.g[0..8] + [
    reduce(n = 0, c IN split(substring(m.fingerprint, 0, 15), '') | n * 16 + hex[c]),
    reduce(n = 0, c IN split(substring(m.fingerprint, 15, 15), '') | n * 16 + hex[c])
  ] + m.g[8..]
} IN TRANSACTIONS OF 10000 ROWS
