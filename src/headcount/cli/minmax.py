"""`headcount minmax …`: certify, construct, verify, search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import typer

from headcount.cli.common import JsonOpt, emit, fail

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

    if M < 2 or n < 2:
        fail(f"--M {M} --n {n}: need M ≥ 2 and n ≥ 2")
    if heads not in (1, 2):
        fail(f"--heads {heads} is not available: use 1 or 2")
    if code not in ("sign", "compact"):
        fail(f"--code {code!r} is not available: use sign or compact")
    if method is not None and method not in ("exact-histogram", "sufficient-condition", "brute-force"):
        fail(
            f"--method {method!r} is not available: use exact-histogram, sufficient-condition or brute-force"
        )
    try:
        result = certify_minmax(M, n, heads, code=code, seed=seed, method=method)
    except ValueError as err:
        fail(str(err))
    human = (
        f"M={M} n={n} heads={heads} dim={result['dim']} ({result['method']}): errors min {result['errors_min']}, "
        f"max {result['errors_max']}; margins {result['margin_min']}, {result['margin_max']}"
    )
    emit(result, as_json, human)


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
    from headcount.minmax.construction import compact_code, min_head, sign_code, two_head_layer
    from headcount.minmax.model import MinMaxModel, TokenLayer, save_minmax

    if M < 2 or n < 2:
        fail(f"--M {M} --n {n}: need M ≥ 2 and n ≥ 2")
    if heads not in (1, 2) or code not in ("sign", "compact"):
        fail(f"--heads {heads} --code {code!r}: use --heads 1 or 2 and --code sign or compact")
    codes = sign_code(M, seed=seed) if code == "sign" else compact_code(M)
    if heads == 2:
        model = two_head_layer(M, n, codes)
    else:
        head, clf = min_head(M, n, codes)
        model = MinMaxModel(TokenLayer((head,)), clf, clf, {"construction": "min_head_alone", "M": M, "n": n})
    try:
        save_minmax(model, out)
    except OSError as err:
        fail(f"cannot write {str(out)!r}: {err.strerror}")
    emit(
        {"path": str(out), "M": M, "n": n, "heads": heads, "dim": model.layer.dim, "code": code},
        as_json,
        f"wrote {out}: {heads} head(s), dim {model.layer.dim}",
    )


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
    from headcount.core.io import ModelFileError
    from headcount.minmax.model import load_minmax, random_single_head
    from headcount.minmax.task import count_multisets
    from headcount.minmax.verify import scope_of, verify_brute, verify_exact_one_head

    if M < 2 or n < 2:
        fail(f"--M {M} --n {n}: need M ≥ 2 and n ≥ 2")
    if method not in ("exact", "brute"):
        fail(f"--method {method!r} is not available: use exact or brute")
    if (model_file is None) == (random_seed is None):
        fail("give exactly one of --model FILE or --random-seed R (with --dim d)")
    if model_file is not None:
        try:
            model = load_minmax(model_file)
        except ModelFileError as err:
            fail(str(err))
    else:
        if dim is None or dim < 1:
            fail("--random-seed needs --dim d ≥ 1")
        model = random_single_head(np.random.default_rng(random_seed), M, dim)
    if len(model.layer.heads) != 1:
        fail(
            f"the model has {len(model.layer.heads)} heads: verify is for a single head (use certify for layers)"
        )
    head = model.layer.heads[0]
    if head.M != M:
        fail(f"--M {M} does not match the model's M = {head.M}")
    if method == "brute" and count_multisets(M, n) > 2_000_000:
        fail(
            f"--method brute would enumerate {count_multisets(M, n)} inputs: allowed up to 2000000 (use exact)"
        )
    result: dict[str, Any] = {
        "M": M,
        "n": n,
        "heads": 1,
        "dim": head.dim,
        "method": "exact-histogram" if method == "exact" else "brute-force",
        "inputs_covered": count_multisets(M, n),
    }
    verdicts = []
    try:
        for task, clf in (("min", model.classifier_min), ("max", model.classifier_max)):
            v = (
                verify_exact_one_head(head, clf, task, n)
                if method == "exact"
                else verify_brute(model, clf, task, n)
            )
            verdicts.append(v)
            result[f"errors_{task}"] = v.errors if v.errors is not None else (0 if v.correct else None)
            result[f"margin_{task}"] = v.margin
            result[f"counterexample_{task}"] = None if v.correct else [int(t) for t in v.worst_input]
    except ValueError as err:
        fail(str(err))
    result["scope"] = scope_of(*verdicts)
    from headcount.minmax.lower_bound import lemma6_quantities, longest_monotone_run

    result["monotone_run"] = longest_monotone_run(head).report()
    result["lemma6"] = lemma6_quantities(head, n)
    human = (
        f"min: {'correct' if result['counterexample_min'] is None else 'wrong on ' + str(result['counterexample_min'])}; "
        f"max: {'correct' if result['counterexample_max'] is None else 'wrong on ' + str(result['counterexample_max'])}"
    )
    emit(result, as_json, human)


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
    from headcount.minmax.lower_bound import smallest_dimension

    if M < 2 or n < 2 or dim < 1 or restarts < 1 or steps < 0:
        fail(
            f"--M {M} --n {n} --dim {dim} --restarts {restarts} --steps {steps}: need M, n ≥ 2, dim, restarts ≥ 1, steps ≥ 0"
        )
    try:
        result = smallest_dimension(M, n, dim, restarts=restarts, steps=steps, seed=seed)
    except ValueError as err:
        fail(str(err))
    emit(result, as_json, f"smallest d found: {result.get('smallest_d')}")
