// The ids of the records that cite a source, as one row.
MATCH (:Source {tenant: $tenant, id: $id})<-[:CITES]-(m:Memory)
RETURN collect(m.id) AS ids
