"""Serving graphmem over MCP as people deploy it: ``graphmem serve-mcp`` as a real subprocess,
spoken to by the official MCP client — the default store in the user-data directory and its
restart, streamable HTTP with a bearer token (401 without it, or with a wrong one), ``--no-auth``
and an OAuth 2.1 authorization server in front.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import anyio
import httpx2
import pytest
import uvicorn
from mcp import ClientSession, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from test_mcp_server import (
    PRINCIPAL,
    REPO,
    T0,
    TOOLS,
    R,
    Target,
    call,
    data,
    error_code,
    text_of,
    with_session,
)

from graphmem import Kind, MemoryRecord, MemoryStore
from graphmem.errors import ContractViolation
from graphmem.integrations.mcp_auth import (
    CLIENT_ID_ENV,
    CLIENT_SECRET_ENV,
    TOKEN_ENV,
    IntrospectionTokenVerifier,
    StaticTokenVerifier,
    load_token,
    oauth_auth,
)


@pytest.fixture
def file_target(tmp_path: Path) -> Target:
    path = tmp_path / "memdir"
    return Target(uri=path.as_uri(), open=lambda: MemoryStore.embedded(path))


# -- the default store -----------------------------------------------------------------


def data_home_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose user-data directory lies under ``tmp_path``, never the real one."""
    env = {k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "PATH")}
    return {**env, "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data")}


