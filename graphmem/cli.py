"""The ``graphmem`` command line: thin over ``MemoryStore``, readable tables, ``--json`` for machines."""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console
from rich.table import Table

from graphmem import __version__
from graphmem.errors import GraphmemError
from graphmem.model import Selection

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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="graphmem")
def cli() -> None:
    """graphmem: governed, graph-backed memory for LLM agents."""


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
