"""`headcount evaluate`: a model's error per hop count on the k-hop / induction task, in its layout.

Parses the options, calls headcount.induction.layouts.evaluate_file (which checks every value and
bounds the work and memory before running) and prints its JSON, or a Markdown table without --json.
--task, --n and --alphabet default as in `analyze heads` (cli.common: induction, 16, 4).
"""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import ALPHABET_DEFAULT, N_DEFAULT, TASK_DEFAULT, JsonOpt, emit


def evaluate(
    model_file: Path = typer.Option(
        ..., "--model", help="Model file (headcount's own or imported)."
    ),
    task: str = typer.Option(
        TASK_DEFAULT,
        "--task",
        help="induction (hop count 1, uniform characters) or khop (characters with no two adjacent "
        "equal).",
    ),
    layout: str | None = typer.Option(
        None,
        "--layout",
        help="hop-prefix (the hop-count token first, position 0 not scored) or plain (characters "
        "only); "
        "default: hop-prefix for khop, plain for induction.",
    ),
    hops: str = typer.Option(
        "1",
        "--hops",
        help="A hop count K or a range a..b, 0 ≤ a ≤ b ≤ 16; each k is evaluated on its own "
        "(hop 0: the answer is the character itself; its hop token must be named by the model's "
        "vocabulary map).",
    ),
    n: int = typer.Option(
        N_DEFAULT,
        "--n",
        help="Characters per input (≥ 1; with hop-prefix n + 1 must fit the model's context).",
    ),
    alphabet: int = typer.Option(
        ALPHABET_DEFAULT, "--alphabet", help="Alphabet size S (≥ 2; the model's symbols)."
    ),
    samples: int = typer.Option(
        2048,
        "--samples",
        help="Inputs, shared by every hop count (≥ 1; default 2048, the learning lab's held-out "
        "size). "
        "Bounded by 2^41 multiply-adds in all (inputs × hop counts × the model's work per input) "
        "and "
        "--max-memory.",
    ),
    seed: int = typer.Option(
        20_240_601,
        "--seed",
        help="Seed of the inputs (≥ 0), drawn from default_rng(\\[seed, n, alphabet]); the default "
        "is the "
        "learning lab's held-out seed, so a model trained here reproduces its run's "
        "accuracy_by_hop.",
    ),
    precision: str = typer.Option(
        "float64",
        "--precision",
        help="fixed:p (1 ≤ p ≤ 60), float16, bfloat16, float32, float64 or exact.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Per-hop error of a model: over positions whose answer exists, and over ⊥ positions."""
    from headcount.induction.layouts import evaluate_file

    result = evaluate_file(model_file, task, n, alphabet, hops, layout, samples, seed, precision)
    emit(result.to_json(), as_json, result.to_markdown())
