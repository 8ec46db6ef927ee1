// Wait until every index is online (after a schema step).
CALL db.awaitIndexes($timeout_seconds)
