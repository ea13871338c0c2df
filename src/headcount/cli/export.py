"""`headcount export …`: headcount models in other tools' formats (issue 15). `export
transformer-lens` parses, calls headcount.interop.transformer_lens_io.export_transformer_lens (which
reads the model file bounded and refuses what TransformerLens cannot hold, saying why) and prints
what it wrote."""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import JsonOpt, emit

app = typer.Typer(no_args_is_help=True, help="Write headcount models in other tools' formats.")


@app.command("transformer-lens")
def export_transformer_lens(
    model_file: Path = typer.Option(
        ...,
        "--model",
        help="Model file (weight form: constructed, trained, imported; linear or vocab decoder).",
    ),
    out: str = typer.Option(
        ...,
        "--out",
        help="Folder to write (created if missing): config.json, model.safetensors (float64), "
        "tokenizer.json, tokenizer_config.json and load.py.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Write a model as a TransformerLens 4.x TL-native model: config.json (TransformerBridgeConfig
    fields, and headcount's record of padding and scaling under "headcount"), model.safetensors (the
    state dict a strict load_state_dict takes), tokenizer.json and tokenizer_config.json (the
    task's symbols as tokens, no BOS: so to_tokens, run_with_cache and detect_head work) and load.py
    (four lines: TransformerBridge.boot_native with the tokenizer, then the weights, float64; needs
    headcount[tl] to run, not to write). Heads are zero-padded to one width and count — the config
    says which are real (headcount_heads_per_layer, headcount_padded_heads) — and scores keep their
    scale exactly (TL's attn_scale, W_Q scaled by a power of two). RMSNorm, rotary positions, gated
    MLPs and grouped key/value heads go as TL's own (docs/families.md). Table models, non-linear
    decoders, NeoX's parallel residual, Gemma's 1 + w and gated MLPs with biases exit 2 saying
    why. JSON fields: out_dir, files, config (the TL fields), heads (per
    layer), padded, exact_round_trip, snippet (load.py's text)."""
    from headcount.interop.transformer_lens_io import export_transformer_lens as run_export

    result = run_export(model_file, out)
    cfg = result.config
    human = (
        f"wrote {result.out_dir}: TransformerLens {cfg['n_layers']} layer(s) × {cfg['n_heads']} "
        "heads of "
        f"width {cfg['d_head']}, d_model {cfg['d_model']}, attn_scale {cfg['attn_scale']}; load "
        "with: python "
        f"{result.files[-1]}"
    )
    emit(result.to_json(), as_json, human)
