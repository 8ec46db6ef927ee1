// The records a recall selected ($ids, in that order) as one row, each with its
// stored fingerprint and kept versions (times and sealed bodies: a replay returns the
// version it selected), and `current`: whether every one of them exists and still has
// the fingerprint the gate saw ($fingerprints, parallel to $ids, as stored: sealed,
// the string the gate's tokens are a hash of; null where the caller knows none; a
// replay's gate may have seen an earlier version, m.v_fp). A sealed fingerprint names
// its place (live, or the version kept until a time), so a live one moved to the kept
// versions by an overwrite no longer matches.
// A read: recall runs in read access mode, so a cluster can serve it from a
// follower or read replica; its audit event is appended apart
// (append_recalls.cypher).
CALL () {
  UNWIND range(0, size($ids) - 1) AS k
  MATCH (m:Memory {tenant: $tenant, id: $ids[k]})
  RETURN collect([m.json, m.status, m.tombstone, m.sealed, m.id, m.fingerprint, m.v_until, m.v_body]) AS records,
    count(CASE WHEN $fingerprints[k] IS NULL OR m.fingerprint = $fingerprints[k]
      OR $fingerprints[k] IN coalesce(m.v_fp, []) THEN 1 END) AS same
}
RETURN records, same = size($ids) AS current
