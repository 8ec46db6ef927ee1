// Every WITHIN and RELATED edge between a tenant's scopes.
MATCH (a:Scope {tenant: $tenant})-[r:WITHIN|RELATED]->(b:Scope)
RETURN type(r) AS label, a.key AS a, b.key AS b, r.type AS rel_type, r.recorded AS recorded
