// Records by id, in the order given.
UNWIND $ids AS id
MATCH (m:Memory {tenant: $tenant, id: id})
RETURN [m.json, m.status, m.tombstone] AS record
