// Update stored records in place whose scope, sources and parents are
// unchanged (status changes, erasure): properties only, no edge work.
UNWIND $rows AS row
MATCH (m:Memory {tenant: row.tenant, id: row.id})
SET m += row.props
;

UNWIND $rows AS row
UNWIND row.sources AS source
MATCH (x:Source {tenant: row.tenant, id: source.id})
SET x += source
