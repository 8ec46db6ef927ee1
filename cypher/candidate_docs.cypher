// What recall needs of gate candidates the client does not hold yet, as one
// row: [id, fingerprint (as stored: sealed), content, embedding, embedding
// model] per record of $ids that exists, with the last three only where the
// parallel $texts says so (the survivors, which are ranked), else null.
UNWIND range(0, size($ids) - 1) AS k
MATCH (m:Memory {tenant: $tenant, id: $ids[k]})
RETURN collect([m.id, m.fingerprint, CASE WHEN $texts[k] THEN m.content END,
  CASE WHEN $texts[k] THEN m.embedding END, CASE WHEN $texts[k] THEN m.embedding_model END]) AS docs
