// A scope plus every scope transitively WITHIN it.
MATCH (s:Scope {tenant: $tenant, key: $scope})
MATCH (s)<-[:WITHIN*0..]-(d:Scope)
RETURN DISTINCT d.key AS key
