"""`headcount induction …`: solve, construct, predict, certify, protocol, refute.

Each command parses its options, calls one function of headcount.induction (which checks the input
and raises InputError naming the parameter; headcount.cli's error boundary spells it as the flag),
and prints the result's to_json() (or a human line built from its fields). Where a command's model
comes from (--model, or --layers, or --random-model with --heads and --dim) is an
induction.source.ModelSource. --seed always seeds a command's random inputs or search;
--random-model SEED uses a seeded random model (its old spelling --random-seed still works, hidden
and noted as deprecated). `certify --require-certified` exits 3 when the certificate's
`certified` is false.

Every count has a bound or a normalisation, checked before any work and stated in its --help (the
library holds the constants: induction.outputs, .construction, .certify, .lower_bound.resources;
tests/induction/test_limits.py keeps the texts and the constants together). Memory estimates are
refused beyond --max-memory (default: half of this machine's memory).
"""

from __future__ import annotations

import json
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
    no_args_is_help=True, help="Induction heads (seed 000): solve, construct, predict, certify."
)

ModelOpt = typer.Option(None, "--model", help="Model file.")
IndexModelOpt = typer.Option(None, "--model", help="One-layer model file (3 tokens: 0, 1, ? = 2).")
RandomModelOpt = typer.Option(
    None,
    "--random-model",
    metavar="SEED",
    help="Use a seeded random one-layer table model as the model: its seed (≥ 0), with --heads "
    "and --dim (--seed seeds the inputs, not the model).",
)
RandomSeedOpt = old_spelling("--random-seed", "--random-model")
HeadsOpt = typer.Option(
    None, "--heads", help="Heads of the random model (≥ 1; its tables must fit --max-memory)."
)
DimOpt = typer.Option(
    None,
    "--dim",
    help="Embedding dimension of the random model (≥ 1; its tables must fit --max-memory).",
)
KOpt = typer.Option(
    ...,
    "--k",
    help="INDEX size: inputs have length n = 2k+1 (≥ 1; bounded by the command's work and "
    "--max-memory).",
)
InputOpt = typer.Option(
    ..., "--input", help='Tokens 0..2^63-1, e.g. "3 0 2 3" (at most 10,000,000 of them).'
)
PrecisionBitsHelp = "p of fixed:p, 1 ≤ p ≤ 60 (the precision modes' range)"
SeedHelp = "(any integer ≥ 0)"


