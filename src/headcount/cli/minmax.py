"""`headcount minmax …`: certify, construct, verify, search, lower-bound, minimal (each: options →
one library call → print).

The library checks the input (headcount.minmax raises InputError; main() prints it and exits 2).
Every count has a bound, checked before any work and stated in its --help (the constants live in
headcount.minmax: task, construction, verify, certify, search; tests/minmax/test_limits.py keeps the
texts and the constants together). Memory estimates are refused beyond --max-memory (default: half
of this machine's memory). With --require-certified, certify exits 3 unless the certificate holds
(`certified`: errors_min = errors_max = 0) and verify exits 3 unless the head computes both min and
max (errors_min = errors_max = 0). `verify --random-model SEED` uses a seeded random head (its old
spelling --random-seed still works, hidden and noted as deprecated)."""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import (
    JsonOpt,
    ProgressOpt,
    RequireCertifiedOpt,
    emit,
    old_spelling,
    progress_on,
    renamed,
    require_certified,
)

app = typer.Typer(
    no_args_is_help=True,
    help="Min and max of a list with attention heads (seed 004 §3.1): certify, verify.",
)

MOpt = "Tokens are 1..M (2 ≤ M ≤ 2^26; each command bounds its own work in M)"
NOpt = "List length (2 ≤ n ≤ 2^60)"
SeedHelp = "(any integer ≥ 0)"


