// Whether a scope node exists in the tenant.
RETURN EXISTS { MATCH (:Scope {tenant: $tenant, key: $scope}) } AS found
