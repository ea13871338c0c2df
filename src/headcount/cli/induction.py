"""`headcount induction …`: solve, construct, predict, certify, protocol, refute.

Each command parses its options, calls one function of headcount.induction (which checks the input and
raises InputError), and prints the result's to_json() (or a human line built from its fields).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from headcount.cli.common import JsonOpt, emit, parse_tokens

app = typer.Typer(
    no_args_is_help=True, help="Induction heads (seed 000): solve, construct, predict, certify."
)

ModelOpt = typer.Option(None, "--model", help="Model file.")
IndexModelOpt = typer.Option(None, "--model", help="One-layer model file (3 tokens: 0, 1, ? = 2).")
RandomSeedOpt = typer.Option(None, "--random-seed", help="Use a seeded random one-layer table model.")
HeadsOpt = typer.Option(None, "--heads", help="Heads of the random model.")
DimOpt = typer.Option(None, "--dim", help="Embedding dimension of the random model.")
KOpt = typer.Option(..., "--k", help="INDEX size: inputs have length n = 2k+1.")


@app.command("solve")
def induction_solve(
    input: str = typer.Option(..., "--input", help='Tokens, e.g. "3 0 2 3".'),
    hops: int = typer.Option(1, "--hops", help="k of the k-hop task (1 = induction heads)."),
    as_json: bool = JsonOpt,
) -> None:
    """The reference answer: one output per position, ⊥ where there is none."""
    from headcount.induction.outputs import solve

    result = solve(parse_tokens(input), hops)
    emit(result.to_json(), as_json, " ".join(result.outputs_text))


@app.command("construct")
def induction_construct(
    layers: int = typer.Option(..., "--layers", help="1 or 2."),
    n: int = typer.Option(..., "--n", help="Sequence length."),
    alphabet: int = typer.Option(..., "--alphabet", help="Alphabet size S."),
    out: Path = typer.Option(..., "--out", help="Model file to write (safetensors)."),
    as_json: bool = JsonOpt,
) -> None:
    """Build a construction and write it as a model file."""
    from headcount.induction.construction import write_construction

    result = write_construction(layers, n, alphabet, out)
    human = (
        f"wrote {out}: {result.layers} layer(s), heads {list(result.heads_per_layer)}, dim {result.d_model}"
    )
    emit(result.to_json(), as_json, human)


@app.command("predict")
def induction_predict(
    input: str = typer.Option(..., "--input", help='Tokens, e.g. "3 0 2 3".'),
    model_file: Path | None = ModelOpt,
    layers: int | None = typer.Option(None, "--layers", help="Use the 1- or 2-layer construction."),
    n: int | None = typer.Option(None, "--n", help="Construction length (default: input length)."),
    alphabet: int | None = typer.Option(None, "--alphabet", help="Construction alphabet size."),
    precision: str = typer.Option(
        "float64", "--precision", help="fixed:p, float16, bfloat16, float32, float64 or exact."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """The model's outputs on one input, in a precision mode."""
    from headcount.induction.outputs import predict_input

    result = predict_input(parse_tokens(input), precision, model_file, layers, n, alphabet)
    emit(result.to_json(), as_json, " ".join(result.outputs_text))


@app.command("certify")
def induction_certify(
    model_file: Path | None = ModelOpt,
    layers: int | None = typer.Option(None, "--layers", help="Certify the 1- or 2-layer construction."),
    n: int = typer.Option(..., "--n", help="Sequence length."),
    alphabet: int = typer.Option(..., "--alphabet", help="Alphabet size S."),
    samples: int | None = typer.Option(None, "--samples", help="Random sequences when not exhaustive."),
    seed: int = typer.Option(0, "--seed", help="Seed for the random inputs."),
    as_json: bool = JsonOpt,
) -> None:
    """Check a model on all of Σ^n (when small) or random + adversarial inputs; find its precision."""
    from headcount.induction.certify import certify_file_or_construction

    result = certify_file_or_construction(model_file, layers, n, alphabet, samples, seed)
    cert = result.certificate
    human = (
        f"{cert.inputs_checked} inputs ({'exhaustive' if result.exhaustive else 'sampled'}), "
        f"{cert.errors} errors, precision_bits {cert.precision_bits}, certified {cert.certified}, "
        f"size {result.size}, exact dtypes {', '.join(cert.dtypes_exact) or 'none'}"
    )
    emit(result.to_json(), as_json, human)


@app.command("protocol")
def induction_protocol(
    k: int = KOpt,
    model_file: Path | None = IndexModelOpt,
    random_seed: int | None = RandomSeedOpt,
    heads: int | None = HeadsOpt,
    dim: int | None = DimOpt,
    precision_bits: int = typer.Option(..., "--precision-bits", help="p of fixed:p."),
    pairs: int | None = typer.Option(
        None, "--pairs", help="Sample this many (f, i*) pairs (default: all for k ≤ 16)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed for sampled pairs."),
    as_json: bool = JsonOpt,
) -> None:
    """Seed 000's INDEX protocol: Alice's message determines the model's answer (Bob checks every pair)."""
    from headcount.induction.lower_bound.protocol import check_protocol_file_or_random

    result = check_protocol_file_or_random(
        k, precision_bits, model_file, random_seed, heads, dim, pairs=pairs, seed=seed
    )
    human = (
        f"k={k}: message {result.message_bits} bits (seed's accounting {result.seed_message_bits}); "
        f"{result.pairs_checked} pairs, {result.agreements} agreements, {result.disagreements} disagreements "
        f"({result.disagreements_explained} explained by rounding ties)"
    )
    emit(result.to_json(), as_json, human)


@app.command("refute")
def induction_refute(
    k: int = KOpt,
    model_file: Path | None = IndexModelOpt,
    random_seed: int | None = RandomSeedOpt,
    heads: int | None = HeadsOpt,
    dim: int | None = DimOpt,
    precision_bits: int = typer.Option(16, "--precision-bits", help="p of fixed:p (default 16)."),
    seed: int = typer.Option(0, "--seed", help="Seed for the searches."),
    as_json: bool = JsonOpt,
) -> None:
    """Find an INDEX input the one-layer model answers wrongly (confirmed by running the model)."""
    from headcount.induction.lower_bound.refute import refute_file_or_random

    result = refute_file_or_random(k, precision_bits, model_file, random_seed, heads, dim, seed=seed)
    if result.found:
        human = (
            f"found by {result.method}: input {' '.join(result.input)}, position {result.position}: "
            f"expected {result.expected}, model says {result.model_output}"
        )
    else:
        human = f"nothing found ({result.method}); searched: {json.dumps(result.searched.to_json())}"
    emit(result.to_json(), as_json, human)
