// The kept versions of some records of one tenant ($ids) as one row: each
// record's id, the times its versions were held until, and their fingerprints
// as stored, sealed (a verify replaying a receipt needs them for records
// forgotten since).
CALL () {
  MATCH (m:Memory {tenant: $tenant})
  WHERE m.id IN $ids
  RETURN collect([m.id, m.v_until, m.v_fp]) AS records
}
RETURN records
