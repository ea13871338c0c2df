"""`headcount induction …`: solve, construct, predict, certify, protocol, refute."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import typer

from headcount.cli.common import JsonOpt, emit, fail, parse_tokens
from headcount.core.symbols import token_text

app = typer.Typer(
    no_args_is_help=True, help="Induction heads (seed 000): solve, construct, predict, certify."
)


MAX_TABLE_BYTES = 4 * 2**30  # memory the CLI lets a one-layer construction's tables take


def check_size(n: int, alphabet: int, layers: int | None) -> None:
    if n < 1:
        fail(f"--n {n} is too small: the sequence length must be ≥ 1")
    if alphabet < 2:
        fail(f"--alphabet {alphabet} is too small: the alphabet size must be ≥ 2")
    if layers is not None and layers not in (1, 2):
        fail(f"--layers {layers} is not available: constructions exist for --layers 1 or 2")
    if layers == 2 and alphabet > n:
        fail(f"--alphabet {alphabet} > --n {n}: the two-layer construction is for alphabet ≤ n (seed 000)")
    table_bytes = 2 * 8 * n * alphabet * (n + 1)  # the one-layer construction stores ψ_in and Ṽ tables
    if layers == 1 and table_bytes > MAX_TABLE_BYTES:
        fail(
            f"--layers 1 at n={n}, alphabet={alphabet} needs {table_bytes / 2**30:.1f} GiB of tables "
            f"(2·8·n·S·(n+1) bytes); allowed up to {MAX_TABLE_BYTES / 2**30:.0f} GiB"
        )


def build_or_load(
    model_file: Path | None, layers: int | None, n: int | None, alphabet: int | None
):
    """The model named on the command line: --model FILE, or a construction from --layers/--n/--alphabet."""
    from headcount.core.io import ModelFileError, load_model
    from headcount.induction.constructions import one_layer_induction, two_layer_induction

    if (model_file is None) == (layers is None):
        fail("give exactly one of --model FILE or --layers {1,2} (with --n and --alphabet)")
    if model_file is not None:
        try:
            return load_model(model_file)
        except ModelFileError as err:
            fail(str(err))
    if n is None or alphabet is None:
        fail("--layers needs --n N and --alphabet S")
    check_size(n, alphabet, layers)
    return two_layer_induction(n, alphabet) if layers == 2 else one_layer_induction(n, alphabet)


@app.command("solve")
def induction_solve(
    input: str = typer.Option(..., "--input", help='Tokens, e.g. "3 0 2 3".'),
    hops: int = typer.Option(1, "--hops", help="k of the k-hop task (1 = induction heads)."),
    as_json: bool = JsonOpt,
) -> None:
    """The reference answer: one output per position, ⊥ where there is none."""
    from headcount.induction.task import induction_targets

    if hops < 1:
        fail(f"--hops {hops} must be ≥ 1")
    tokens = parse_tokens(input)
    outputs = [token_text(t) for t in induction_targets(tokens, hops)]
    emit({"input": [int(t) for t in tokens], "hops": hops, "outputs": outputs}, as_json, " ".join(outputs))


@app.command("construct")
def induction_construct(
    layers: int = typer.Option(..., "--layers", help="1 or 2."),
    n: int = typer.Option(..., "--n", help="Sequence length."),
    alphabet: int = typer.Option(..., "--alphabet", help="Alphabet size S."),
    out: Path = typer.Option(..., "--out", help="Model file to write (safetensors)."),
    as_json: bool = JsonOpt,
) -> None:
    """Build a construction and write it as a model file."""
    from headcount.core.io import save_model

    model = build_or_load(None, layers, n, alphabet)
    try:
        save_model(model, out)
    except OSError as err:
        fail(f"cannot write {str(out)!r}: {err.strerror}")
    result = {
        "path": str(out),
        "layers": len(model.layers),
        "heads": model.heads,
        "dim": model.d_model,
        "n": n,
        "alphabet": alphabet,
    }
    emit(
        result,
        as_json,
        f"wrote {out}: {len(model.layers)} layer(s), heads {model.heads}, dim {model.d_model}",
    )


@app.command("predict")
def induction_predict(
    input: str = typer.Option(..., "--input", help='Tokens, e.g. "3 0 2 3".'),
    model_file: Path | None = typer.Option(None, "--model", help="Model file."),
    layers: int | None = typer.Option(None, "--layers", help="Use the 1- or 2-layer construction."),
    n: int | None = typer.Option(None, "--n", help="Construction length (default: input length)."),
    alphabet: int | None = typer.Option(None, "--alphabet", help="Construction alphabet size."),
    precision: str = typer.Option(
        "float64", "--precision", help="fixed:p, float16, bfloat16, float32, float64 or exact."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """The model's outputs on one input, in a precision mode."""
    from headcount.core.evaluate import predict
    from headcount.core.precision import parse_precision

    tokens = parse_tokens(input)
    try:
        prec = parse_precision(precision)
    except ValueError as err:
        fail(str(err))
    if layers is not None and n is None:
        n = len(tokens)
    model = build_or_load(model_file, layers, n, alphabet)
    if len(tokens) > model.n_ctx:
        fail(f"--input has {len(tokens)} tokens but the model's context length is {model.n_ctx}")
    if tokens.max() >= model.alphabet:
        fail(f"--input token {int(tokens.max())} is outside the model's alphabet 0..{model.alphabet - 1}")
    with np.errstate(all="ignore"):
        outputs = [token_text(t) for t in predict(model, tokens, prec)[0]]
    emit(
        {"input": [int(t) for t in tokens], "precision": prec.name, "outputs": outputs},
        as_json,
        " ".join(outputs),
    )