@app.command("certify")
def minmax_certify(
    M: int = typer.Option(
        ...,
        "--M",
        help=f"{MOpt}: exact-histogram scans M²(M+1)/2 ≤ 2^30 triples per task (M ≤ 1290); "
        "sufficient-condition does 2·M²·d ≤ 2^36 multiply-adds; the sign code M²·d/2 ≤ 2^34.",
    ),
    n: int = typer.Option(
        ..., "--n", help=f"{NOpt}; brute-force enumerates C(n+M−1, n) ≤ 5,000,000 inputs."
    ),
    heads: int = typer.Option(
        ..., "--heads", help="1: a min head and a max head separately; 2: one layer doing both."
    ),
    code: str = typer.Option(
        "sign", "--code", help="sign (d = ⌈8 ln M⌉) or compact (d = ⌈log₂ M⌉)."
    ),
    seed: int = typer.Option(0, "--seed", help=f"Seed of the greedy sign code {SeedHelp}."),
    method: str | None = typer.Option(
        None,
        "--method",
        help="exact-histogram, sufficient-condition or brute-force (default: exact-histogram for "
        "M ≤ 1024, "
        "else sufficient-condition).",
    ),
    require: bool = RequireCertifiedOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Build the Appendix-A construction and certify it on all C(n+M−1, n) inputs.

    Exit 0: ran and answered; with --require-certified, exit 3 unless both tasks are certified
    (errors_min = errors_max = 0; a failed sufficient condition proves nothing: errors null)."""
    from headcount.minmax.certification import certify_minmax

    cert = certify_minmax(M, n, heads, code=code, seed=seed, method=method)
    human = (
        f"M={M} n={n} heads={heads} dim={cert.dim} ({cert.method}): errors min {cert.errors_min}, "
        f"max {cert.errors_max}; margins {cert.margin_min}, {cert.margin_max}"
    )
    emit(cert.to_json(), as_json, human)
    require_certified(cert.certified, require)


@app.command("construct")
def minmax_construct(
    M: int = typer.Option(
        ...,
        "--M",
        help=f"{MOpt}: the sign code's M²·d/2 ≤ 2^34 multiply-adds; the model within --max-memory.",
    ),
    n: int = typer.Option(..., "--n", help=f"{NOpt}."),
    heads: int = typer.Option(
        ...,
        "--heads",
        help="2: the two-head layer; 1: the min head alone, with θ = v for both classifiers.",
    ),
    code: str = typer.Option("sign", "--code", help="sign or compact."),
    seed: int = typer.Option(0, "--seed", help=f"Seed of the greedy sign code {SeedHelp}."),
    out: Path = typer.Option(..., "--out", help="Model file to write (safetensors)."),
    as_json: bool = JsonOpt,
) -> None:
    """Write the construction as a model file (heads 1: a single head that `verify` shows fails
    max)."""
    from headcount.minmax.construction import write_construction

    written = write_construction(out, M, n, heads, code=code, seed=seed)
    emit(written.to_json(), as_json, f"wrote {out}: {written.heads} head(s), dim {written.dim}")


@app.command("verify")
def minmax_verify(
    M: int = typer.Option(
        ..., "--M", help=f"{MOpt}: exact scans M²(M+1)/2 ≤ 2^30 triples per task (M ≤ 1290)."
    ),
    n: int = typer.Option(
        ..., "--n", help=f"{NOpt}; brute enumerates C(n+M−1, n) ≤ 2,000,000 inputs."
    ),
    model_file: Path | None = typer.Option(
        None, "--model", help="A single-head min/max model file."
    ),
    random_model: int | None = typer.Option(
        None,
        "--random-model",
        metavar="SEED",
        help=f"Use a seeded random single head as the model: its seed {SeedHelp}, with --dim.",
    ),
    dim: int | None = typer.Option(
        None, "--dim", help="Value dimension of the random head (≥ 1; M·dim ≤ 2^24 values)."
    ),
    method: str = typer.Option(
        "exact",
        "--method",
        help="exact (histogram linearity) or brute (all multisets; at most 2^31 operations per "
        "task).",
    ),
    require: bool = RequireCertifiedOpt,
    as_json: bool = JsonOpt,
    random_seed: int | None = old_spelling("--random-seed", "--random-model"),
) -> None:
    """Decide whether one head + two classifiers compute min and max on every input;
    counterexamples.

    Exit 0: ran and answered; with --require-certified, exit 3 unless the head is verified for
    both min and max on every input (errors_min = errors_max = 0)."""
    from headcount.minmax.model import ModelSource
    from headcount.minmax.single_head import verify_single_head

    random = renamed("--random-model", random_model, "--random-seed", random_seed)
    result = verify_single_head(ModelSource(model_file, random, dim), M, n, method)
    human = "; ".join(
        f"{task}: "
        + ("correct" if (lst := result.counterexample(task)) is None else f"wrong on {list(lst)}")
        for task in ("min", "max")
    )
    emit(result.to_json(), as_json, human)
    require_certified(result.min.correct and result.max.correct, require)


@app.command("search")
def minmax_search(
    M: int = typer.Option(..., "--M", help=f"{MOpt}; each step holds [M M M] arrays."),
    n: int = typer.Option(..., "--n", help=f"{NOpt}."),
    dim: int = typer.Option(..., "--dim", help="Largest value dimension to try (d = 1..dim; ≥ 1)."),
    restarts: int = typer.Option(2, "--restarts", help="Random restarts per dimension (≥ 1)."),
    steps: int = typer.Option(
        60,
        "--steps",
        help="Optimisation steps per restart (≥ 0). In all, Σ_d restarts·(steps+1)·(M³ + M²·d) ≤ "
        "2^31 "
        "triple evaluations.",
    ),
    seed: int = typer.Option(0, "--seed", help=f"Seed of the restarts {SeedHelp}."),
    progress: bool | None = ProgressOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Search for ONE head + two classifiers doing both min and max; the smallest d reached, and the
    confirmed counterexamples of the best failures (a failed search is evidence, not a proof)."""
    from headcount.minmax.search import smallest_dimension

    result = smallest_dimension(
        M, n, dim, restarts=restarts, steps=steps, seed=seed, progress=progress_on(progress)
    )
    emit(result.to_json(), as_json, f"smallest d found: {result.smallest_d}")


@app.command("lower-bound")
def minmax_lower_bound(
    model_file: Path = typer.Option(..., "--model", help="A single-head min/max model file."),
    n: int | None = typer.Option(
        None,
        "--n",
        help=f"{NOpt}; a wrong input is printed, so n ≤ 1,000,000. Default: the model's info n. "
        "N = min{⌊1+√(M−1)⌋, ⌊(n−1)/2⌋}.",
    ),
    bits: int | None = typer.Option(
        None,
        "--bits",
        help="Value precision p (values in 2^-p·Z^d; 0..1074); default: the values' exact bits.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Theorem 1 (seed 004) as a chain of checked objects for one head: the monotone run, the
    duals of Lemmas 3/5 (exact), Lemma 6's process with Facts 1–2, and the inequality proven —
    or the input the head gets wrong. The chain's work is bounded: N²·d ≤ 2^20 exact products.

    Exit 0: the chain ran (its verdict is in the output); exit 3 if it broke (a check the
    mathematics guarantees failed)."""
    from headcount.minmax.model import load_minmax
    from headcount.minmax.theorem1 import theorem1_chain

    result = theorem1_chain(load_minmax(model_file), n, bits)
    lines = [f"N = {result.N}, d = {result.d}, p = {result.p}: {result.verdict}"]
    for c in result.chains:
        line = f"{c.task}: {c.outcome}"
        if c.conclusion is not None:
            k = c.conclusion
            line += f" (R·log₂ L = {k.lhs_bits:.4g} vs Σ N_r·log₂((n−1)/r) = {k.rhs_bits:.4g})"
        elif c.duals is not None and c.duals.wrong is not None:
            line += f" on {list(c.duals.wrong.input)}"
        lines.append(line)
    emit(result.to_json(), as_json, "\n".join(lines))
    if result.verdict == "broken":
        raise typer.Exit(3)


@app.command("minimal")
def minmax_minimal(
    M: int = typer.Option(..., "--M", help="Tokens 1..M, 2 ≤ M ≤ 6 (the family grows as M!)."),
    n: int = typer.Option(..., "--n", help=f"{NOpt}."),
    d_max: int = typer.Option(2, "--d-max", help="Largest value dimension d searched (1..4)."),
    K_max: int = typer.Option(2, "--K-max", help="Largest value bound K searched (1..4)."),
    db: Path | None = typer.Option(
        None, "--db", help="Results database: the answer is read from it when stored, else stored."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """The smallest (d, K) at which ONE head with integer values in {−K..K}^d supports both min and
    max, by exhaustive search over a stated family (attention α = β^r for every ranking r, β ∈ {2,
    2n}; values up to coordinate symmetries): a head found is verified exactly; every member of a
    smaller (d, K) is refuted by an exact certificate. Theorem 1's chain runs on the head found. A
    (d, K) with more than 100,000 members is not searched (reported, and the search stops)."""
    from headcount.learn.search_cache import minmax_minimal

    record, cached = minmax_minimal(M, n, d_max, K_max, db=db)
    cells = ", ".join(f"d={c['d']} K={c['K']}: {c['verdict']}" for c in record["cells"])
    emit(record, as_json, f"M = {M}, n = {n}: {cells}" + (" — cached" if cached else ""))
