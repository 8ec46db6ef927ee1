// The given scopes plus every scope they are transitively WITHIN.
MATCH (s:Scope {tenant: $tenant})
WHERE s.key IN $scopes
MATCH (s)-[:WITHIN*0..]->(a:Scope)
RETURN DISTINCT a.key AS key
