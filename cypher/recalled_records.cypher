// The records a recall selected ($ids, in that order) as one row, each with its
// fingerprint, and `current`: whether every one of them exists and still has
// the fingerprint the gate saw ($fingerprints, parallel to $ids; null where the
// caller knows none). A read: recall runs in read access mode, so a cluster can
// serve it from a follower or read replica; its audit event is appended apart
// (append_recalls.cypher).
CALL () {
  UNWIND range(0, size($ids) - 1) AS k
  MATCH (m:Memory {tenant: $tenant, id: $ids[k]})
  RETURN collect([m.json, m.status, m.tombstone, m.sealed, m.id, m.fingerprint]) AS records,
    count(CASE WHEN $fingerprints[k] IS NULL OR m.fingerprint = $fingerprints[k] THEN 1 END) AS same
}
RETURN records, same = size($ids) AS current
