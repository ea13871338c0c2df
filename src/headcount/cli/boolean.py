"""`headcount boolean …`: construct, check, threshold-degree, frontier, basis, stamps.

Each command parses its options, calls one library function and prints the result; the library
validates (InputError → `error: …`, exit 2). Imports sit inside the commands to keep the CLI's
start-up fast. construct, check and frontier (with --degree and --heads) take --require-certified:
exit 3 when the result's `certified` is false. D, the readout degree, is --degree everywhere
(stamps' old spelling --summands still works, hidden and noted as deprecated).
"""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import (
    JsonOpt,
    RequireCertifiedOpt,
    emit,
    old_spelling,
    renamed,
    require_certified,
)
from headcount.common.errors import InputError

# The bounds the library enforces, for --help (written out so the CLI starts without importing the
# library; tests/boolean/test_limits.py checks them against boolean.task.MAX_BITS,
# search.MAX_BASIS_SPAN, search.STAMPS_TABLE and threshold.MAX_N).
MAX_BITS = 1_000_000
MAX_BASIS_SPAN = 250_000
LP_MAX_N = 11
STAMPS_TABLE = (
    "k ≤ 64, 11, 8, 7, 6 at D = 1..5; 5 at D ≤ 8; 4 at D ≤ 16; 3 at D ≤ 40; 2 at D ≤ 200; else 1"
)

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
    require: bool = RequireCertifiedOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Theorem 3: H heads + a degree-D readout computing a symmetric function, certified exactly on
    every weight t = 0..n (all 2^n inputs); D·H below the threshold degree is refused (Theorem 2).
    Bound: the certificate's exact arithmetic, about n·(D·H)²·log n word operations
    (boolean.certification.exact_cost), at most 5·10⁹ (5–15 s), and its memory within --max-memory.

    Exit 0: ran and answered; with --require-certified, exit 3 when `certified` is false."""
    from headcount.boolean.certification import construct_and_certify

    result = construct_and_certify(
        function, n, degree, heads, out=None if out is None else str(out)
    )
    cert = result.certificate
    human = (
        f"{function} on {n} bits, D={degree}, H={heads}: {result.route}, dim {result.dim} "
        f"(bound {result.dim_bound}), certified {cert.certified}, errors {cert.errors}"
    )
    emit(result.to_json(), as_json, human)
    require_certified(cert.certified, require)


@app.command("check")
def boolean_check(
    model_file: Path = typer.Option(
        ..., "--model", help="A Boolean model file (boolean construct/train --out)."
    ),
    function: str = typer.Option(
        ..., "--function", help="The target: a symmetric function by name or F:+-…"
    ),
    n: int | None = typer.Option(
        None, "--n", help=f"Input bits, 1..{MAX_BITS:,} (default: the n recorded in the file)."
    ),
    require: bool = RequireCertifiedOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Check any Boolean model exactly on all 2^n inputs, with its Theorem-2 polynomial R (deg R ≤
    D·H, sign R = the model): a wrong input when it errs — always, when D·H is below the threshold
    degree. Bound: the same exact-arithmetic budget as construct (twice over: the values and R).

    Exit 0: ran and answered (right or wrong); with --require-certified, exit 3 when `certified` is
    false (the model is wrong on some input)."""
    from headcount.boolean.certification import check_model

    result = check_model(model_file, function, n)
    cert, t2 = result.certificate, result.theorem2
    verdict = (
        "correct on all inputs (exact)"
        if cert.certified
        else f"{cert.errors} of {result.n + 1} weights wrong, e.g. x = {cert.wrong_input.x}"
    )
    human = (
        f"{function} on {result.n} bits: {verdict}; Theorem 2: deg R = {t2.degree_R} ≤ D·H = "
        f"{t2.bound}"
    )
    emit(result.to_json(), as_json, human)
    require_certified(cert.certified, require)


