"""`headcount boolean …`: construct, check, threshold-degree, basis, stamps.

Each command parses its options, calls one library function and prints the result; the library validates
(InputError → `error: …`, exit 2). Imports sit inside the commands to keep the CLI's start-up fast.
"""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import JsonOpt, emit

# The bounds the library enforces, for --help (written out so the CLI starts without importing the library;
# tests/boolean/test_limits.py checks them against boolean.functions.MAX_BITS, search.MAX_BASIS_SPAN,
# search.STAMPS_TABLE and threshold.MAX_N).
MAX_BITS = 1_000_000
MAX_BASIS_SPAN = 250_000
LP_MAX_N = 11
STAMPS_TABLE = "k ≤ 64, 11, 8, 7, 6 at D = 1..5; 5 at D ≤ 8; 4 at D ≤ 16; 3 at D ≤ 40; 2 at D ≤ 200; else 1"

app = typer.Typer(
    no_args_is_help=True,
    help="XOR and symmetric Boolean functions with H heads and a degree-D readout (seed 004 §3.2).",
)


@app.command("construct")
def boolean_construct(
    function: str = typer.Option(
        ..., "--function", help="xor, and, or, majority, threshold:k, exact:k, mod:m, or F:+-…"
    ),
    n: int = typer.Option(..., "--n", help=f"Number of input bits, 1..{MAX_BITS:,}."),
    degree: int = typer.Option(..., "--degree", help="Readout degree D ≥ 1."),
    heads: int = typer.Option(..., "--heads", help="Heads H ≥ 1."),
    out: Path | None = typer.Option(
        None, "--out", help="Also save the model (exact rationals, safetensors + JSON)."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Theorem 3: H heads + a degree-D readout computing a symmetric function, certified exactly on every
    weight t = 0..n (all 2^n inputs); D·H below the threshold degree is refused (Theorem 2). Bound: the
    certificate's exact arithmetic, about n·(D·H)²·log n word operations (boolean.certify.exact_cost), at
    most 5·10⁹ (5–15 s), and its memory within --max-memory."""
    from headcount.boolean.certify import construct_and_certify

    result = construct_and_certify(function, n, degree, heads, out=None if out is None else str(out))
    cert = result.certificate
    human = (
        f"{function} on {n} bits, D={degree}, H={heads}: {result.route}, dim {result.dim} "
        f"(bound {result.dim_bound}), certified {cert.certified}, errors {cert.errors}"
    )
    emit(result.to_json(), as_json, human)


@app.command("check")
def boolean_check(
    model_file: Path = typer.Option(
        ..., "--model", help="A Boolean model file (boolean construct/train --out)."
    ),
    function: str = typer.Option(..., "--function", help="The target: a symmetric function by name or F:+-…"),
    n: int | None = typer.Option(
        None, "--n", help=f"Input bits, 1..{MAX_BITS:,} (default: the n recorded in the file)."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Check any Boolean model exactly on all 2^n inputs, with its Theorem-2 polynomial R (deg R ≤ D·H,
    sign R = the model): a wrong input when it errs — always, when D·H is below the threshold degree.
    Bound: the same exact-arithmetic budget as construct (twice over: the values and R)."""
    from headcount.boolean.certify import check_model

    result = check_model(model_file, function, n)
    cert, t2 = result.certificate, result.theorem2
    verdict = (
        "correct on all inputs (exact)"
        if cert.certified
        else f"{cert.errors} of {result.n + 1} weights wrong, e.g. x = {cert.wrong_input.x}"
    )
    human = f"{function} on {result.n} bits: {verdict}; Theorem 2: deg R = {t2.degree_R} ≤ D·H = {t2.bound}"
    emit(result.to_json(), as_json, human)


@app.command("threshold-degree")
def boolean_threshold_degree(
    function: str | None = typer.Option(None, "--function", help="A symmetric function by name or F:+-…"),
    n: int | None = typer.Option(
        None, "--n", help=f"Number of input bits (with --function), 1..{MAX_BITS:,}."
    ),
    truth_table: str | None = typer.Option(
        None,
        "--truth-table",
        help=f"2^n characters 0/1 ('0' → +1, '1' → −1), n ≤ {LP_MAX_N} (the LP grows as 4^n).",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Threshold degree: sign changes of F for symmetric functions, an LP (HiGHS) with a witness otherwise."""
    from headcount.boolean.threshold import threshold_degree

    result = threshold_degree(function, n, truth_table)
    bounds = ""
    if result.method == "lp":
        bounds = (
            ", both bounds certified" if result.lower_bound_certified else ", lower bound = HiGHS verdict"
        )
    emit(result.to_json(), as_json, f"threshold degree {result.threshold_degree} ({result.method}{bounds})")


@app.command("basis")
def boolean_basis(
    degree: int = typer.Option(..., "--degree", help=f"At most D summands; D·H ≤ {MAX_BASIS_SPAN:,}."),
    heads: int = typer.Option(..., "--heads", help="Elements lie in 1..H."),
    range_: int = typer.Option(..., "--range", help="Every 0..T must be representable, T ≤ D·H."),
    optimal: bool = typer.Option(
        False, "--optimal", help="Exact search for the smallest basis (refused past 10 s)."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """An additive D-basis inside [H] with range ≥ T: Lemma 14's, or the proven smallest (--optimal)."""
    from headcount.boolean.search import choose_basis

    result = choose_basis(degree, heads, range_, optimal)
    human = f"basis {list(result.basis)} (size {result.size}, range {result.range_reached})"
    emit(result.to_json(), as_json, human)


@app.command("stamps")
def boolean_stamps(
    summands: int = typer.Option(..., "--summands", help="At most D summands."),
    size: int = typer.Option(..., "--size", help=f"k positive integers: {STAMPS_TABLE}."),
    as_json: bool = JsonOpt,
) -> None:
    """The postage-stamp problem: the largest T such that some k positive integers represent every 0..T
    with at most D summands, and one set reaching it."""
    from headcount.boolean.search import stamps

    result = stamps(summands, size)  # past its time limit: SearchTimeout, which main() reports (exit 2)
    emit(result.to_json(), as_json, f"range {result.range} with {list(result.basis)}")
