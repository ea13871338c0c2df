"""`headcount boolean …`: construct, check, threshold-degree, basis, stamps.

Each command parses its options, calls one library function and prints the result; the library validates
(InputError → `error: …`, exit 2). Imports sit inside the commands to keep the CLI's start-up fast.
"""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import JsonOpt, emit

app = typer.Typer(
    no_args_is_help=True,
    help="XOR and symmetric Boolean functions with H heads and a degree-D readout (seed 004 §3.2).",
)


@app.command("construct")
def boolean_construct(
    function: str = typer.Option(
        ..., "--function", help="xor, and, or, majority, threshold:k, exact:k, mod:m, or F:+-…"
    ),
    n: int = typer.Option(..., "--n", help="Number of input bits."),
    degree: int = typer.Option(..., "--degree", help="Readout degree D."),
    heads: int = typer.Option(..., "--heads", help="Heads H."),
    out: Path | None = typer.Option(
        None, "--out", help="Also save the model (exact rationals, safetensors + JSON)."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Theorem 3: H heads + a degree-D readout computing a symmetric function, certified exactly on every
    weight t = 0..n (all 2^n inputs); D·H below the threshold degree is refused (Theorem 2)."""
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
    n: int | None = typer.Option(None, "--n", help="Input bits (default: the n recorded in the file)."),
    as_json: bool = JsonOpt,
) -> None:
    """Check any Boolean model exactly on all 2^n inputs, with its Theorem-2 polynomial R (deg R ≤ D·H,
    sign R = the model): a wrong input when it errs — always, when D·H is below the threshold degree."""
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
    n: int | None = typer.Option(None, "--n", help="Number of input bits (with --function)."),
    truth_table: str | None = typer.Option(
        None, "--truth-table", help="2^n characters 0/1 ('0' → +1, '1' → −1)."
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
    degree: int = typer.Option(..., "--degree", help="At most D summands."),
    heads: int = typer.Option(..., "--heads", help="Elements lie in 1..H."),
    range_: int = typer.Option(..., "--range", help="Every 0..T must be representable."),
    optimal: bool = typer.Option(False, "--optimal", help="Exact search for the smallest basis."),
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
    size: int = typer.Option(..., "--size", help="k positive integers."),
    as_json: bool = JsonOpt,
) -> None:
    """The postage-stamp problem: the largest T such that some k positive integers represent every 0..T
    with at most D summands, and one set reaching it."""
    from headcount.boolean.search import stamps

    result = stamps(summands, size)
    emit(result.to_json(), as_json, f"range {result.range} with {list(result.basis)}")
