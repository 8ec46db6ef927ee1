// The scopes one scope is directly WITHIN.
MATCH (:Scope {tenant: $tenant, key: $scope})-[:WITHIN]->(parent:Scope)
RETURN parent.key AS key
