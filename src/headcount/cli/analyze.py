"""`headcount analyze …`: what a model's heads do (issue 15). `analyze heads` parses its options,
calls headcount.induction.heads.analyze_heads_file (which checks every value and bounds the work
before reading the model) and prints the scores; `analyze patterns` calls
headcount.report.views.attention_files.attention_figure_file (the same checks, and the output
folder's) and prints the figure files and each head's role."""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import ALPHABET_DEFAULT, N_DEFAULT, TASK_DEFAULT, JsonOpt, emit

app = typer.Typer(no_args_is_help=True, help="What a model's attention heads do.")

# The options both commands share (the same checks: induction/heads.py); --task, --n and
# --alphabet default as in `evaluate` (cli.common).
ModelFileOpt = typer.Option(
    ..., "--model", help="Model file (constructed, trained, imported; weight or table form)."
)
TaskOpt = typer.Option(
    TASK_DEFAULT, "--task", help="induction (uniform characters) or khop (no two adjacent equal)."
)
LayoutOpt = typer.Option(
    None,
    "--layout",
    help="plain or hop-prefix (the token of hop count --hops first); default: plain for induction, "
    "hop-prefix for khop.",
)
HopsOpt = typer.Option(
    1, "--hops", help="The hop count whose token leads a hop-prefix input, 1..16."
)
AlphabetOpt = typer.Option(
    ALPHABET_DEFAULT, "--alphabet", help="Alphabet size S ≥ 2 (the model's symbols)."
)
SeedOpt = typer.Option(
    0, "--seed", help="Seed of the inputs (≥ 0): numpy's default_rng seeded by (seed, n, alphabet)."
)


@app.command("heads")
def analyze_heads(
    model_file: Path = ModelFileOpt,
    task: str = TaskOpt,
    layout: str | None = LayoutOpt,
    hops: int = HopsOpt,
    n: int = typer.Option(
        N_DEFAULT, "--n", help="Characters per input, 2..1024 (with hop-prefix n + 1 must fit)."
    ),
    alphabet: int = AlphabetOpt,
    samples: int = typer.Option(
        256,
        "--samples",
        help="Inputs, 1..65536; samples × heads × length² ≤ 2·10⁸ attention weights, within "
        "--max-memory.",
    ),
    seed: int = SeedOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Head scores (previous-token, duplicate-token, latest-earlier, induction, find^r, sink,
    uniform) and head roles."""
    from headcount.induction.heads import analyze_heads_file

    result = analyze_heads_file(model_file, task, layout, n, alphabet, samples, seed, hops)
    human = "\n".join(
        f"layer {h.layer} head {h.head}: {h.role} (previous {h.previous_token:.2f}, duplicate "
        f"{h.duplicate_token:.2f}, latest earlier {h.latest_earlier:.2f}, induction "
        f"{h.induction:.2f}, sink {h.sink:.2f})"
        for h in result.heads
    )
    emit(result.to_json(), as_json, human)


@app.command("patterns")
def analyze_patterns(
    model_file: Path = ModelFileOpt,
    out: str = typer.Option(
        ...,
        "--out",
        help="Folder for attention.png, attention.svg and attention.html (an interactive page: "
        "hover a cell for its tokens, positions and weight); made if missing.",
    ),
    task: str = TaskOpt,
    layout: str | None = LayoutOpt,
    hops: int = HopsOpt,
    n: int = typer.Option(
        N_DEFAULT,
        "--n",
        help="Characters of the input drawn, 2..32 (with hop-prefix n + 1 must fit).",
    ),
    alphabet: int = AlphabetOpt,
    samples: int = typer.Option(
        256,
        "--samples",
        help="Inputs the head scores in the titles average over (the first is drawn), 1..65536.",
    ),
    seed: int = SeedOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Attention heat maps of every head on one input (PNG, SVG and an interactive HTML page), with
    each head's role and scores."""
    from headcount.report.views.attention_files import attention_figure_file

    result = attention_figure_file(model_file, out, task, layout, n, alphabet, seed, hops, samples)
    roles = ", ".join(f"L{h.layer}H{h.head} {h.role}" for h in result.heads)
    emit(result.to_json(), as_json, f"{result.png}, {result.svg} and {result.html}: {roles}")
