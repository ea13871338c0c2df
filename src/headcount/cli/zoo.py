"""`headcount zoo …`: the constructions as ready models with each head's role (issue 15): list,
export.

Each command parses its options, calls one function of headcount.zoo (which checks the name, the
format and the folder before building anything) and prints."""

from __future__ import annotations

import typer

from headcount.cli.common import JsonOpt, emit, flag

app = typer.Typer(
    no_args_is_help=True,
    help="Ground-truth models for interpretability benchmarks: constructions with every head's "
    "role.",
)


@app.command("list")
def zoo_list(as_json: bool = JsonOpt) -> None:
    """The zoo's models: name, description and the formats each can be written in."""
    from headcount.zoo import zoo_list as list_entries

    result = list_entries()
    human = "\n".join(f"{e.name}: {e.description} [{', '.join(e.formats)}]" for e in result.entries)
    emit(result.to_json(), as_json, human)


@app.command("export")
def zoo_export(
    name: str = typer.Argument(..., help="A model's name (`headcount zoo list`)."),
    fmt: str = typer.Option(
        "headcount",
        "--format",
        help="headcount (the scenario's own model file) or transformer-lens (needs the optional "
        "extra tl).",
    ),
    out: str = typer.Option(
        ...,
        "--out",
        help="Folder to write into (created if missing): the weights (NAME.safetensors; for "
        "transformer-lens "
        "the folder NAME/, or NAME-min/ and NAME-max/ for the min/max layer) and NAME.roles.json.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Write one model and its roles file (every head's role, mechanism, query, key, value; a
    certificate)."""
    from headcount.zoo import export

    result = export(name, fmt, out, spell=flag)
    human = (
        f"{result.name} ({result.format}) in {result.out}: {len(result.files)} files, roles in "
        f"{result.roles}; certified: {result.certificate['certified']} "
        f"({result.certificate['command']})"
    )
    emit(result.to_json(), as_json, human)
