"""Bearer-token authentication for the MCP server's streamable HTTP transport.

The server is an OAuth 2.1 *resource server* in the MCP authorization spec's
sense, built on the MCP SDK's own pieces (``mcp.server.auth``): a
``TokenVerifier`` decides whether a bearer token is good, and the SDK's
middleware answers every request without a valid one with ``401`` and a
``WWW-Authenticate: Bearer`` challenge (RFC 6750), plus a
``resource_metadata`` pointer (RFC 9728) when an authorization server is
configured.

The minimal mode is one static token shared with the client
(``--token-file`` or ``GRAPHMEM_MCP_TOKEN``), compared in constant time. For
OAuth 2.1 with a real authorization server, pass your own ``TokenVerifier``
(e.g. RFC 7662 introspection or JWT validation against the server's keys) and
``AuthSettings`` to ``build_server``; see the README.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from pathlib import Path

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from graphmem.errors import ContractViolation

__all__ = ["MIN_TOKEN_CHARS", "TOKEN_ENV", "StaticTokenVerifier", "load_token", "static_token_auth"]

TOKEN_ENV = "GRAPHMEM_MCP_TOKEN"  # noqa: S105 - the variable's name, not a token
MIN_TOKEN_CHARS = 32


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class StaticTokenVerifier:
    """A ``TokenVerifier`` that accepts exactly one token, as ``client_id`` ``principal``.

    Both sides are hashed before ``hmac.compare_digest``, so neither the
    content nor the length of the expected token shows in the comparison time.
    """

    def __init__(self, token: str, principal: str) -> None:
        self._expected = _digest(token)
        self._principal = principal

    async def verify_token(self, token: str) -> AccessToken | None:
        if not hmac.compare_digest(_digest(token), self._expected):
            return None
        return AccessToken(token=token, client_id=self._principal, scopes=[])


def static_token_auth(url: str) -> AuthSettings:
    """``AuthSettings`` for a static token: no authorization server, so no metadata is published."""
    return AuthSettings(issuer_url=url, resource_server_url=None)


def load_token(token_file: str | Path | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The bearer token from ``token_file`` (surrounding whitespace stripped) or else from
    ``GRAPHMEM_MCP_TOKEN``; None if neither is given.

    Raises ``ContractViolation``: ``token_file_unreadable``, or ``weak_token`` for a token
    shorter than 32 characters (``openssl rand -hex 32`` makes a good one).
    """
    environ = os.environ if environ is None else environ
    if token_file is not None:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as err:
            raise ContractViolation(
                f"cannot read the token file {str(token_file)!r}: {err}", code="token_file_unreadable"
            ) from err
        where = f"the token file {str(token_file)!r}"
    elif environ.get(TOKEN_ENV):
        token, where = environ[TOKEN_ENV].strip(), TOKEN_ENV
    else:
        return None
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise ContractViolation(
            f"the bearer token in {where} must be at least {MIN_TOKEN_CHARS} characters without "
            "whitespace; make one with `openssl rand -hex 32`",
            code="weak_token",
        )
    return token
