"""The ``graphmem`` command line: thin over ``MemoryStore``, readable tables, ``--json`` for machines."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource
from rich.console import Console
from rich.table import Table

from graphmem import __version__
from graphmem.errors import ContractViolation, GraphmemError
from graphmem.model import (
    ForgetMode,
    ForgetRequest,
    Kind,
    Selection,
    Sensitivity,
    Source,
    Trust,
    WriteProposal,
)
from graphmem.model.erasure import ERASED_FIELDS
from graphmem.store import MemoryStore

__all__ = ["main"]


def _selection_table(title: str, selection: Selection) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("record")
    table.add_column("selected")
    table.add_column("drop reason")
    table.add_column("score", justify="right")
    for d in selection.decisions:
        table.add_row(
            d.record_id,
            "[green]yes[/green]" if d.selected else "[dim]no[/dim]",
            "" if d.reason is None else d.reason.value,
            "" if d.score is None else f"{d.score:.3f}",
        )
    return table


#: The server ``bench --launch`` starts: sized so a 1M-record run's store stays in memory.
BENCH_HEAP = "-Xms4g -Xmx4g"
BENCH_PAGECACHE = "6g"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="graphmem")
@click.option(
    "--store",
    "store_uri",
    envvar="GRAPHMEM_STORE",
    default="memory://",
    show_default=True,
    help="Where the memory lives: memory://, file:///path, bolt://host:7687 or neo4j://host:7687.",
)
@click.option("--user", envvar="NEO4J_USER", default="neo4j", show_default=True, help="Neo4j user.")
@click.option("--password", envvar="NEO4J_PASSWORD", default="", help="Neo4j password (env NEO4J_PASSWORD).")
@click.pass_context
def cli(ctx: click.Context, store_uri: str, user: str, password: str) -> None:
    """graphmem: governed, graph-backed memory for LLM agents."""
    ctx.obj = {"uri": store_uri, "auth": (user, password) if password else None}


def _open(ctx: click.Context) -> MemoryStore:
    options = ctx.obj or {"uri": "memory://", "auth": None}
    uri = options["uri"]
    if uri.startswith(("bolt", "neo4j")):
        return MemoryStore.open(uri, auth=options["auth"])
    return MemoryStore.open(uri)


@cli.group()
def schema() -> None:
    """The Neo4j schema: constraints and indexes, versioned and idempotent."""


@schema.command("apply")
@click.pass_context
def schema_apply(ctx: click.Context) -> None:
    """Apply schema migrations up to this version of graphmem (safe to re-run)."""
    with _open(ctx.find_root()) as store:
        version = store.setup()
    click.echo(f"schema at version {version}")


@cli.command()
@click.argument("record_id")
@click.option("--tenant", required=True, help="The tenant the record belongs to.")
@click.option(
    "--format", "fmt", type=click.Choice(["tree", "mermaid", "json"]), default="tree", show_default=True
)
@click.pass_context
def trace(ctx: click.Context, record_id: str, tenant: str, fmt: str) -> None:
    """Show why the agent believes RECORD_ID: its lineage as a tree, Mermaid or JSON."""
    with _open(ctx.find_root()) as store:
        lineage = store.trace(tenant, record_id)
    if fmt == "tree":
        click.echo(lineage.render_tree())
    elif fmt == "mermaid":
        click.echo(lineage.to_mermaid())
    else:
        click.echo(lineage.model_dump_json(indent=2))


@cli.command()
@click.argument("target")
@click.option("--tenant", required=True, help="The tenant to forget in.")
@click.option("--mode", type=click.Choice([m.value for m in ForgetMode]), required=True)
@click.option("--reason", required=True, help="Why; kept in the audit log and the tombstone.")
@click.option("--requested-by", required=True, help="Who asked.")
@click.option("--no-cascade", is_flag=True, help="Do not cascade to records derived from the target.")
@click.pass_context
def forget(
    ctx: click.Context, target: str, tenant: str, mode: str, reason: str, requested_by: str, no_cascade: bool
) -> None:
    """Release, revoke or erase TARGET (a record id, source id or scope) and what depends on it."""
    request = ForgetRequest(
        tenant=tenant,
        target=target,
        mode=ForgetMode(mode),
        reason=reason,
        requested_by=requested_by,
        cascade=not no_cascade,
    )
    with _open(ctx.find_root()) as store:
        report = store.forget(request)
        guarantee = getattr(store.backend, "erasure_guarantee", lambda: "not stated by this backend")()
    table = Table(title=f"forget {target} ({report.target_type}, {mode})", title_justify="left")
    for column in ("record", "action", "why"):
        table.add_column(column)
    for entry in report.entries:
        table.add_row(entry.record_id, entry.action, entry.reason)
    console = Console()
    console.print(table)
    if report.mode is ForgetMode.ERASE:
        erased = [e.record_id for e in report.entries if e.action == "erased"]
        console.print(
            f"removed from {len(erased)} record(s): {', '.join(ERASED_FIELDS)}; their sources' quotes, "
            "and the locators and digests of sources no live record cites"
        )
        if report.erased_sources:
            console.print(f"erased sources: {', '.join(report.erased_sources)}")
        console.print(f"storage: {guarantee}")
    elif report.mode is ForgetMode.REVOKE:
        console.print("revoked records keep their text for audit; erase them to remove it")


@cli.command()
@click.option("--tenant", required=True)
@click.option("--kind", type=click.Choice([k.value for k in Kind]), required=True)
@click.option("--scope", required=True, help="type:name, e.g. user:alice")
@click.option("--content", required=True, help="What the agent saw, concluded or learned.")
@click.option("--proposed-by", required=True, help="The agent or person proposing it.")
@click.option("--source", "sources", multiple=True, help="A source id (repeatable).")
@click.option("--source-type", default="message", show_default=True)
@click.option(
    "--trust",
    type=click.Choice([t.value for t in Trust]),
    default="untrusted",
    show_default=True,
    help="What the platform knows about the sources.",
)
@click.option("--subject", help="Subject key for conflict detection, e.g. user:alice/channel.")
@click.option("--valid-from", type=click.DateTime(), help="Semantic: since when it holds (UTC).")
@click.option("--event-time", type=click.DateTime(), help="Episodic: when it happened (UTC).")
@click.option("--outcome", help="Episodic/procedural outcome.")
@click.option("--confidence", type=float, default=1.0, show_default=True)
@click.option("--rationale", default="")
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON.")
@click.pass_context
def propose(ctx: click.Context, /, **opts: Any) -> None:
    """Propose a memory; the write gate accepts it, holds it for approval, or rejects it."""
    from datetime import UTC

    trust = Trust(opts["trust"])
    fields: dict[str, Any] = {
        "tenant": opts["tenant"],
        "kind": opts["kind"],
        "scope": opts["scope"],
        "content": opts["content"],
        "proposed_by": opts["proposed_by"],
        "sources": [Source(id=s, type=opts["source_type"], trust=trust) for s in opts["sources"]],
        "subject": opts["subject"],
        "outcome": opts["outcome"],
        "confidence": opts["confidence"],
        "rationale": opts["rationale"],
    }
    for name in ("valid_from", "event_time"):
        if opts[name] is not None:
            fields[name] = opts[name].replace(tzinfo=UTC)
    with _open(ctx.find_root()) as store:
        decision = store.propose(WriteProposal.model_validate(fields), source_trust=trust)
    if opts["as_json"]:
        click.echo(decision.model_dump_json(indent=2))
        return
    colour = {"accepted": "green", "pending_approval": "yellow", "rejected": "red"}[decision.outcome.value]
    Console().print(
        f"[{colour}]{decision.outcome.value}[/{colour}] ({decision.reason.value}) "
        f"proposal {decision.proposal_id} → record {decision.record_id or '-'}"
    )
    if decision.message:
        Console().print(f"  {decision.message}")


@cli.group()
def approvals() -> None:
    """Pending proposals: list, approve, reject."""


@approvals.command("list")
@click.option("--tenant", required=True)
@click.pass_context
def approvals_list(ctx: click.Context, tenant: str) -> None:
    """Show the proposals waiting for a human decision, and why each waits (its reason code)."""
    with _open(ctx.find_root()) as store:
        pending = store.approvals(tenant)
        reasons = store.pending_reasons(tenant)
    table = Table(title=f"pending approvals ({tenant})", title_justify="left")
    for column in ("proposal", "record", "kind", "scope", "reason", "proposed by", "content"):
        table.add_column(column)
    for r in pending:
        reason = reasons.get(r.id, "")
        table.add_row(
            r.proposal_id or "", r.id, r.kind.value, r.scope, reason, r.writer or "", r.content[:60]
        )
    Console().print(table)


@approvals.command("approve")
@click.argument("proposal_id")
@click.option("--tenant", required=True)
@click.option("--approver", required=True)
@click.pass_context
def approvals_approve(ctx: click.Context, proposal_id: str, tenant: str, approver: str) -> None:
    """Approve PROPOSAL_ID: its record becomes active (or contested if it conflicts)."""
    with _open(ctx.find_root()) as store:
        record = store.approve(tenant, proposal_id, approver)
    click.echo(f"{record.id}: {record.status.value}")


@approvals.command("reject")
@click.argument("proposal_id")
@click.option("--tenant", required=True)
@click.option("--approver", required=True)
@click.option("--reason", required=True)
@click.pass_context
def approvals_reject(ctx: click.Context, proposal_id: str, tenant: str, approver: str, reason: str) -> None:
    """Reject PROPOSAL_ID: its record is revoked and kept only for audit."""
    with _open(ctx.find_root()) as store:
        record = store.reject(tenant, proposal_id, approver, reason)
    click.echo(f"{record.id}: {record.status.value}")


@cli.command()
@click.option("--tenant", required=True)
@click.option("--record", "record_id", help="Only events about this record.")
@click.option("--since", type=click.DateTime(), help="Only events at or after this time (UTC).")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines instead of a table.")
@click.pass_context
def audit(ctx: click.Context, tenant: str, record_id: str | None, since: Any, as_json: bool) -> None:
    """The append-only audit log: who did what, when and why (never erased content)."""
    from datetime import UTC

    with _open(ctx.find_root()) as store:
        events = store.audit(
            tenant, record_id=record_id, since=None if since is None else since.replace(tzinfo=UTC)
        )
    if as_json:
        for e in events:
            click.echo(e.model_dump_json())
        return
    table = Table(title=f"audit ({tenant})", title_justify="left")
    for column in ("at", "action", "actor", "records", "reason"):
        table.add_column(column)
    for e in events:
        table.add_row(
            e.at.isoformat(timespec="seconds"),
            e.action,
            e.actor or "",
            ", ".join(e.record_ids[:4]) + (" …" if len(e.record_ids) > 4 else ""),
            e.reason or "",
        )
    Console().print(table)


@cli.command("serve-mcp")
@click.option("--tenant", required=True, help="The only tenant the server can reach.")
@click.option(
    "--principal", required=True, help="Who the agent acts as: proposer of memories, requester of forgets."
)
@click.option(
    "--store",
    "store_uri",
    default=None,
    help="Where the memory lives (as graphmem --store). Default: graphmem --store or GRAPHMEM_STORE "
    "if given, else a file store in the user-data directory; printed at start.",
)
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    help="A scope the agent may read and write, e.g. user:alice, or a prefix such as run:* "
    "(repeatable; default: every scope). Reads naming no scope use the exact ones.",
)
@click.option(
    "--env", "environment", multiple=True, help="A capability of the agent's environment (repeatable)."
)
@click.option(
    "--clearance",
    type=click.Choice([s.value for s in Sensitivity]),
    default=Sensitivity.INTERNAL.value,
    show_default=True,
    help="The most sensitive memory the agent may recall.",
)
@click.option("--trust-sources", is_flag=True, help="Treat the sources the agent cites as trusted.")
@click.option(
    "--transport", type=click.Choice(["stdio", "streamable-http"]), default="stdio", show_default=True
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: address to bind.")
@click.option("--port", type=int, default=8765, show_default=True, help="HTTP: port to bind.")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="HTTP: a file holding the bearer token clients must send (else env GRAPHMEM_MCP_TOKEN).",
)
@click.option("--no-auth", is_flag=True, help="HTTP: serve without a token, on a loopback address only.")
@click.option(
    "--oauth-issuer",
    default=None,
    help="HTTP: the OAuth 2.1 authorization server that issues access tokens for this server.",
)
@click.option(
    "--oauth-introspection",
    default=None,
    help="HTTP: its RFC 7662 introspection endpoint (client credentials from env "
    "GRAPHMEM_MCP_CLIENT_ID / GRAPHMEM_MCP_CLIENT_SECRET).",
)
@click.option(
    "--resource-url",
    default=None,
    help="HTTP with OAuth: this endpoint's public URL, e.g. https://mem.example.com/mcp "
    "(the tokens' audience).",
)
@click.option(
    "--oauth-scope", "oauth_scopes", multiple=True, help="HTTP with OAuth: a scope every token must carry."
)
@click.option("--database", default=None, help="Neo4j database (default: the server's).")
@click.pass_context
def serve_mcp(
    ctx: click.Context,
    tenant: str,
    principal: str,
    store_uri: str | None,
    scopes: tuple[str, ...],
    environment: tuple[str, ...],
    clearance: str,
    trust_sources: bool,
    transport: str,
    host: str,
    port: int,
    token_file: str | None,
    no_auth: bool,
    oauth_issuer: str | None,
    oauth_introspection: str | None,
    resource_url: str | None,
    oauth_scopes: tuple[str, ...],
    database: str | None,
) -> None:
    """Serve memory to an agent over MCP (stdio or streamable HTTP), for one tenant and principal.
    Streamable HTTP requires a bearer token (--token-file or GRAPHMEM_MCP_TOKEN) unless --no-auth."""
    try:
        from graphmem.integrations import mcp_auth
        from graphmem.integrations.mcp_server import run
    except ImportError as err:
        raise click.ClickException(f"{err}; install graphmem[mcp]") from err
    root = ctx.find_root()
    options = root.obj or {"uri": "memory://", "auth": None}
    if store_uri is None and root.get_parameter_source("store_uri") not in (None, ParameterSource.DEFAULT):
        store_uri = options["uri"]
    http = transport == "streamable-http"
    verifier, http_auth = None, None
    if oauth_issuer or oauth_introspection or resource_url:
        if not (oauth_issuer and oauth_introspection and resource_url):
            raise click.UsageError("OAuth needs --oauth-issuer, --oauth-introspection and --resource-url")
        http_auth = mcp_auth.oauth_auth(oauth_issuer, resource_url, oauth_scopes)
        verifier = mcp_auth.IntrospectionTokenVerifier(
            oauth_introspection,
            resource_url,
            client_id=os.environ.get(mcp_auth.CLIENT_ID_ENV),
            client_secret=os.environ.get(mcp_auth.CLIENT_SECRET_ENV),
        )
    token = mcp_auth.load_token(token_file) if http else None
    if token and token_file is not None and os.name == "posix" and os.stat(token_file).st_mode & 0o077:
        click.echo(f"warning: {token_file} is readable by other users; chmod 600 it", err=True)
    run(
        store_uri,
        tenant,
        principal,
        transport="streamable-http" if http else "stdio",
        host=host,
        port=port,
        auth=options["auth"],
        allowed_scopes=scopes or None,
        environment=environment,
        clearance=Sensitivity(clearance),
        source_trust=Trust.TRUSTED if trust_sources else Trust.UNTRUSTED,
        database=database,
        token=token,
        no_auth=no_auth,
        token_verifier=verifier,
        http_auth=http_auth,
    )


@cli.command()
@click.pass_context
def check(ctx: click.Context) -> None:
    """Check the store: SQLite's integrity check and graphmem's invariants (dangling edges,
    cycles, scopes, fingerprints). Lists each violation; exit code 1 if there is any."""
    from graphmem.backends.embedded import EmbeddedBackend

    with _open(ctx.find_root()) as store:
        if not isinstance(store.backend, EmbeddedBackend):
            raise ContractViolation(
                "graphmem check runs on embedded stores (memory:// or file:///path); a Neo4j "
                "server checks its own files (neo4j-admin database check)",
                code="unsupported_backend",
            )
        problems = store.backend.check()
    for problem in problems:
        click.echo(problem)
    if problems:
        click.echo(f"{len(problems)} problem(s) found", err=True)
        sys.exit(1)
    click.echo("store is sound: integrity check ok, no invariant violated")


@cli.command()
@click.argument("path", type=click.Path(file_okay=False, path_type=Path), required=False)
@click.option(
    "--encrypt",
    is_flag=True,
    help="Rewrite the Neo4j store given by --store in the encrypted layout, so erase can shred it.",
)
@click.pass_context
def migrate(ctx: click.Context, path: Path | None, encrypt: bool) -> None:
    """Convert a graphmem 0.1 store directory (snapshot.json + journal.log) at PATH into the
    SQLite engine, atomically: the old files are removed only once the new database has committed.

    With --encrypt, rewrite every record of the Neo4j store (--store bolt://…) written before
    graphmem encrypted stored text; erase is refused on such a store until then. Afterwards
    let Neo4j rotate its transaction logs (docs/erasure.md)."""
    from graphmem.backends.migrate import migrate_directory

    if encrypt:
        _encrypt(ctx.find_root())
        return
    if path is None:
        raise click.UsageError("give the store directory PATH to migrate, or --encrypt")
    report = migrate_directory(path)
    if report.already_done:
        click.echo(f"{path} was already migrated; removed the old files left behind")
    else:
        click.echo(f"migrated {path}: {report.batches} batch(es), {report.ops} operation(s)")


def _encrypt(root: click.Context) -> None:
    from graphmem.backends.neo4j import Neo4jBackend

    with _open(root) as store:
        backend = store.backend
        if not isinstance(backend, Neo4jBackend):
            raise click.UsageError("--encrypt applies to a Neo4j store: pass --store bolt://… or neo4j://…")
        backend.setup()
        count = backend.encrypt_stored(progress=lambda n: click.echo(f"rewrote {n} record(s)…", err=True))
    click.echo(
        f"encrypted {count} record(s); keys in {backend.keys.location}. Erase now shreds them; the "
        "plaintext they replaced stays in Neo4j's transaction logs until they rotate (docs/erasure.md)"
    )


@cli.command("export")
@click.option("--tenant", required=True)
@click.pass_context
def export_cmd(ctx: click.Context, tenant: str) -> None:
    """Write a tenant as JSON Lines to standard output."""
    with _open(ctx.find_root()) as store:
        for line in store.export(tenant):
            click.echo(line)


@cli.command("import")
@click.argument("path", type=click.File("r", encoding="utf-8"))
@click.option("--replace", is_flag=True, help="Overwrite stored records of the same id (a restore).")
@click.pass_context
def import_cmd(ctx: click.Context, path: Any, replace: bool) -> None:
    """Load JSON Lines written by `graphmem export` (all or nothing, checked like any write)."""
    with _open(ctx.find_root()) as store:
        count = store.import_(path, replace=replace)
    click.echo(f"imported {count} lines")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON instead of tables.")
def demo(as_json: bool) -> None:
    """Run the payment-incident walk-through on an embedded store (no server needed)."""
    from graphmem.demo import QUESTION, run_demo

    result = run_demo()
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    console = Console()
    console.print(f"[bold]Question:[/bold] {QUESTION}\n")
    untyped = Table(title="1. Untyped similarity search (no gate)", title_justify="left")
    for column in ("rank", "record", "kind", "score"):
        untyped.add_column(column)
    for i, (record, score) in enumerate(result.untyped, 1):
        style = "red" if i == 1 else ""
        untyped.add_row(str(i), record.id, record.kind.value, f"{score:.3f}", style=style)
    console.print(untyped)
    console.print(
        f"[red]Top hit: {result.untyped[0][0].id} (outcome {result.untyped[0][0].outcome}) — "
        "following it would charge the customer twice.[/red]\n"
    )
    console.print(
        _selection_table(
            "2. Typed recall: procedure, environment gateway-v2 + status-readback", result.procedure_v2_env
        )
    )
    console.print(
        _selection_table("3. Typed recall: procedure, environment gateway-v1", result.procedure_v1_env)
    )
    abstained = "abstains (nothing eligible)" if not result.procedure_v1_env.records else "returned a record"
    console.print(f"   → gateway-v1 caller: {abstained}\n")
    console.print(_selection_table("4. Typed recall: history (episodic)", result.history))
    receipt = result.procedure_v2_env.receipt
    console.print(
        f"\n[bold]Receipt[/bold] of recall 2: digest {receipt.digest}\n"
        f"  selector {receipt.selector_version}; verify() → {result.receipt_verified}"
    )


def _store_in(scratch: str) -> MemoryStore:
    """A fresh embedded store file in a new directory under ``scratch``."""
    return MemoryStore.embedded(tempfile.mkdtemp(dir=scratch))


def _workload_names(values: tuple[str, ...]) -> tuple[str, ...]:
    from graphmem.bench import WORKLOADS

    names = tuple(n.strip() for v in values for n in v.split(",") if n.strip())
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        raise click.BadParameter(
            f"unknown {unknown}; choose from {', '.join(WORKLOADS)}", param_hint="--workloads"
        )
    return names or WORKLOADS


@cli.command()
@click.option("--backend", type=click.Choice(["embedded", "neo4j"]), default="embedded", show_default=True)
@click.option(
    "--records",
    "sizes",
    type=click.IntRange(min=100),
    multiple=True,
    help="Store size(s) to measure, repeatable [default: 10000 and 100000; Neo4j also 1000000].",
)
@click.option(
    "--workloads",
    "workload_values",
    multiple=True,
    help="Workloads to run, comma-separated or repeated [default: all of recall_selective, recall_broad, "
    "hybrid, explain, trace, forget, naive (Neo4j), langgraph (embedded), open and beside_writer (embedded), "
    "concurrency, recall_threads and recall_threads_hybrid (recalls/s from 1, 2 and 4 client threads), "
    "recall_processes (recalls/s from 1, 2 and 4 processes, each with its own store), "
    "propose_processes (untrusted proposals/s from 1, 2 and 4 processes), "
    "lgstore (embedded: LangGraph's GraphmemStore against InMemoryStore)]. "
    "Ingest always runs.",
)
@click.option(
    "--mixed-ops",
    type=click.IntRange(min=1),
    default=1250,
    show_default=True,
    help="Concurrency: operations per each of the 8 mixed threads (1,250: 10,000 in all), checked "
    "against the invariants of SPEC §9 afterwards.",
)
@click.option(
    "--lg-embedder",
    "lg_embedders",
    type=click.Choice(["hash", "minilm"]),
    multiple=True,
    help="lgstore: also run its rows with this embedding function shared by both stores, repeatable; "
    "the rows with hashed word counts (hash) always run. minilm: the all-MiniLM-L6-v2 model "
    "(the optional extra graphmem[embeddings]).",
)
@click.option(
    "--in-scope",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Records in the selective caller's scope.",
)
@click.option(
    "--repeats", type=click.IntRange(min=1), default=200, show_default=True, help="Timed calls per workload."
)
@click.option(
    "--budget",
    type=click.FloatRange(min=0),
    default=20.0,
    show_default=True,
    help="Seconds of timed calls per workload after which it stops (with at least 20 samples).",
)
@click.option(
    "--cascade",
    "cascades",
    type=click.IntRange(min=1),
    multiple=True,
    help="Dependents of one forgotten record, repeatable [default: 1, 100, 10000].",
)
@click.option("--forget-mode", type=click.Choice(["revoke", "erase"]), default="revoke", show_default=True)
@click.option(
    "--corpus",
    type=click.Choice(["natural", "tokens"]),
    default="natural",
    show_default=True,
    help="The records' and questions' text: plain-language notes and questions, or uniform random "
    "tokens (the corpus of the first published figures).",
)
@click.option(
    "--naive-k",
    "naive_ks",
    type=click.IntRange(min=1),
    multiple=True,
    help="Neo4j: k of the naive fulltext-top-k-then-filter baseline, tried in order until its recall "
    "equals graphmem's, repeatable [default: 100, 1000, 10000].",
)
@click.option("--launch", is_flag=True, help="Neo4j: start a local Neo4j 5.26 (Java + Maven) for the run.")
@click.option(
    "--in-memory",
    is_flag=True,
    help="Embedded: measure the in-memory store instead of a store file in a temporary directory.",
)
@click.option(
    "--heap",
    default=BENCH_HEAP,
    show_default=True,
    help="With --launch: the server's JVM heap (a size, or JVM flags).",
)
@click.option(
    "--pagecache",
    default=BENCH_PAGECACHE,
    show_default=True,
    help="With --launch: the server's page cache; it should hold the whole store (about 3.5 GB at 1M "
    "records, with the broad tenant's second million).",
)
@click.option(
    "--warmup-records",
    type=click.IntRange(min=0),
    help="Run the workloads untimed at this size first, so a freshly started server has compiled its "
    "queries [default: 20000 with Neo4j, 0 embedded].",
)
@click.option("--output", type=click.Path(dir_okay=False), help="Write the results as JSON here.")
@click.option(
    "--plot", "plot_path", type=click.Path(dir_okay=False), help="Write a PNG plot here (matplotlib)."
)
@click.option(
    "--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Write the tables as Markdown here."
)
@click.option(
    "--include",
    "includes",
    type=click.Path(exists=True, dir_okay=False),
    multiple=True,
    help="Results JSON of an earlier run (e.g. the other backend) whose rows join this run's tables, "
    "Markdown and plot; --output holds this run's rows only.",
)
@click.pass_context
def bench(
    ctx: click.Context,
    backend: str,
    sizes: tuple[int, ...],
    workload_values: tuple[str, ...],
    lg_embedders: tuple[str, ...],
    in_scope: int,
    repeats: int,
    budget: float,
    cascades: tuple[int, ...],
    forget_mode: str,
    corpus: str,
    naive_ks: tuple[int, ...],
    mixed_ops: int,
    launch: bool,
    in_memory: bool,
    heap: str,
    pagecache: str,
    warmup_records: int | None,
    output: str | None,
    plot_path: str | None,
    markdown_path: str | None,
    includes: tuple[str, ...],
) -> None:
    """Latency p50/p95/p99 and throughput of recall, explain, trace, forget and ingest, checked
    against a brute-force oracle and compared with the naive and LangGraph baselines; a long run of
    mixed operations on many threads checked against the concurrency invariants, and recall
    throughput with 1, 4 and 16 client threads, and alone with 1, 2 and 4 (docs/bench.md)."""
    import dataclasses
    import functools
    from pathlib import Path

    from rich.progress import Progress

    from graphmem.bench import BenchConfig, run_bench, tables, to_markdown
    from graphmem.bench.runner import ONLY_ON

    workloads = _workload_names(workload_values)
    asked = workloads if workload_values else ()
    wrong = [w for w in asked if ONLY_ON.get(w, backend) != backend]
    if wrong:
        raise click.UsageError(f"{', '.join(wrong)} needs --backend {ONLY_ON[wrong[0]]}")
    if not sizes:
        sizes = (10_000, 100_000) if backend == "embedded" else (10_000, 100_000, 1_000_000)
    embedders = tuple(dict.fromkeys(("hash", *lg_embedders)))
    if "minilm" in embedders and "lgstore" in workloads and ONLY_ON["lgstore"] == backend:
        from graphmem.bench.lgstore import shared_embed

        shared_embed("minilm")  # the model is there, before minutes of loading
    base = BenchConfig(
        in_scope=in_scope,
        repeats=repeats,
        budget_s=budget,
        forget_mode=ForgetMode(forget_mode),
        mixed_ops=mixed_ops,
        corpus=corpus,
        lgstore_embedders=embedders,
    )
    if cascades:
        base = dataclasses.replace(base, cascades=cascades)
    if naive_ks:
        base = dataclasses.replace(base, naive_ks=naive_ks)
    first_warmup = warmup_records if warmup_records is not None else (0 if backend == "embedded" else 20_000)
    included: list[dict[str, Any]] = []
    for path in includes:
        included += json.loads(Path(path).read_text(encoding="utf-8"))["rows"]
    root = ctx.find_root()
    server = None
    scratch = tempfile.mkdtemp(prefix="graphmem-bench-")
    doc: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    try:
        if backend == "neo4j" and launch:
            from graphmem.testing.neo4j_server import LocalNeo4j

            server = LocalNeo4j(heap=heap, pagecache=pagecache).start()
            root.obj = {"uri": server.uri, "auth": server.auth}
        elif backend == "neo4j" and not str((root.obj or {}).get("uri", "")).startswith(("bolt", "neo4j")):
            raise click.UsageError("--backend neo4j needs --store bolt://… or neo4j://…, or --launch")
        opener: Callable[[], MemoryStore] = functools.partial(_open, root)
        if backend == "embedded":
            opener = MemoryStore.embedded if in_memory else functools.partial(_store_in, scratch)
        warmup = first_warmup
        with Progress(console=Console(stderr=True), transient=True) as progress:
            shown: list[Any] = []
            for size in sizes:

                def bar(description: str, total: int, size: int = size) -> Callable[[int], None]:
                    for task in shown:
                        progress.remove_task(task)
                    shown[:] = [progress.add_task(f"{backend} {size:,}: {description}", total=total)]
                    return functools.partial(progress.advance, shown[0])

                cfg = dataclasses.replace(base, progress=bar)
                doc = run_bench(opener, backend, [size], cfg, workloads, warmup_records=warmup)
                warmup = 0  # once, before the first size
                rows += doc["rows"]
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    doc["rows"] = rows
    if doc:
        doc["config"]["warmup_records"] = first_warmup
    shown_rows = included + rows
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    for workload, cells in tables(shown_rows).items():
        targets = sorted({row[8] for row in cells if row[8]})
        table = Table(
            title=f"graphmem bench: {workload}",
            title_justify="left",
            caption=f"target: {'; '.join(targets)}" if targets else None,
            caption_justify="left",
        )
        for column in ("backend", "records", "n", "p50 ms", "p95 ms", "p99 ms", "per s"):
            table.add_column(column, justify="right")
        table.add_column("checks", ratio=1)
        table.add_column("met")
        for row in cells:
            table.add_row(*row[:8], "[red]NO[/red]" if row[9] == "NO" else row[9])
        console.print(table)
    if output:
        Path(output).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    if markdown_path:
        Path(markdown_path).write_text(to_markdown(shown_rows), encoding="utf-8")
    if plot_path:
        from graphmem.bench.plot import plot

        plot(shown_rows, plot_path)


@cli.command("eval")
@click.option("--backend", type=click.Choice(["embedded", "neo4j"]), default="embedded", show_default=True)
@click.option("--seed", type=int, default=7, show_default=True, help="Seed of the synthetic workloads.")
@click.option(
    "--size",
    "sizes",
    type=click.IntRange(min=1),
    multiple=True,
    default=[10, 50],
    show_default=True,
    help="Scenarios per capability; repeat the option for several sizes.",
)
@click.option(
    "--system",
    "systems",
    type=click.Choice(["graphmem", "no-gate", "gate-restored", "untyped"]),
    multiple=True,
    help="Systems to compare, in order (default: all). gate-restored needs no-gate before it.",
)
@click.option("--launch", is_flag=True, help="Neo4j: start a local Neo4j 5.26 (Java + Maven) for the run.")
@click.option(
    "--in-memory",
    is_flag=True,
    help="Embedded: measure the in-memory store instead of a store file in a temporary directory.",
)
@click.option("--output", type=click.Path(dir_okay=False), help="Also write the report as JSON here.")
@click.option(
    "--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Also write the tables here."
)
@click.option(
    "--gate",
    is_flag=True,
    help="Score the write gate instead: detection and false blocks per layer and data set.",
)
@click.option(
    "--bipia",
    type=click.Path(file_okay=False, exists=True),
    help="--gate: BIPIA training-split directory (default: ../shared/data/bipia-train if present).",
)
@click.option(
    "--dataset",
    "datasets",
    multiple=True,
    help="--gate: score only this data set (repeatable; default: every one found).",
)
@click.option("--no-latency", is_flag=True, help="--gate: skip the latency measurement.")
@click.pass_context
def eval_cmd(
    ctx: click.Context,
    backend: str,
    seed: int,
    sizes: tuple[int, ...],
    systems: tuple[str, ...],
    launch: bool,
    in_memory: bool,
    output: str | None,
    markdown_path: str | None,
    gate: bool,
    bipia: str | None,
    datasets: tuple[str, ...],
    no_latency: bool,
) -> None:
    """Score gated recall, the same ranking without the gate, and an untyped baseline, per capability.

    With --gate, score the write gate instead: each data set (the rules' own
    corpus, the dev halves of the hand-written and the two plain sets, the thirteenth plain set, the
    short texts of the nineteenth's dev half, BIPIA-composed dev attacks of unseen categories,
    generated dev attacks, the twenty-six frozen held-out sets read so far, those the detector
    trains on marked) under each layer, with a confusion table and p95 latency.
    """
    import functools
    from pathlib import Path

    if gate:
        from graphmem.eval.gate import DATASETS, gate_datasets, run_gate_eval

        try:
            found = gate_datasets(None if bipia is None else Path(bipia), datasets or DATASETS)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--dataset") from exc
        gate_report = run_gate_eval(found, timing=not no_latency)
        gate_tables = gate_report.to_markdown()
        click.echo(gate_tables)
        if output:
            Path(output).write_text(gate_report.to_json() + "\n", encoding="utf-8")
        if markdown_path:
            Path(markdown_path).write_text(gate_tables, encoding="utf-8")
        return

    from graphmem.eval import SYSTEMS, run_eval

    root = ctx.find_root()
    server = None
    try:
        if backend == "neo4j":
            if launch:
                from graphmem.testing.neo4j_server import LocalNeo4j

                server = LocalNeo4j().start()
                root.obj = {"uri": server.uri, "auth": server.auth}
            elif not str((root.obj or {}).get("uri", "")).startswith(("bolt", "neo4j")):
                raise click.UsageError("--backend neo4j needs --store bolt://… or neo4j://…, or --launch")
        factory = MemoryStore.embedded if backend == "embedded" else functools.partial(_open, root)
        report = run_eval(
            factory,
            seed=seed,
            sizes=sizes,
            systems=systems or SYSTEMS,
            backend=backend,
            progress=lambda step: click.echo(f"evaluating {step} …", err=True),
        )
    except ValueError as err:
        raise click.UsageError(str(err)) from None
    finally:
        if server is not None:
            server.stop()
    tables = report.to_markdown()
    click.echo(tables)
    if output:
        Path(output).write_text(report.to_json() + "\n", encoding="utf-8")
    if markdown_path:
        Path(markdown_path).write_text(tables, encoding="utf-8")


def main() -> None:
    """Entry point: GraphmemErrors become a one-line message and exit code 2."""
    try:
        cli.main(standalone_mode=False)
    except GraphmemError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