def cli_params(env: dict[str, str], *args: str) -> StdioServerParameters:
    """``graphmem serve-mcp ARGS`` over stdio, with exactly ``env`` (no GRAPHMEM_STORE)."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "graphmem", "serve-mcp", *args], env=env, cwd=str(REPO)
    )


def test_the_default_store_persists_in_the_user_data_directory(tenant: str, tmp_path: Path) -> None:
    env = data_home_env(tmp_path)
    identity = ("--tenant", tenant, "--principal", PRINCIPAL, "--scope", "user:alice")

    async def first(session: ClientSession) -> tuple[CallToolResult, CallToolResult]:
        remembered = await call(
            session,
            "remember",
            kind="episodic",
            scope="user:alice",
            content="Alice asked to be called back after 5pm.",
            outcome="unknown",
        )
        # The limit is enforced in the real server process too: a tool error with the code.
        elsewhere = await call(session, "recall", query="Bob", scopes=["user:bob"])
        return remembered, elsewhere

    async def recall(session: ClientSession) -> CallToolResult:
        return await call(session, "recall", query="called back")

    log = tmp_path / "first.log"
    remembered, elsewhere = with_session(cli_params(env, *identity), log, first)
    record_id = data(remembered)["record_id"]
    assert error_code(elsewhere) == "scope_not_allowed"
    assert "user:bob" in text_of(elsewhere)
    expected = tmp_path / "data" / "graphmem" / "memory"
    assert f"store {expected}" in log.read_text()
    assert expected.is_dir()

    # A second server process, started the same way, sees what the first remembered.
    again = with_session(cli_params(env, *identity), tmp_path / "second.log", recall)
    assert [m["id"] for m in data(again)["memories"]] == [record_id]

    # --store overrides the default, on the command and on the group (and GRAPHMEM_STORE).
    other = tmp_path / "other"
    for params in (
        cli_params(env, "--store", other.as_uri(), *identity),
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "graphmem", "--store", other.as_uri(), "serve-mcp", *identity],
            env=env,
            cwd=str(REPO),
        ),
        cli_params({**env, "GRAPHMEM_STORE": other.as_uri()}, *identity),
    ):
        elsewhere_log = tmp_path / "other.log"
        assert data(with_session(params, elsewhere_log, recall))["memories"] == []
        assert f"store {other}" in elsewhere_log.read_text()
    with MemoryStore.embedded(expected) as store:
        assert store.get(tenant, record_id) is not None


# -- streamable HTTP -------------------------------------------------------------------

TOKEN = "0123456789abcdef" * 4


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listened on 127.0.0.1:{port} within {timeout}s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def http_process(
    args: Sequence[str], log_path: Path, env: dict[str, str] | None = None, port: int | None = None
) -> Iterator[str]:
    """``graphmem serve-mcp --transport streamable-http ARGS`` on ``port`` (default: a free one);
    yields its MCP URL."""
    port = free_port() if port is None else port
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "graphmem",
                "serve-mcp",
                *args,
                "--transport",
                "streamable-http",
                "--port",
                str(port),
            ],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
        try:
            try:
                wait_for_port(port, proc)
            except AssertionError:
                sys.stderr.write(log_path.read_text())
                raise
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop(proc)


def with_http_session(
    url: str,
    token: str | None,
    body: Callable[[ClientSession], Awaitable[R]],
    log: Path | None = None,
    statuses: list[int] | None = None,
) -> R:
    """Run ``body`` in a session with the official client, sending ``token`` as the bearer token;
    the HTTP status of every response is appended to ``statuses``."""

    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    async def main() -> R:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        http = create_mcp_http_client(headers=headers)
        http.event_hooks["response"].append(record)
        with anyio.fail_after(60):
            async with (
                http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write, read_timeout_seconds=30) as session,
            ):
                await session.initialize()
                return await body(session)

    try:
        return asyncio.run(main())
    except BaseException:
        if log is not None:
            sys.stderr.write(f"--- server log ---\n{log.read_text()}\n")
        raise


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


def test_streamable_http_with_a_token_remembers_across_a_restart(
    file_target: Target, tenant: str, tmp_path: Path, token_file: Path
) -> None:
    with file_target.open() as store:
        store.add(
            MemoryRecord(
                id="note-1",
                tenant=tenant,
                kind=Kind.EPISODIC,
                scope="user:bob",
                content="Bob prefers calls in the afternoon.",
                event_time=T0,
                outcome="verified-success",
            )
        )
    args = ["--store", file_target.uri, "--tenant", tenant, "--principal", PRINCIPAL, "--scope", "user:bob"]
    args += ["--token-file", str(token_file)]

    async def first(session: ClientSession) -> tuple[set[str], CallToolResult, CallToolResult]:
        tools = {t.name for t in (await session.list_tools()).tools}
        recalled = await call(session, "recall", query="when to call Bob")
        remembered = await call(
            session,
            "remember",
            kind="episodic",
            scope="user:bob",
            content="Bob asked for a callback on Friday.",
            outcome="unknown",
        )
        return tools, recalled, remembered

    log = tmp_path / "http-1.log"
    with http_process(args, log) as url:
        tools, recalled, remembered = with_http_session(url, TOKEN, first, log)
    assert tools == TOOLS
    result = data(recalled)
    assert result["tenant"] == tenant
    assert [m["id"] for m in result["memories"]] == ["note-1"]
    assert '<memory id="note-1"' in text_of(recalled)
    assert data(remembered)["outcome"] == "accepted"
    callback = data(remembered)["record_id"]
    started = log.read_text()
    assert f"store {urlparse(file_target.uri).path}" in started
    assert "bearer token required" in started
    assert "warning" not in started
    assert TOKEN not in started

    async def second(session: ClientSession) -> CallToolResult:
        return await call(session, "recall", query="callback Friday")

    log = tmp_path / "http-2.log"
    with http_process(args, log) as url:
        again = with_http_session(url, TOKEN, second, log)
    assert next(m["id"] for m in data(again)["memories"]) == callback


def test_streamable_http_answers_401_without_the_right_token(
    file_target: Target, tenant: str, tmp_path: Path
) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    args = ["--store", file_target.uri, "--tenant", tenant, "--principal", PRINCIPAL]

    async def probe(url: str) -> dict[str, httpx2.Response]:
        async with httpx2.AsyncClient(timeout=10) as http:
            return {
                name: await http.post(url, json=initialize, headers={**headers, **extra})
                for name, extra in {
                    "no token": {},
                    "wrong token": {"Authorization": f"Bearer {TOKEN[:-1]}x"},
                    "not bearer": {"Authorization": f"Basic {TOKEN}"},
                    "right token": {"Authorization": f"Bearer {TOKEN}"},
                }.items()
            }

    async def tools(session: ClientSession) -> set[str]:
        return {t.name for t in (await session.list_tools()).tools}

    log = tmp_path / "http.log"
    with http_process(args, log, env={TOKEN_ENV: TOKEN}) as url:
        responses = asyncio.run(probe(url))
        refused: dict[str, list[int]] = {"wrong token": [], "no token": []}
        for name, token in (("wrong token", "not-the-token"), ("no token", None)):
            with pytest.raises(ExceptionGroup, match="unhandled errors"):
                with_http_session(url, token, tools, statuses=refused[name])
        assert with_http_session(url, TOKEN, tools, log) == TOOLS
    for name in ("no token", "wrong token", "not bearer"):
        response = responses[name]
        assert response.status_code == 401, name
        assert response.headers["WWW-Authenticate"].startswith("Bearer "), name
        assert 'error="invalid_token"' in response.headers["WWW-Authenticate"], name
        assert response.json()["error"] == "invalid_token", name
    assert responses["right token"].status_code == 200
    # The official client's initialize is answered 401, and nothing else is let through.
    assert refused == {"wrong token": [401], "no token": [401]}


def test_streamable_http_without_a_token_only_with_no_auth_on_loopback(
    file_target: Target, tenant: str, tmp_path: Path
) -> None:
    from graphmem.integrations.mcp_server import run

    with pytest.raises(ContractViolation) as info:
        run("memory://", "t-1", PRINCIPAL, transport="streamable-http")
    assert info.value.code == "http_needs_token"
    with pytest.raises(ContractViolation) as info:
        run("memory://", "t-1", PRINCIPAL, transport="streamable-http", host="0.0.0.0", no_auth=True)  # noqa: S104
    assert info.value.code == "remote_without_auth"
    with pytest.raises(ContractViolation) as info:
        run("memory://", "t-1", PRINCIPAL, transport="streamable-http", token=TOKEN, no_auth=True)
    assert info.value.code == "conflicting_auth"

    refused = subprocess.run(
        [
            *(sys.executable, "-m", "graphmem", "serve-mcp", "--tenant", tenant, "--principal", PRINCIPAL),
            *("--store", file_target.uri, "--transport", "streamable-http"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != TOKEN_ENV},
        check=False,
    )
    assert refused.returncode == 2
    assert "[http_needs_token]" in refused.stderr
    assert "--token-file" in refused.stderr

    async def tools(session: ClientSession) -> set[str]:
        return {t.name for t in (await session.list_tools()).tools}

    log = tmp_path / "http.log"
    args = ["--store", file_target.uri, "--tenant", tenant, "--principal", PRINCIPAL, "--no-auth"]
    with http_process(args, log) as url:
        assert with_http_session(url, None, tools, log) == TOOLS
    assert "NO authentication" in log.read_text()


@dataclass
class FakeAuthorizationServer:
    """An RFC 7662 introspection endpoint on a free port: tokens and their answers are set by the test."""

    answers: dict[str, dict[str, Any]]
    port: int = field(default_factory=free_port)
    seen: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def introspect(self, request: Request) -> JSONResponse:
        form = await request.form()
        token = str(form.get("token"))
        self.seen.append((token, request.headers.get("authorization")))
        return JSONResponse(self.answers.get(token, {"active": False}))

    @contextmanager
    def running(self) -> Iterator[None]:
        app = Starlette(routes=[Route("/introspect", self.introspect, methods=["POST"])])
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while not server.started and time.monotonic() < deadline:
                time.sleep(0.05)
            yield
        finally:
            server.should_exit = True
            thread.join(timeout=10)


def test_streamable_http_behind_an_oauth_authorization_server(
    file_target: Target, tenant: str, tmp_path: Path
) -> None:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    good = {"active": True, "aud": [resource], "client_id": "agent-app", "sub": "alice", "scope": "graphmem"}
    authz = FakeAuthorizationServer(
        answers={
            "good-token": good,
            "other-audience": {**good, "aud": "https://elsewhere.example/mcp"},
            "no-scope": {**good, "scope": "profile"},
            "expired": {**good, "exp": 1_000_000_000},
        }
    )
    args = ["--store", file_target.uri, "--tenant", tenant, "--principal", PRINCIPAL]
    args += ["--oauth-issuer", authz.url, "--oauth-introspection", f"{authz.url}/introspect"]
    args += ["--resource-url", resource, "--oauth-scope", "graphmem"]
    env = {CLIENT_ID_ENV: "graphmem-rs", CLIENT_SECRET_ENV: "s3cret"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    async def probe(url: str) -> dict[str, httpx2.Response]:
        async with httpx2.AsyncClient(timeout=10) as http:
            out = {
                "metadata": await http.get(
                    f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
                )
            }
            for token in (None, "unknown", "other-audience", "no-scope", "expired"):
                auth = {} if token is None else {"Authorization": f"Bearer {token}"}
                out[str(token)] = await http.post(url, json=initialize, headers={**headers, **auth})
            return out

    async def tools(session: ClientSession) -> set[str]:
        return {t.name for t in (await session.list_tools()).tools}

    log = tmp_path / "http.log"
    with authz.running(), http_process(args, log, env=env, port=port) as url:
        responses = asyncio.run(probe(url))
        assert with_http_session(url, "good-token", tools, log) == TOOLS
    assert "OAuth access token" in log.read_text()

    metadata = responses["metadata"].json()
    assert metadata["resource"] == resource
    assert metadata["authorization_servers"] == [authz.url]
    assert metadata["scopes_supported"] == ["graphmem"]
    for name in ("None", "unknown", "other-audience", "expired"):
        assert responses[name].status_code == 401, name
        challenge = responses[name].headers["WWW-Authenticate"]
        assert challenge.startswith("Bearer "), name
        assert (
            f'resource_metadata="http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"'
            in challenge
        )
    assert responses["no-scope"].status_code == 403
    assert 'error="insufficient_scope"' in responses["no-scope"].headers["WWW-Authenticate"]
    # The resource server authenticated itself to the introspection endpoint.
    basic = "Basic " + base64.b64encode(b"graphmem-rs:s3cret").decode()
    assert {auth for _, auth in authz.seen} == {basic}
    assert {token for token, _ in authz.seen} >= {"good-token", "unknown", "other-audience"}


def test_oauth_urls_must_use_tls_off_loopback() -> None:
    with pytest.raises(ContractViolation) as info:
        IntrospectionTokenVerifier("http://auth.example.com/introspect", "https://mem.example.com/mcp")
    assert info.value.code == "insecure_url"
    with pytest.raises(ContractViolation) as info:
        oauth_auth("https://auth.example.com", "http://mem.example.com/mcp")
    assert info.value.code == "insecure_url"
    settings = oauth_auth("https://auth.example.com", "https://mem.example.com/mcp", ["graphmem"])
    assert settings.validate_token_resource is True


def test_token_files_and_variables_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"  {TOKEN}\n")
    assert load_token(path, {}) == TOKEN
    assert load_token(None, {TOKEN_ENV: TOKEN}) == TOKEN
    assert load_token(path, {TOKEN_ENV: "other" * 10}) == TOKEN  # the file wins
    assert load_token(None, {}) is None
    for weak in ("short", f"{TOKEN[:16]} {TOKEN[:16]}"):
        path.write_text(weak)
        with pytest.raises(ContractViolation) as info:
            load_token(path, {})
        assert info.value.code == "weak_token"
    with pytest.raises(ContractViolation) as info:
        load_token(tmp_path / "missing", {})
    assert info.value.code == "token_file_unreadable"


def test_the_static_token_verifier_accepts_only_its_token() -> None:
    verifier = StaticTokenVerifier(TOKEN, PRINCIPAL)
    accepted = asyncio.run(verifier.verify_token(TOKEN))
    assert accepted is not None
    assert accepted.client_id == PRINCIPAL
    for wrong in ("", TOKEN[:-1], TOKEN + "0", TOKEN.upper()):
        assert asyncio.run(verifier.verify_token(wrong)) is None
