// Every SUPERSEDES and INVALIDATED_BY edge from a tenant's records.
MATCH (a:Memory {tenant: $tenant})-[r:SUPERSEDES|INVALIDATED_BY]->(b)
RETURN type(r) AS label, a.id AS src, b.id AS dst, b:Source AS dst_is_source, r.at AS at, r.reason AS reason,
  r.recorded AS recorded
