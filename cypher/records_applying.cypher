// Records whose APPLIES_TO scope is one of $scopes.
UNWIND $scopes AS key
MATCH (:Scope {tenant: $tenant, key: key})<-[:APPLIES_TO]-(m:Memory)
RETURN [m.json, m.status, m.tombstone] AS record
