// Records that cite a source.
MATCH (:Source {tenant: $tenant, id: $id})<-[:CITES]-(m:Memory)
RETURN [m.json, m.status, m.tombstone] AS record
