// One hop over RELATED edges of the given types, in either direction.
UNWIND $keys AS key
MATCH (:Scope {tenant: $tenant, key: key})-[r:RELATED]-(other:Scope)
WHERE r.type IN $via
RETURN DISTINCT other.key AS key