@app.command("solve")
def induction_solve(
    input: str = InputOpt,
    hops: int = typer.Option(
        1,
        "--hops",
        help="k of the k-hop task (1 = induction heads, 0 = the input itself); any k ≥ 0: hops "
        "beyond the input's length n answer like hops = n, at once.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """The reference answer: one output per position, ⊥ where there is none."""
    from headcount.induction.outputs import solve, tokens_from_text

    result = solve(tokens_from_text(input), hops)
    emit(result.to_json(), as_json, " ".join(result.outputs_text))


DepthOpt = typer.Option(
    None,
    "--depth",
    help="The k-hop construction with --hops k: ceil (default; ⌈log₂ k⌉ + 2 layers, width 28) or "
    "floor (⌊log₂ k⌋ + 2 layers; layer 1 has one head per binary level of the position, width "
    "40 + 5⌈log₂ n⌉).",
)


@app.command("construct")
def induction_construct(
    layers: int | None = typer.Option(
        None,
        "--layers",
        help="1 or 2 (induction heads); with --hops or --max-hops: optional, and then it must be "
        "the "
        "k-hop construction's depth ⌈log₂ k⌉ + 2.",
    ),
    n: int = typer.Option(
        ...,
        "--n",
        help="Sequence length (≥ 1; the model must fit --max-memory: about 232·n bytes for 2 "
        "layers, "
        "16·n²·S for 1 layer, whose tables may take at most 4 GiB; about 300–450·n bytes for k "
        "hops).",
    ),
    alphabet: int = typer.Option(
        ..., "--alphabet", help="Alphabet size S (2 ≤ S; S ≤ n for 2 layers and for k hops)."
    ),
    out: Path = typer.Option(..., "--out", help="Model file to write (safetensors)."),
    hops: int | None = typer.Option(
        None,
        "--hops",
        help="k of the k-hop task, 1 ≤ k ≤ 65536: the pointer-doubling construction with ⌈log₂ k⌉ "
        "+ 2 "
        "layers (k = 1: the 2-layer construction), or with --depth floor ⌊log₂ k⌋ + 2; --layout "
        "plain only.",
    ),
    depth: str | None = DepthOpt,
    layout: str = typer.Option(
        "plain",
        "--layout",
        help="plain (characters only) or hop-prefix (the hop token first: one model for every k ≤ "
        "--max-hops).",
    ),
    max_hops: int | None = typer.Option(
        None,
        "--max-hops",
        help="K of --layout hop-prefix, 1 ≤ K ≤ 65536: the model answers every k ≤ K with ⌈log₂ "
        "K⌉ + 2 "
        "layers (its vocabulary: S symbols and K hop tokens).",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Build a construction and write it as a model file."""
    from headcount.induction.multihop.request import write_requested_construction

    result = write_requested_construction(out, n, alphabet, layers, hops, layout, max_hops, depth)
    human = (
        f"wrote {out}: {result.layers} layer(s), heads {list(result.heads_per_layer)}, dim "
        f"{result.d_model}"
    )
    emit(result.to_json(), as_json, human)


@app.command("predict")
def induction_predict(
    input: str = typer.Option(
        ...,
        "--input",
        help='Tokens, e.g. "3 0 2 3": at most 2^27 score entries (heads · n², n = tokens; about '
        "6,700 "
        "tokens for the two-layer construction) and the evaluation within --max-memory.",
    ),
    model_file: Path | None = ModelOpt,
    layers: int | None = typer.Option(None, "--layers", help="Use the 1- or 2-layer construction."),
    n: int | None = typer.Option(
        None, "--n", help="Construction length (default: input length; bounded as in `construct`)."
    ),
    alphabet: int | None = typer.Option(None, "--alphabet", help="Construction alphabet size."),
    precision: str = typer.Option(
        "float64",
        "--precision",
        help="fixed:p (1 ≤ p ≤ 60), float16, bfloat16, float32, float64 or exact.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """The model's outputs on one input, in a precision mode."""
    from headcount.induction.outputs import predict_input, tokens_from_text
    from headcount.induction.source import ModelSource

    source = ModelSource(model_file=model_file, layers=layers)
    result = predict_input(tokens_from_text(input), source, precision, n, alphabet)
    emit(result.to_json(), as_json, " ".join(result.outputs_text))


@app.command("certify")
def induction_certify(
    model_file: Path | None = ModelOpt,
    layers: str | None = typer.Option(
        None,
        "--layers",
        help="Certify a construction: 1 or 2 (induction heads), or auto — the construction for "
        "--hops k "
        "(⌈log₂ k⌉ + 2 layers, or ⌊log₂ k⌋ + 2 with --depth floor; an integer must be that "
        "depth).",
    ),
    depth: str | None = DepthOpt,
    n: int = typer.Option(
        ...,
        "--n",
        help="Sequence length (≥ 1; the evaluation, in query blocks of the whole length, must "
        "fit --max-memory).",
    ),
    alphabet: int = typer.Option(..., "--alphabet", help="Alphabet size S (≥ 2)."),
    samples: int | None = typer.Option(
        None,
        "--samples",
        help="Random sequences when not exhaustive (≥ 1). All inputs together (samples plus the "
        "adversarial families) may take at most 2^38 score entries per pass (inputs × heads × n²) "
        "and "
        "2^41 multiply-adds per pass (inputs × the model's weights and scores per input); "
        "--max-work raises both.",
    ),
    max_work: float | None = typer.Option(
        None,
        "--max-work",
        help="Score entries per pass the request may take (≥ 1; default 2^38 ≈ 2.7e11, and the "
        "multiply-add limit scales with it). The counts are the dense ones: the constructions' "
        "pruned passes score far fewer pairs (n = 2^20, S = 1024, --samples 1: 11 inputs, "
        "3.6e13).",
    ),
    seed: int = typer.Option(0, "--seed", help=f"Seed for the random inputs {SeedHelp}."),
    hops: int = typer.Option(
        1,
        "--hops",
        help="k of the k-hop task, 1 ≤ k ≤ 16 (1 = induction heads; hop-prefix: the hop token).",
    ),
    layout: str = typer.Option(
        "plain",
        "--layout",
        help="plain (characters only) or hop-prefix (the hop-count token first, position 0 not "
        "scored; "
        "n + 1 must fit the model's context).",
    ),
    backend: str = typer.Option(
        "numpy",
        "--backend",
        help="numpy or torch: the attention kernels of the float and the rigorous passes (the same "
        "certificate; torch can run on a GPU, see --device).",
    ),
    device: str = typer.Option(
        "auto",
        "--device",
        help="cpu, cuda or auto (cuda when torch sees a GPU, else cpu): where --backend torch "
        "runs; cuda "
        "needs --backend torch.",
    ),
    checkpoint: Path | None = typer.Option(
        None,
        "--checkpoint",
        help="SQLite file: the run's state is stored after every chunk of inputs, and a run "
        "restarted with the same file and arguments resumes there (another model or other "
        "arguments: refused).",
    ),
    executor: str = typer.Option(
        "local",
        "--executor",
        help="local (this process) or ray: the chunks of inputs spread over a Ray cluster, with "
        "the certificate one process gives (--backend names the attention kernels).",
    ),
    workers: int | None = typer.Option(
        None, "--workers", help="CPUs of the local Ray cluster --executor ray starts (default all)."
    ),
    address: str | None = typer.Option(
        None,
        "--address",
        help="A running Ray cluster for --executor ray: host:port of its head, auto, or "
        "ray://host:port.",
    ),
    progress: bool | None = ProgressOpt,
    require: bool = RequireCertifiedOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Check a model on all of Σ^n (when small) or random + adversarial inputs; find its
    precision.

    Exit 0: ran and answered (the certificate says `certified` true or false); with
    --require-certified, exit 3 when `certified` is false."""
    from headcount.core.attention import attention_backend
    from headcount.induction.certification import certify_induction
    from headcount.induction.source import ModelSource

    source = ModelSource(model_file=model_file, layers=layers, depth=depth)
    with attention_backend(backend, device):
        result = certify_induction(
            source, n, alphabet, samples, seed, hops, layout=layout,
            progress=progress_on(progress), checkpoint=checkpoint, executor=executor,
            workers=workers, address=address, max_work=max_work,
        )  # fmt: skip
    cert = result.certificate
    human = (
        f"{cert.inputs_checked} inputs ({'exhaustive' if result.exhaustive else 'sampled'}), "
        f"{cert.errors} errors, precision_bits {cert.precision_bits}, certified {cert.certified}, "
        f"size {result.size}, exact dtypes {', '.join(cert.dtypes_exact) or 'none'}"
    )
    emit(result.to_json(), as_json, human)
    require_certified(cert.certified, require)


@app.command("protocol")
def induction_protocol(
    k: int = KOpt,
    model_file: Path | None = IndexModelOpt,
    random_model: int | None = RandomModelOpt,
    heads: int | None = HeadsOpt,
    dim: int | None = DimOpt,
    precision_bits: int = typer.Option(..., "--precision-bits", help=f"{PrecisionBitsHelp}."),
    pairs: int | None = typer.Option(
        None,
        "--pairs",
        help="Sample this many (f, i*) pairs (≥ 1; default: all for k ≤ 16, else 65536). Each "
        "pair runs the "
        "model once: at most 2^32 score entries in all (pairs × heads × n², n = 2k+1).",
    ),
    seed: int = typer.Option(0, "--seed", help=f"Seed for sampled pairs {SeedHelp}."),
    progress: bool | None = ProgressOpt,
    as_json: bool = JsonOpt,
    random_seed: int | None = RandomSeedOpt,
) -> None:
    """Seed 000's INDEX protocol: Alice's message determines the model's answer (Bob checks every
    pair)."""
    from headcount.induction.lower_bound.protocol import check_protocol
    from headcount.induction.source import ModelSource

    random = renamed("--random-model", random_model, "--random-seed", random_seed)
    source = ModelSource(model_file=model_file, random_seed=random, heads=heads, dim=dim)
    result = check_protocol(
        source, k, precision_bits, pairs=pairs, seed=seed, progress=progress_on(progress)
    )
    floor = result.floor
    lo, hi = floor.index_error_interval
    interval = "" if floor.floor_confidence is None else f" [{lo:.4g}, {hi:.4g}] at 99 %"
    human = (
        f"k={k}: message {result.message_bits} bits (seed's accounting "
        f"{result.seed_message_bits}); "
        f"{result.pairs_checked} pairs, {result.agreements} agreements, {result.disagreements} "
        "disagreements "
        f"({result.disagreements_explained} explained by rounding ties); error floor "
        f"{floor.error_floor:.4g}, INDEX error {floor.index_error:.4g}{interval} "
        f"(Bob {floor.protocol_error:.4g}), floor holds {floor.floor_holds}"
    )
    emit(result.to_json(), as_json, human)


@app.command("refute")
def induction_refute(
    k: int = KOpt,
    model_file: Path | None = IndexModelOpt,
    random_model: int | None = RandomModelOpt,
    heads: int | None = HeadsOpt,
    dim: int | None = DimOpt,
    precision_bits: int = typer.Option(
        16, "--precision-bits", help=f"{PrecisionBitsHelp} (default 16)."
    ),
    seed: int = typer.Option(0, "--seed", help=f"Seed for the searches {SeedHelp}."),
    as_json: bool = JsonOpt,
    random_seed: int | None = RandomSeedOpt,
) -> None:
    """Find an INDEX input the one-layer model answers wrongly (confirmed by running the model)."""
    from headcount.induction.lower_bound.refute import refute
    from headcount.induction.source import ModelSource

    random = renamed("--random-model", random_model, "--random-seed", random_seed)
    source = ModelSource(model_file=model_file, random_seed=random, heads=heads, dim=dim)
    result = refute(source, k, precision_bits, seed=seed)
    if result.found:
        human = (
            f"found by {result.method}: input {' '.join(result.input)}, position "
            f"{result.position}: "
            f"expected {result.expected}, model says {result.model_output}"
        )
    else:
        human = (
            f"nothing found ({result.method}); searched: {json.dumps(result.searched.to_json())}"
        )
    emit(result.to_json(), as_json, human)


@app.command("minimal")
def induction_minimal(
    n: int = typer.Option(..., "--n", help="Sequence length, 1..16."),
    alphabet: int = typer.Option(..., "--alphabet", help="Alphabet size S, 2..16 (S^n ≤ 200,000)."),
    as_json: bool = JsonOpt,
) -> None:
    """The smallest h·m·p at which a one-layer model of a stated family (one head, uniform causal
    attention, the packed readout: value width m = 1..n) solves induction heads, certified
    exhaustively; every smaller member gets an input it answers wrongly (certify's proven
    rejection, and refute's INDEX input where INDEX embeds), beside the INDEX bound (n−1)/(2C)."""
    from headcount.induction.lower_bound.minimal import minimal_one_layer

    result = minimal_one_layer(n, alphabet)
    record = result.to_json()
    best = record["minimal"]
    human = f"n = {n}, S = {alphabet}: {result.verdict}" + (
        ""
        if best is None
        else f"; smallest h·m·p = {best['size']} (m = {best['slots']}, p = "
        f"{best['precision_bits']}), {len(record['refuted'])} smaller members refuted"
    )
    emit(record, as_json, human)
