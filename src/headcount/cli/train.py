"""`headcount train …`: induction, minmax, boolean (each: options → one library call → print).

The library checks the settings (headcount.learn.train raises InputError; main() prints it and exits
2)."""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import JsonOpt, ProgressOpt, emit, progress_on

app = typer.Typer(
    no_args_is_help=True,
    help="Train PyTorch models on a task; exact task metrics; save in the model format.",
)


# The bounds learn/models/costs.py enforces, for --help (written out so the CLI starts without
# importing torch; tests/learn/test_train_limits.py checks them against costs.MAX_STEPS, MAX_SEED,
# MAX_LR and TRAIN_FLOPS_LIMIT). Sizes are bounded by the run's estimated memory (--max-memory) and
# compute.
SIZES = "bounded by the run's memory (--max-memory) and compute (≤ 10¹⁴ operations)"
StepsOpt = typer.Option(
    None, "--steps", help="Training steps, 0..10,000,000 (default: the task's measured default)."
)
SeedOpt = typer.Option(0, "--seed", help="Seed of initialisation and data, 0..2^63−1.")
LrOpt = typer.Option(
    None, "--lr", help="Peak learning rate of AdamW, 0 < lr ≤ 10 (default: the task's)."
)
OutOpt = typer.Option(
    None,
    "--out",
    help="Save the trained model here (.safetensors, headcount model format); its folder is "
    "checked first.",
)


