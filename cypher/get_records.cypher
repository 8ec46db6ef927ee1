// Records by id, in the order given, as one row.
UNWIND $ids AS id
MATCH (m:Memory {tenant: $tenant, id: id})
RETURN collect([m.json, m.status, m.tombstone, m.sealed, m.id]) AS records
