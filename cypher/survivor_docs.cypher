// What ranking reads of records the client does not hold yet, as one row:
// [id, fingerprint, content, embedding] per record of $ids that exists.
UNWIND $ids AS id
MATCH (m:Memory {tenant: $tenant, id: id})
RETURN collect([m.id, m.fingerprint, m.content, m.embedding]) AS docs
