"""Test support for graphmem (not imported by the library itself).

``graphmem.testing.neo4j_server`` starts a real Neo4j 5.26 Community server
from Maven Central artifacts for tests, CI and benchmarks.
"""
