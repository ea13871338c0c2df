"""`headcount boolean …`: construct, check, threshold-degree, basis, stamps."""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import JsonOpt, emit, fail

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

    if n < 1 or degree < 1 or heads < 1:
        fail(f"--n {n} --degree {degree} --heads {heads}: each must be ≥ 1")
    try:
        result = construct_and_certify(function, n, degree, heads, out=None if out is None else str(out))
    except ValueError as err:
        fail(str(err))
    emit(
        result,
        as_json,
        f"{function} on {n} bits, D={degree}, H={heads}: {result['route']}, dim {result['dim']} "
        f"(bound {result['dim_bound']}), certified {result['certified']}, errors {result['errors']}",
    )


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
    from headcount.boolean.certify import certify_boolean_model
    from headcount.boolean.functions import parse_function, sign_changes
    from headcount.boolean.model import load_boolean
    from headcount.boolean.theorem2 import theorem2_check
    from headcount.core.io import ModelFileError

    try:
        layer, readout, info = load_boolean(model_file)
    except (ModelFileError, OSError) as err:
        fail(str(err))
    n = n if n is not None else info.get("n")
    if not isinstance(n, int) or n < 1:
        fail("--n N ≥ 1 is needed: the model file does not record its number of input bits")
    try:
        F = parse_function(function, n)
    except ValueError as err:
        fail(str(err))
    T = sign_changes(F)
    t2 = theorem2_check(layer, readout, n)
    result = {
        "function": function,
        "n": n,
        "threshold_degree": T,
        "degree": readout.degree,
        "heads": layer.num_heads,
        "dim": layer.dim,
        "below_bound": readout.degree * layer.num_heads < T,
        **certify_boolean_model(layer, readout, F),
        "theorem2": {
            "degree_R": t2["degree_R"],
            "bound": t2["bound"],
            "degree_ok": t2["degree_ok"],
            "signs_match": t2["signs_match"],
        },
    }
    wrong = result["wrong_input"]
    emit(
        result,
        as_json,
        f"{function} on {n} bits: "
        + (
            "correct on all inputs (exact)"
            if result["certified"]
            else f"{result['errors']} of {n + 1} weights wrong, e.g. x = {wrong['x']}"
        )
        + f"; Theorem 2: deg R = {t2['degree_R']} ≤ D·H = {t2['bound']}",
    )


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
    from headcount.boolean.functions import parse_function, threshold_degree_symmetric

    if (function is None) == (truth_table is None):
        fail("give exactly one of --function NAME (with --n N) or --truth-table BITS")
    try:
        if function is not None:
            if n is None or n < 1:
                fail("--function needs --n N ≥ 1")
            result = {
                "function": function,
                "n": n,
                "threshold_degree": threshold_degree_symmetric(parse_function(function, n)),
                "method": "symmetric",
                "witness": None,
            }
        else:
            from headcount.boolean.threshold import parse_truth_table, threshold_degree_lp

            values, bits = parse_truth_table(truth_table)
            lp = threshold_degree_lp(values, bits)
            result = {"method": "lp", **lp.to_json()}
    except ValueError as err:
        fail(str(err))
    certified = {True: ", both bounds certified", False: ", lower bound = HiGHS verdict"}.get(
        result.get("lower_bound_certified"), ""
    )
    emit(result, as_json, f"threshold degree {result['threshold_degree']} ({result['method']}{certified})")


@app.command("basis")
def boolean_basis(
    degree: int = typer.Option(..., "--degree", help="At most D summands."),
    heads: int = typer.Option(..., "--heads", help="Elements lie in 1..H."),
    range_: int = typer.Option(..., "--range", help="Every 0..T must be representable."),
    optimal: bool = typer.Option(False, "--optimal", help="Exact search for the smallest basis."),
    as_json: bool = JsonOpt,
) -> None:
    """An additive D-basis inside [H] with range ≥ T: Lemma 14's, or the proven smallest (--optimal)."""
    from headcount.boolean.bases import basis_range, lemma14_basis

    if degree < 1 or heads < 1 or range_ < 0:
        fail(f"--degree {degree} --heads {heads} --range {range_}: need D, H ≥ 1 and T ≥ 0")
    if range_ > degree * heads:
        fail(
            f"--range {range_} > degree·heads = {degree * heads}: no basis inside [H] reaches it with ≤ D summands"
        )
    try:
        if optimal:
            from headcount.boolean.search import smallest_basis

            basis = smallest_basis(degree, heads, range_)
            if basis is None:
                fail("the exact search ran out of time: use smaller parameters or drop --optimal")
        else:
            basis = lemma14_basis(degree, heads)
            if basis is None or basis_range(basis, degree) < range_:
                fail(
                    f"Lemma 14 gives no basis with range ≥ {range_} for D={degree}, H={heads}: try --optimal"
                )
    except ValueError as err:
        fail(str(err))
    result = {
        "basis": sorted(int(b) for b in basis),
        "size": len(basis),
        "range_reached": basis_range(basis, degree),
        "optimal": bool(optimal),
    }
    emit(result, as_json, f"basis {result['basis']} (size {result['size']}, range {result['range_reached']})")


@app.command("stamps")
def boolean_stamps(
    summands: int = typer.Option(..., "--summands", help="At most D summands."),
    size: int = typer.Option(..., "--size", help="k positive integers."),
    as_json: bool = JsonOpt,
) -> None:
    """The postage-stamp problem: the largest T such that some k positive integers represent every 0..T
    with at most D summands, and one set reaching it."""
    from headcount.boolean.search import stamps

    if summands < 1 or size < 1:
        fail(f"--summands {summands} --size {size}: both must be ≥ 1")
    try:
        reach, basis = stamps(summands, size)
    except ValueError as err:
        fail(str(err))
    emit(
        {"range": int(reach), "basis": sorted(int(b) for b in basis)},
        as_json,
        f"range {reach} with {sorted(basis)}",
    )