@app.command("induction")
def train_induction(
    layers: int = typer.Option(2, "--layers", help=f"Layers ≥ 1, {SIZES}."),
    heads: int = typer.Option(1, "--heads", help="Heads per layer ≥ 1 (bounded likewise)."),
    dim: int = typer.Option(32, "--dim", help="d_model ≥ 1 (bounded likewise)."),
    n: int = typer.Option(16, "--n", help="Sequence length ≥ 1 (bounded likewise)."),
    alphabet: int = typer.Option(4, "--alphabet", help="Tokens ≥ 2 (bounded likewise)."),
    hops: int = typer.Option(
        1,
        "--hops",
        help="1..n; k > 1: k-hop, hop count 1..k as the first token (hop n+1 answers as hop n).",
    ),
    steps: int | None = StepsOpt,
    seed: int = SeedOpt,
    lr: float | None = LrOpt,
    positional: str | None = typer.Option(
        None,
        "--positional",
        help="learned, sinusoidal or circle (arch gpt2; default learned); rotary for llama / neox.",
    ),
    mlp: bool | None = typer.Option(
        None, "--mlp/--no-mlp", help="An MLP in every block (default: off for gpt2, on otherwise)."
    ),
    layernorm: bool | None = typer.Option(
        None,
        "--layernorm/--no-layernorm",
        help="The family's norm before the heads, the MLP and the decoder: LayerNorm (gpt2, "
        "neox) or RMSNorm (llama). Default: off for gpt2, on otherwise.",
    ),
    activation: str | None = typer.Option(
        None,
        "--activation",
        help="The MLP's activation (llama: its gate's): relu, gelu (exact erf), gelu_tanh "
        "(GPT-2's) or silu. Default: relu for gpt2, silu for llama, gelu for neox.",
    ),
    arch: str = typer.Option(
        "gpt2",
        "--arch",
        help="Block family: gpt2 (learned positions, pre-LayerNorm, plain MLP), llama (RMSNorm, "
        "rotary positions, gated SiLU MLP) or neox (LayerNorm, rotary on a quarter of each head, "
        "parallel attention and MLP).",
    ),
    hop_zero: bool = typer.Option(
        False,
        "--hop-zero",
        help="k-hop: also hop count 0 (the answer is the character itself, the k-hop paper's hop-0 "
        "task), drawn with 1..k; its hop token is S + k, after the others (implies the hop token).",
    ),
    out: Path | None = OutOpt,
    progress: bool | None = ProgressOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Train a causal attention model on induction heads (or k-hop); accuracy on non-⊥, ⊥ and INDEX
    inputs."""
    from headcount.learn.train import train

    r = train(
        "induction",
        layers=layers,
        heads=heads,
        dim=dim,
        n=n,
        alphabet=alphabet,
        hops=hops,
        steps=steps,
        seed=seed,
        lr=lr,
        positional=positional,
        mlp=mlp,
        layernorm=layernorm,
        activation=activation,
        arch=arch,
        hop_zero=hop_zero,
        out=out,
        progress=progress_on(progress),
    )
    m = r.metrics
    human = (
        f"accuracy {m.accuracy:.4f} (non-⊥), {m.accuracy_bottom:.4f} (⊥)"
        + (f", {m.accuracy_index:.4f} (INDEX)" if m.accuracy_index is not None else "")
        + f"; {r.steps} steps in {r.wall_seconds:.0f} s"
        + (f"; saved {r.model_path}" if r.model_path else "")
    )
    emit(r.to_json(), as_json, human)


@app.command("minmax")
def train_minmax(
    M: int = typer.Option(
        8,
        "--M",
        help=f"Tokens 1..M, M ≥ 2, {SIZES}; the exact evaluation ≤ 2·10⁸ list×class×head steps.",
    ),
    n: int = typer.Option(4, "--n", help="List length ≥ 2 (bounded likewise)."),
    heads: int = typer.Option(1, "--heads", help="Heads ≥ 1 (bounded likewise)."),
    dim: int = typer.Option(4, "--dim", help="Value dimension ≥ 1 (bounded likewise)."),
    steps: int | None = StepsOpt,
    seed: int = SeedOpt,
    lr: float | None = LrOpt,
    out: Path | None = OutOpt,
    progress: bool | None = ProgressOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Train H heads + min and max classifiers; exact accuracy, and the exact one-head verifier for
    H = 1."""
    from headcount.learn.train import train

    r = train(
        "minmax",
        M=M,
        n=n,
        heads=heads,
        dim=dim,
        steps=steps,
        seed=seed,
        lr=lr,
        out=out,
        progress=progress_on(progress),
    )
    m = r.metrics
    human = (
        f"accuracy min {m.accuracy_min:.4f}, max {m.accuracy_max:.4f}, both {m.accuracy_both:.4f}"
    )
    emit(r.to_json(), as_json, human)


@app.command("boolean")
def train_boolean(
    function: str = typer.Option("xor", "--function", help="A symmetric function by name or F:+-…"),
    n: int = typer.Option(
        8,
        "--n",
        help=f"Input bits, 1..1,000,000, {SIZES} and the exact check's budget (boolean construct).",
    ),
    degree: int = typer.Option(2, "--degree", help="Readout degree ≥ 1 (bounded likewise)."),
    heads: int = typer.Option(4, "--heads", help="Heads ≥ 1 (bounded likewise)."),
    dim: int | None = typer.Option(
        None, "--dim", help="≥ 1 (bounded likewise); default: Theorem 3's bound."
    ),
    steps: int | None = StepsOpt,
    seed: int = SeedOpt,
    lr: float | None = LrOpt,
    out: Path | None = OutOpt,
    progress: bool | None = ProgressOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Train H heads over {0,1} with a degree-D readout; checked on all 2^n inputs, exactly."""
    from headcount.learn.train import train

    r = train(
        "boolean",
        function=function,
        n=n,
        degree=degree,
        heads=heads,
        dim=dim,
        steps=steps,
        seed=seed,
        lr=lr,
        out=out,
        progress=progress_on(progress),
    )
    m = r.metrics
    human = (
        f"{'solved' if m.solved_exact else 'not solved'}: {m.accuracy_all_inputs:.4f} of all inputs"
        + (" (D·H below the threshold degree: impossible by Theorem 2)" if r.below_bound else "")
    )
    emit(r.to_json(), as_json, human)
