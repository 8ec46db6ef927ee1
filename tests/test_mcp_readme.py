"""The README's MCP snippets are true: each marked block is run (or, for the OAuth one, parsed by
the real command line) exactly as a reader would copy it, with only the port and home changed."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.types import CallToolResult
from test_mcp_serve import data_home_env, free_port, wait_for_port, with_http_session
from test_mcp_server import REPO, TOOLS, call, data, with_session

from graphmem.cli import serve_mcp
from graphmem.integrations.mcp_auth import (
    CLIENT_ID_ENV,
    CLIENT_SECRET_ENV,
    IntrospectionTokenVerifier,
    oauth_auth,
)

README = (REPO / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"<!-- readme-test: ([\w-]+) -->\n```(\w+)\n(.*?)```", re.DOTALL)
SNIPPETS = {name: body for name, _, body in BLOCK.findall(README)}
BIN = Path(sys.executable).parent


def commands(script: str) -> list[list[str]]:
    """The shell commands of a snippet, continuation lines joined, comments dropped."""
    return [shlex.split(line, comments=True) for line in script.replace("\\\n", " ").splitlines() if line]


def test_the_readme_marks_every_mcp_snippet() -> None:
    assert {n for n in SNIPPETS if n.startswith("mcp-")} == {
        "mcp-stdio",
        "mcp-http-server",
        "mcp-http-client",
        "mcp-oauth",
    }


def test_the_stdio_entry_starts_a_server_that_remembers(tmp_path: Path) -> None:
    entry = json.loads(SNIPPETS["mcp-stdio"])["mcpServers"]["graphmem"]
    assert entry["command"] == "graphmem"
    assert (BIN / "graphmem").exists()
    env = data_home_env(tmp_path)
    params = StdioServerParameters(
        command=str(BIN / "graphmem"), args=entry["args"], env=env, cwd=str(tmp_path)
    )

    async def first(session: ClientSession) -> tuple[set[str], CallToolResult, CallToolResult]:
        tools = {t.name for t in (await session.list_tools()).tools}
        kept = await call(
            session,
            "remember",
            kind="episodic",
            scope="user:alice",
            content="Alice reported a double charge.",
            outcome="unknown",
        )
        working = await call(
            session, "remember", kind="working", scope="run:r-1", content="Checking Alice's charges."
        )
        return tools, kept, working

    async def second(session: ClientSession) -> CallToolResult:
        return await call(session, "recall", query="double charge")

    tools, kept, working = with_session(params, tmp_path / "first.log", first)
    assert tools == TOOLS
    assert data(kept)["outcome"] == data(working)["outcome"] == "accepted"
    again = with_session(params, tmp_path / "second.log", second)
    assert [m["id"] for m in data(again)["memories"]] == [data(kept)["record_id"]]


def test_the_http_snippets_serve_with_a_token(tmp_path: Path) -> None:
    port = free_port()
    script = SNIPPETS["mcp-http-server"].replace("8765", str(port))
    env = {**data_home_env(tmp_path), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    (tmp_path / "home").mkdir()
    log_path = tmp_path / "http.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            try:
                wait_for_port(port, proc)
            except AssertionError:
                sys.stderr.write(log_path.read_text())
                raise
            token_file = tmp_path / "home" / ".graphmem-mcp-token"
            assert token_file.stat().st_mode & 0o077 == 0
            token = token_file.read_text().strip()
            entry = json.loads(SNIPPETS["mcp-http-client"])["mcpServers"]["graphmem"]
            assert entry["type"] == "http"
            url = entry["url"].replace("8765", str(port))
            header = entry["headers"]["Authorization"].replace("${GRAPHMEM_MCP_TOKEN}", token)
            assert header.startswith("Bearer ")

            async def recall(session: ClientSession) -> tuple[set[str], dict[str, Any]]:
                tools = {t.name for t in (await session.list_tools()).tools}
                return tools, data(await call(session, "recall", query="anything"))

            tools, recalled = with_http_session(url, header.removeprefix("Bearer "), recall, log_path)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
    assert tools == TOOLS
    assert recalled["memories"] == []
    assert str(tmp_path / "data" / "graphmem" / "memory") in log_path.read_text()


def test_the_oauth_snippet_is_a_valid_command_line() -> None:
    lines = commands(SNIPPETS["mcp-oauth"])
    exported = {word.split("=", 1)[0] for word in lines[0][1:]}
    assert lines[0][0] == "export"
    assert exported == {CLIENT_ID_ENV, CLIENT_SECRET_ENV}
    program, command, *args = lines[1]
    assert (program, command) == ("graphmem", "serve-mcp")
    ctx = serve_mcp.make_context("serve-mcp", list(args))
    params = ctx.params
    assert params["transport"] == "streamable-http"
    settings = oauth_auth(params["oauth_issuer"], params["resource_url"], params["oauth_scopes"])
    assert str(settings.resource_server_url) == params["resource_url"]
    IntrospectionTokenVerifier(params["oauth_introspection"], params["resource_url"])
    assert "/.well-known/oauth-protected-resource/mcp" in README


@pytest.mark.parametrize("name", ["mcp-stdio", "mcp-http-client"])
def test_the_json_snippets_are_json(name: str) -> None:
    assert set(json.loads(SNIPPETS[name])) == {"mcpServers"}
