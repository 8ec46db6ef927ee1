// Schema version 1: uniqueness per tenant, the gate's range indexes, fulltext on content.
CREATE CONSTRAINT graphmem_memory_id IF NOT EXISTS
FOR (m:Memory) REQUIRE (m.tenant, m.id) IS UNIQUE;
CREATE CONSTRAINT graphmem_scope_key IF NOT EXISTS
FOR (s:Scope) REQUIRE (s.tenant, s.key) IS UNIQUE;
CREATE CONSTRAINT graphmem_source_id IF NOT EXISTS
FOR (x:Source) REQUIRE (x.tenant, x.id) IS UNIQUE;
CREATE CONSTRAINT graphmem_schema_name IF NOT EXISTS
FOR (v:GraphmemSchema) REQUIRE v.name IS UNIQUE;
CREATE INDEX graphmem_memory_status IF NOT EXISTS
FOR (m:Memory) ON (m.tenant, m.kind, m.status);
CREATE INDEX graphmem_memory_content_hash IF NOT EXISTS
FOR (m:Memory) ON (m.tenant, m.content_hash);
CREATE INDEX graphmem_audit_tenant IF NOT EXISTS
FOR (e:AuditEvent) ON (e.tenant, e.at);
CREATE FULLTEXT INDEX graphmem_memory_content IF NOT EXISTS
FOR (m:Memory) ON EACH [m.content]
