// Records whose APPLIES_TO scope is one of $scopes, as one row.
UNWIND $scopes AS key
MATCH (:Scope {tenant: $tenant, key: key})<-[:APPLIES_TO]-(m:Memory)
RETURN collect([m.json, m.status, m.tombstone, m.sealed, m.id]) AS records
