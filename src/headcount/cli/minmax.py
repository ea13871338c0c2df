"""`headcount minmax …`: certify, construct, verify, search (each: options → one library call → print).

The library checks the input (headcount.minmax raises InputError; main() prints it and exits 2)."""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import JsonOpt, emit

app = typer.Typer(
    no_args_is_help=True, help="Min and max of a list with attention heads (seed 004 §3.1): certify, verify."
)


@app.command("certify")
def minmax_certify(
    M: int = typer.Option(..., "--M", help="Tokens are 1..M."),
    n: int = typer.Option(..., "--n", help="List length."),
    heads: int = typer.Option(
        ..., "--heads", help="1: a min head and a max head separately; 2: one layer doing both."
    ),
    code: str = typer.Option("sign", "--code", help="sign (d = ⌈8 ln M⌉) or compact (d = ⌈log₂ M⌉)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the greedy sign code."),
    method: str | None = typer.Option(
        None, "--method", help="exact-histogram, sufficient-condition or brute-force (default: by M)."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Build the Appendix-A construction and certify it on all C(n+M−1, n) inputs."""
    from headcount.minmax.certify import certify_minmax

    cert = certify_minmax(M, n, heads, code=code, seed=seed, method=method)
    human = (
        f"M={M} n={n} heads={heads} dim={cert.dim} ({cert.method}): errors min {cert.errors_min}, "
        f"max {cert.errors_max}; margins {cert.margin_min}, {cert.margin_max}"
    )
    emit(cert.to_json(), as_json, human)


@app.command("construct")
def minmax_construct(
    M: int = typer.Option(..., "--M", help="Tokens are 1..M."),
    n: int = typer.Option(..., "--n", help="List length."),
    heads: int = typer.Option(
        ..., "--heads", help="2: the two-head layer; 1: the min head alone, with θ = v for both classifiers."
    ),
    code: str = typer.Option("sign", "--code", help="sign or compact."),
    seed: int = typer.Option(0, "--seed", help="Seed of the greedy sign code."),
    out: Path = typer.Option(..., "--out", help="Model file to write (safetensors)."),
    as_json: bool = JsonOpt,
) -> None:
    """Write the construction as a model file (heads 1: a single head that `verify` shows fails max)."""
    from headcount.minmax.construction import write_construction

    written = write_construction(out, M, n, heads, code=code, seed=seed)
    emit(written.to_json(), as_json, f"wrote {out}: {written.heads} head(s), dim {written.dim}")


@app.command("verify")
def minmax_verify(
    M: int = typer.Option(..., "--M", help="Tokens are 1..M."),
    n: int = typer.Option(..., "--n", help="List length."),
    model_file: Path | None = typer.Option(None, "--model", help="A single-head min/max model file."),
    random_seed: int | None = typer.Option(None, "--random-seed", help="Use a seeded random single head."),
    dim: int | None = typer.Option(None, "--dim", help="Value dimension of the random head."),
    method: str = typer.Option(
        "exact", "--method", help="exact (histogram linearity) or brute (all multisets)."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Decide whether one head + two classifiers compute min and max on every input; counterexamples."""
    from headcount.minmax.certify import verify_single_head
    from headcount.minmax.model import ModelSource

    result = verify_single_head(ModelSource(model_file, random_seed, dim), M, n, method)
    human = "; ".join(
        f"{task}: " + ("correct" if (lst := result.counterexample(task)) is None else f"wrong on {list(lst)}")
        for task in ("min", "max")
    )
    emit(result.to_json(), as_json, human)


@app.command("search")
def minmax_search(
    M: int = typer.Option(..., "--M", help="Tokens are 1..M."),
    n: int = typer.Option(..., "--n", help="List length."),
    dim: int = typer.Option(..., "--dim", help="Largest value dimension to try (d = 1..dim)."),
    restarts: int = typer.Option(2, "--restarts", help="Random restarts per dimension."),
    steps: int = typer.Option(60, "--steps", help="Optimisation steps per restart."),
    seed: int = typer.Option(0, "--seed", help="Seed of the restarts."),
    as_json: bool = JsonOpt,
) -> None:
    """Search for ONE head + two classifiers doing both min and max; the smallest d reached, and the
    confirmed counterexamples of the best failures (a failed search is evidence, not a proof)."""
    from headcount.minmax.search import smallest_dimension

    result = smallest_dimension(M, n, dim, restarts=restarts, steps=steps, seed=seed)
    emit(result.to_json(), as_json, f"smallest d found: {result.smallest_d}")
