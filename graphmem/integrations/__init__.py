"""Adapters that put graphmem behind other protocols and frameworks (e.g. ``mcp_server``).

Each integration imports its third-party dependency itself, so ``import graphmem`` never needs them.
"""
