// Records that cite a source, as one row.
MATCH (:Source {tenant: $tenant, id: $id})<-[:CITES]-(m:Memory)
RETURN collect([m.json, m.status, m.tombstone, m.sealed, m.id]) AS records