@app.command("certify")
def induction_certify(
    model_file: Path | None = typer.Option(None, "--model", help="Model file."),
    layers: int | None = typer.Option(None, "--layers", help="Certify the 1- or 2-layer construction."),
    n: int = typer.Option(..., "--n", help="Sequence length."),
    alphabet: int = typer.Option(..., "--alphabet", help="Alphabet size S."),
    samples: int | None = typer.Option(None, "--samples", help="Random sequences when not exhaustive."),
    seed: int = typer.Option(0, "--seed", help="Seed for the random inputs."),
    as_json: bool = JsonOpt,
) -> None:
    """Check a model on all of Σ^n (when small) or random + adversarial inputs; find its precision."""
    from headcount.induction.certify import certify_induction

    check_size(n, alphabet, layers)
    if samples is not None and samples < 1:
        fail(f"--samples {samples} must be ≥ 1")
    model = build_or_load(model_file, layers, n, alphabet)
    if n > model.n_ctx or alphabet > model.alphabet:
        fail(
            f"the model handles n ≤ {model.n_ctx} and alphabet ≤ {model.alphabet}; got --n {n} --alphabet {alphabet}"
        )
    result = certify_induction(model, n, alphabet, samples=samples, seed=seed)
    human = (
        f"{result['inputs_checked']} inputs ({'exhaustive' if result['exhaustive'] else 'sampled'}), "
        f"{result['errors']} errors, precision_bits {result['precision_bits']}, certified {result['certified']}, "
        f"size {result['size']}, exact dtypes {', '.join(result['dtypes_exact']) or 'none'}"
    )
    emit(result, as_json, human)


def index_model(
    k: int, model_file: Path | None, random_seed: int | None, heads: int | None, dim: int | None
):
    """The one-layer model an INDEX command runs on: --model FILE, or a seeded random table model."""
    from headcount.core.io import ModelFileError, load_model
    from headcount.core.table import random_table

    if k < 1:
        fail(f"--k {k} is too small: k ≥ 1 (the INDEX input has length n = 2k+1)")
    if (model_file is None) == (random_seed is None):
        fail("give exactly one of --model FILE or --random-seed R (with --heads h --dim m)")
    if model_file is not None:
        try:
            model = load_model(model_file)
        except ModelFileError as err:
            fail(str(err))
        if len(model.layers) != 1:
            fail(
                f"{str(model_file)!r} has {len(model.layers)} layers: the INDEX reduction is about one-layer models"
            )
        return model
    if heads is None or dim is None or heads < 1 or dim < 1:
        fail("--random-seed needs --heads h ≥ 1 and --dim m ≥ 1")
    return random_table(np.random.default_rng(random_seed), 2 * k + 1, 3, heads, dim)


@app.command("protocol")
def induction_protocol(
    k: int = typer.Option(..., "--k", help="INDEX size: inputs have length n = 2k+1."),
    model_file: Path | None = typer.Option(
        None, "--model", help="One-layer model file (3 tokens: 0, 1, ? = 2)."
    ),
    random_seed: int | None = typer.Option(
        None, "--random-seed", help="Use a seeded random one-layer table model."
    ),
    heads: int | None = typer.Option(None, "--heads", help="Heads of the random model."),
    dim: int | None = typer.Option(None, "--dim", help="Embedding dimension of the random model."),
    precision_bits: int = typer.Option(..., "--precision-bits", help="p of fixed:p."),
    pairs: int | None = typer.Option(
        None, "--pairs", help="Sample this many (f, i*) pairs (default: all for k ≤ 16)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed for sampled pairs."),
    as_json: bool = JsonOpt,
) -> None:
    """Seed 000's INDEX protocol: Alice's message determines the model's answer (Bob checks every pair)."""
    from headcount.induction.index import check_protocol

    model = index_model(k, model_file, random_seed, heads, dim)
    try:
        report = check_protocol(model, k, precision_bits, pairs=pairs, seed=seed).as_dict()
    except ValueError as err:
        fail(str(err))
    human = (
        f"k={k}: message {report['message_bits']} bits (seed's accounting {report.get('seed_message_bits')}); "
        f"{report['pairs_checked']} pairs, {report['agreements']} agreements, {report['disagreements']} disagreements "
        f"({report['disagreements_explained']} explained by rounding ties)"
    )
    emit(report, as_json, human)


@app.command("refute")
def induction_refute(
    k: int = typer.Option(..., "--k", help="INDEX size: inputs have length n = 2k+1."),
    model_file: Path | None = typer.Option(
        None, "--model", help="One-layer model file (3 tokens: 0, 1, ? = 2)."
    ),
    random_seed: int | None = typer.Option(
        None, "--random-seed", help="Use a seeded random one-layer table model."
    ),
    heads: int | None = typer.Option(None, "--heads", help="Heads of the random model."),
    dim: int | None = typer.Option(None, "--dim", help="Embedding dimension of the random model."),
    precision_bits: int = typer.Option(16, "--precision-bits", help="p of fixed:p (default 16)."),
    seed: int = typer.Option(0, "--seed", help="Seed for the searches."),
    as_json: bool = JsonOpt,
) -> None:
    """Find an INDEX input the one-layer model answers wrongly (confirmed by running the model)."""
    from headcount.induction.index import refute

    model = index_model(k, model_file, random_seed, heads, dim)
    try:
        result = refute(model, k, precision_bits, seed=seed).as_dict()
    except ValueError as err:
        fail(str(err))
    if result["found"]:
        human = (
            f"found by {result['method']}: input {' '.join(result['input'])}, position {result['position']}: "
            f"expected {result['expected']}, model says {result['model_output']}"
        )
    else:
        human = f"nothing found ({result['method']}); searched: {json.dumps(result['searched'])}"
    emit(result, as_json, human)
