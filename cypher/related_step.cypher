// One hop over RELATED edges of the given types, in either direction, through
// edges recorded by $as_of (µs; null: every edge). An edge with no recorded
// time (written before relations had one) is known at every time.
UNWIND $keys AS key
MATCH (:Scope {tenant: $tenant, key: key})-[r:RELATED]-(other:Scope)
WHERE r.type IN $via AND ($as_of IS NULL OR r.recorded IS NULL OR r.recorded <= $as_of)
RETURN DISTINCT other.key AS key
