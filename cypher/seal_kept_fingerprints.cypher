// graphmem migrate --encrypt: the kept versions' fingerprints of records of one
// tenant ($tenant) sealed in place. Each row: [id, the sealed fingerprints, their
// first tokens, their second tokens], parallel to the node's v_until; a record
// that reads as erased (its key is gone) has null lists: it keeps no version.
UNWIND $rows AS row
MATCH (m:Memory {tenant: $tenant, id: row[0]})
SET m.v_fp = row[1], m.v_tok1 = row[2], m.v_tok2 = row[3]
FOREACH (_ IN CASE WHEN row[1] IS NULL THEN [1] ELSE [] END |
  SET m.v_until = null, m.v_status = null, m.v_body = null
)
