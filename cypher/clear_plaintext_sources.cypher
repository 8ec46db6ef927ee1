// After graphmem migrate --encrypt rewrote every live record (and so re-sealed
// the sources they cite), a source whose locator or digest is still a plain
// string is cited by tombstones only: its locator and digest go, as an erase
// clears them (graphmem.model.erasure).
MATCH (x:Source)
WHERE valueType(x.locator) STARTS WITH 'STRING' OR valueType(x.digest) STARTS WITH 'STRING'
SET x.locator = null, x.digest = null
RETURN count(x) AS cleared
