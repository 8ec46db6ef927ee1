"""Bearer-token authentication for the MCP server's streamable HTTP transport.

The server is an OAuth 2.1 *resource server* in the MCP authorization spec's
sense, built on the MCP SDK's own pieces (``mcp.server.auth``): a
``TokenVerifier`` decides whether a bearer token is good, and the SDK's
middleware answers every request without a valid one with ``401`` and a
``WWW-Authenticate: Bearer`` challenge (RFC 6750), plus a
``resource_metadata`` pointer (RFC 9728) when an authorization server is
configured.

The minimal mode is one static token shared with the client
(``--token-file`` or ``GRAPHMEM_MCP_TOKEN``), compared in constant time.

With an OAuth 2.1 authorization server in front (``--oauth-issuer``,
``--oauth-introspection``, ``--resource-url``), the server publishes its
Protected Resource Metadata at ``/.well-known/oauth-protected-resource/<path>``
naming the authorization server, points every 401 at it, and accepts an
access token only if the authorization server's RFC 7662 introspection says
it is active and issued for this resource (audience). Any other scheme (JWTs
checked against the issuer's keys, …) is a ``TokenVerifier`` of your own,
passed with ``oauth_auth(...)`` to ``build_server``.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx2
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from graphmem.errors import ContractViolation

__all__ = [
    "CLIENT_ID_ENV",
    "CLIENT_SECRET_ENV",
    "MIN_TOKEN_CHARS",
    "TOKEN_ENV",
    "IntrospectionTokenVerifier",
    "StaticTokenVerifier",
    "load_token",
    "oauth_auth",
    "static_token_auth",
]

logger = logging.getLogger(__name__)

TOKEN_ENV = "GRAPHMEM_MCP_TOKEN"  # noqa: S105 - the variable's name, not a token
CLIENT_ID_ENV = "GRAPHMEM_MCP_CLIENT_ID"
CLIENT_SECRET_ENV = "GRAPHMEM_MCP_CLIENT_SECRET"  # noqa: S105 - the variable's name
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


def _secure_url(url: str, what: str) -> str:
    """``url`` if it is https, or http on a loopback host (OAuth 2.1 requires TLS elsewhere)."""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if (parsed.scheme == "https" and host) or (parsed.scheme == "http" and loopback):
        return url
    raise ContractViolation(
        f"{what} must be an https:// URL (http:// only on a loopback address), got {url!r}",
        code="insecure_url",
    )


def _same_resource(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


class IntrospectionTokenVerifier:
    """A ``TokenVerifier`` that asks the authorization server (RFC 7662 token introspection).

    A token is accepted when the answer is ``active``, not expired, and its
    audience (``aud``, a string or a list) names ``resource_url``; the client
    id, subject, scopes and expiry come from the answer. With ``client_id`` and
    ``client_secret`` the introspection request authenticates with HTTP Basic.
    Anything else — an error status, a network failure, a malformed answer —
    refuses the token (the client then sees 401).
    """

    def __init__(
        self,
        introspection_url: str,
        resource_url: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.introspection_url = _secure_url(introspection_url, "the introspection endpoint")
        self.resource_url = resource_url
        self._client_auth = httpx2.BasicAuth(client_id, client_secret or "") if client_id else None
        self._timeout = timeout

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            async with httpx2.AsyncClient(timeout=self._timeout, auth=self._client_auth) as http:
                response = await http.post(
                    self.introspection_url, data={"token": token, "token_type_hint": "access_token"}
                )
            if response.status_code != 200:
                logger.warning("token introspection answered %s", response.status_code)
                return None
            answer: Any = response.json()
        except (httpx2.HTTPError, ValueError) as err:
            logger.warning("token introspection failed: %s", type(err).__name__)
            return None
        if not isinstance(answer, dict) or answer.get("active") is not True:
            return None
        audience = answer.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or not any(
            isinstance(a, str) and _same_resource(a, self.resource_url) for a in audiences
        ):
            return None
        scope, expires = answer.get("scope", ""), answer.get("exp")
        subject = answer.get("sub")
        return AccessToken(
            token=token,
            client_id=str(answer.get("client_id") or subject or "unknown"),
            scopes=scope.split() if isinstance(scope, str) else [],
            expires_at=expires if isinstance(expires, int) else None,
            resource=self.resource_url,
            subject=subject if isinstance(subject, str) else None,
            claims={"iss": answer["iss"]} if isinstance(answer.get("iss"), str) else None,
        )


def oauth_auth(issuer_url: str, resource_url: str, required_scopes: Sequence[str] = ()) -> AuthSettings:
    """``AuthSettings`` for a resource server behind the authorization server ``issuer_url``:
    Protected Resource Metadata (RFC 9728) for ``resource_url`` (this endpoint's public URL),
    tokens checked for that resource, and ``required_scopes`` demanded of every token (403)."""
    return AuthSettings(
        issuer_url=_secure_url(issuer_url, "the authorization server"),
        resource_server_url=_secure_url(resource_url, "the resource URL"),
        validate_token_resource=True,
        required_scopes=list(required_scopes) or None,
    )
