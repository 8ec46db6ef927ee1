// Whether a source exists in the tenant.
RETURN EXISTS { MATCH (:Source {tenant: $tenant, id: $id}) } AS found