@app.command("threshold-degree")
def boolean_threshold_degree(
    function: str | None = typer.Option(
        None, "--function", help="A symmetric function by name or F:+-…"
    ),
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
    """Threshold degree: sign changes of F for symmetric functions, an LP (HiGHS) with a witness
    otherwise."""
    from headcount.boolean.threshold import threshold_degree

    result = threshold_degree(function, n, truth_table)
    bounds = ""
    if result.method == "lp":
        bounds = (
            ", both bounds certified"
            if result.lower_bound_certified
            else ", lower bound = HiGHS verdict"
        )
    emit(
        result.to_json(),
        as_json,
        f"threshold degree {result.threshold_degree} ({result.method}{bounds})",
    )


def _frontier_table(result) -> str:
    """The frontier as a small table: c, the exact accuracy (when short), its float, the pattern (n
    ≤ 64)."""
    lines = [f"{result.function} on {result.n} bits, threshold degree {result.threshold_degree}"]
    lines.append(f"{'c':>6}  {'best accuracy':>14}  {'exact':<24}  pattern (t = 0..n)")
    for row in result.rows:
        exact = str(row.accuracy) if row.n <= 64 else "(--json)"
        shown = row.to_json()["pattern"] if row.n <= 64 else f"({row.n + 1} signs: --json)"
        lines.append(f"{row.sign_changes:>6}  {row.accuracy_float:>14.10f}  {exact:<24}  {shown}")
    m = result.model
    if m is not None:
        verdict = "certified: equal, exact" if m.certified else "NOT equal to the frontier"
        lines.append(
            f"D={m.degree}, H={m.heads}: frontier at c = {m.sign_changes} is "
            f"{m.best_accuracy_float:.10f}; "
            f"the Theorem-3 model ({m.route}, dim {m.dim}) gets {m.model_accuracy_float:.10f} "
            f"({verdict})"
        )
    return "\n".join(lines)


@app.command("frontier")
def boolean_frontier(
    function: str = typer.Option(
        ..., "--function", help="xor, and, or, majority, threshold:k, exact:k, mod:m, or F:+-…"
    ),
    n: int = typer.Option(
        ..., "--n", help=f"Number of input bits, 1..{MAX_BITS:,} (and the work bound)."
    ),
    degree: int | None = typer.Option(
        None, "--degree", help="Readout degree D ≥ 1 (with --heads)."
    ),
    heads: int | None = typer.Option(None, "--heads", help="Heads H ≥ 1 (with --degree)."),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Save the model built for the best pattern (needs --degree and --heads).",
    ),
    require: bool = RequireCertifiedOpt,
    as_json: bool = JsonOpt,
) -> None:
    """The exact accuracy frontier below the threshold degree T: for c = 0..T sign changes, the best
    accuracy over all 2^n inputs of any ±1 pattern along t = |x| with at most c changes (what H
    heads with a degree-D readout can reach at c = D·H: Theorems 2 and 3), and the first such
    pattern. With --degree and --heads also the Theorem-3 model for the best pattern at c = min(D·H,
    T), its exact accuracy, and `certified` when it equals the frontier. Bounds: about 10⁹ word
    operations (boolean.accuracy_frontier.FRONTIER_WORK_LIMIT: xor to n ≈ 2700, majority to n ≈
    2.5·10⁵) and construct's exact-arithmetic budget for the model.

    Exit 0: ran and answered; with --require-certified (needs --degree and --heads), exit 3 when the
    model's `certified` is false."""
    from headcount.boolean.accuracy_frontier import accuracy_frontier

    if require and (degree is None or heads is None):
        raise InputError(
            "--require-certified needs --degree and --heads: without them frontier certifies no "
            "model"
        )
    result = accuracy_frontier(function, n, degree, heads, out=None if out is None else str(out))
    emit(result.to_json(), as_json, _frontier_table(result))
    require_certified(result.model is not None and result.model.certified, require)


@app.command("basis")
def boolean_basis(
    degree: int = typer.Option(
        ..., "--degree", help=f"At most D summands; D·H ≤ {MAX_BASIS_SPAN:,}."
    ),
    heads: int = typer.Option(..., "--heads", help="Elements lie in 1..H."),
    range_: int = typer.Option(..., "--range", help="Every 0..T must be representable, T ≤ D·H."),
    optimal: bool = typer.Option(
        False, "--optimal", help="Exact search for the smallest basis (refused past 10 s)."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """An additive D-basis inside [H] with range ≥ T: Lemma 14's, or the proven smallest
    (--optimal)."""
    from headcount.boolean.search import choose_basis

    result = choose_basis(degree, heads, range_, optimal)
    human = f"basis {list(result.basis)} (size {result.size}, range {result.range_reached})"
    emit(result.to_json(), as_json, human)


@app.command("stamps")
def boolean_stamps(
    degree: int | None = typer.Option(
        None,
        "--degree",
        show_default=False,
        help="D: at most D summands (as in basis; the readout degree). Required.",
    ),
    size: int = typer.Option(..., "--size", help=f"k positive integers: {STAMPS_TABLE}."),
    as_json: bool = JsonOpt,
    summands: int | None = old_spelling("--summands", "--degree"),
) -> None:
    """The postage-stamp problem: the largest T such that some k positive integers represent every
    0..T with at most D summands, and one set reaching it."""
    from headcount.boolean.search import stamps

    D = renamed("--degree", degree, "--summands", summands, required=True)
    result = stamps(D, size)  # past its time limit: SearchTimeout, which main() reports (exit 2)
    emit(result.to_json(), as_json, f"range {result.range} with {list(result.basis)}")


@app.command("minimal")
def boolean_minimal(
    function: str = typer.Option(
        ..., "--function", help="xor, and, or, majority, threshold:k, exact:k, mod:m, or F:+-…"
    ),
    n: int = typer.Option(..., "--n", help="Number of input bits, 1..64."),
    degree: int = typer.Option(..., "--degree", help="Readout degree D, 1..64."),
    heads: int = typer.Option(..., "--heads", help="Heads H, 1..64."),
    grid: str | None = typer.Option(
        None,
        "--grid",
        help="The head denominators c searched, comma-separated rationals > −1 (≤ 32); default "
        "−1/2, 1/2, 1..max(4, H+2).",
    ),
    out: Path | None = typer.Option(None, "--out", help="Save the d = 1 model found."),
    db: Path | None = typer.Option(
        None, "--db", help="Results database: the answer is read from it when stored, else stored."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Does value dimension d = 1 suffice? Searches every set of H denominators from the grid and
    every readout root walk (an LP each, HiGHS): a model found is certified exactly on all 2^n
    inputs; otherwise every member gets an exact infeasibility certificate (Gordan), so d = 1 is
    refuted within that family. Bound: at most 200,000 (denominator set, walk) systems."""
    from headcount.boolean.minimal import parse_grid
    from headcount.learn.search_cache import boolean_minimal

    chosen = None if grid is None else parse_grid(grid)
    record, cached = boolean_minimal(function, n, degree, heads, chosen, out=out, db=db)
    human = (
        f"{function} on {n} bits, D={degree}, H={heads}: {record['verdict']} "
        f"({record['family']['members']} systems in the family)" + (" — cached" if cached else "")
    )
    emit(record, as_json, human)
