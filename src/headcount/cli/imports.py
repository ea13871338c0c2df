"""`headcount import …`: models trained elsewhere as headcount model files (issue 14). One command
per family; each parses, calls one library function (headcount.interop.gpt2) and prints. Reading is
bounded and never runs code a file holds; bad input exits 2 with one line."""

from __future__ import annotations

import typer

from headcount.cli.common import JsonOpt, emit

app = typer.Typer(
    no_args_is_help=True, help="Import models trained elsewhere as headcount model files."
)


@app.command("gpt2")
def import_gpt2(
    path: str = typer.Argument(
        ...,
        help="A folder as save_pretrained writes it (config.json and model.safetensors or "
        "pytorch_model.bin), or a state-dict file: .safetensors, or .pt/.pth/.bin/.ckpt "
        "(torch.save's zip "
        "format, read only with torch.load(weights_only=True): a pickle that would run code is "
        "refused, "
        "never run).",
        show_default=False,
    ),
    config: str | None = typer.Option(
        None,
        "--config",
        help="config.json to use (≤ 1 MiB): needed for a bare state-dict file, since n_head is "
        "not in the "
        "weights; replaces a folder's own. Its sizes (n_layer, n_embd, …) must match the weights.",
    ),
    prefix: str | None = typer.Option(
        None,
        "--prefix",
        help="Key prefix before wte.weight ('' for none). Default: detected, e.g. 'transformer.' "
        "or "
        "'_orig_mod.transformer.'; lm_head.weight is looked for beside 'transformer.'.",
    ),
    readout: str | None = typer.Option(
        None,
        "--readout",
        help="tied (W_U = W_Eᵀ), lm-head (W_U = lm_head.weightᵀ) or hidden (the final hidden "
        "state is the "
        "logit vector). Default: lm-head when the checkpoint has an lm_head.weight that differs "
        "from wte, "
        "else tied.",
    ),
    vocab_map: str | None = typer.Option(
        None,
        "--vocab-map",
        help='JSON file (≤ 1 MiB) such as {"symbols": [5, 9, 2], "hops": {"0": 29, "1": 30}, '
        '"none": 0, "blank": 1}: the model token ids of the task\'s symbols 0, 1, …, of hop counts '
        "0, 1, …, of the ⊥ answer and of a filler, stored in the model file (every key optional; "
        'default: symbol s ↦ s, hop k ≥ 1 ↦ S+k−1, none ↦ S). A "hops" list needs "hops_from": 0 '
        "or 1 (the count of its first id). Ids must lie in the vocabulary.",
    ),
    out: str = typer.Option(..., "--out", help="Model file to write (safetensors)."),
    as_json: bool = JsonOpt,
) -> None:
    """Import a Hugging Face GPT-2 checkpoint (GPT2Model / GPT2LMHeadModel: Conv1D weights,
    pre-LayerNorm, GELU MLP) as a headcount model file; missing, unexpected or mis-shaped tensors
    and unsupported features (cross-attention, rotary, parallel blocks, other activations) exit 2
    naming them. JSON fields: path (the file written), source (the weights read), config (the
    config.json read), layers, heads (per layer), d_head, d_model, d_mlp, vocab (token ids), n_ctx
    (positions), activation (gelu, gelu_tanh or relu) and activation_function (the config's name),
    layer_norm_epsilon, attn_scale (per layer), readout, lm_head (absent, tied: equal to wte, or
    separate), prefix, ignored_buffers (old causal-mask buffers skipped), vocab_map (as stored; {}
    is the identity), dtypes (of the weights read).
    """
    from headcount.interop.gpt2 import import_gpt2 as run_import

    result = run_import(
        path, out, config=config, prefix=prefix, readout=readout, vocab_map=vocab_map
    )
    human = (
        f"wrote {out}: GPT-2, {result.layers} layer(s) × {result.heads[0] if result.heads else 0} "
        "heads, "
        f"d_model {result.d_model}, vocab {result.vocab}, n_ctx {result.n_ctx}, "
        f"{result.activation}, "
        f"readout {result.readout}"
    )
    emit(result.to_json(), as_json, human)


@app.command("hf")
def import_hf(
    path: str = typer.Argument(
        ...,
        help="A folder as save_pretrained writes it (config.json and model.safetensors or "
        "pytorch_model.bin), or a state-dict file (.safetensors, or .pt/.pth/.bin/.ckpt read only "
        "with torch.load(weights_only=True)) with --config.",
        show_default=False,
    ),
    config: str | None = typer.Option(
        None,
        "--config",
        help="config.json to use (≤ 1 MiB); needed for a bare state-dict file. Its model_type "
        "picks the family: gpt2, gpt_neox, llama, mistral, qwen2 or gemma.",
    ),
    prefix: str | None = typer.Option(
        None, "--prefix", help="Key prefix before the token embedding. Default: detected."
    ),
    readout: str | None = typer.Option(
        None,
        "--readout",
        help="tied, lm-head or hidden (as for import gpt2). Default: lm-head when the checkpoint "
        "stores a readout that differs from the embedding, else tied.",
    ),
    vocab_map: str | None = typer.Option(
        None, "--vocab-map", help="JSON file mapping task symbols to token ids (as import gpt2)."
    ),
    n_ctx: int | None = typer.Option(
        None,
        "--n-ctx",
        help="Positions of a rotary model (its W_pos is 0). Default: the config's "
        "max_position_embeddings, at most 4096 and within Mistral's sliding window.",
    ),
    out: str = typer.Option(..., "--out", help="Model file to write (safetensors)."),
    as_json: bool = JsonOpt,
) -> None:
    """Import a Hugging Face checkpoint of GPT-2, GPT-NeoX (Pythia), Llama, Mistral, Qwen2 or
    Gemma as a headcount model file (docs/families.md lists the parts); any other model_type,
    rope scaling, a missing, unexpected or mis-shaped tensor or a NaN weight exits 2 naming it.
    JSON fields: path, source, config, family, layers, heads, kv_heads, d_head, d_model, d_mlp,
    vocab, n_ctx, norm (layernorm or rmsnorm), rotary ({theta, dims, layout} or null), gated,
    parallel, activation, readout, lm_head (absent, tied or separate), prefix, ignored_buffers,
    vocab_map, dtypes, extensions (the formal model's parts in use)."""
    from headcount.interop.hf import import_hf as run_import

    result = run_import(
        path, out, config=config, prefix=prefix, readout=readout, vocab_map=vocab_map, n_ctx=n_ctx
    )
    human = (
        f"wrote {out}: {result.family}, {result.layers} layer(s) × {result.heads} heads "
        f"({result.kv_heads} key/value), d_model {result.d_model}, vocab {result.vocab}, n_ctx "
        f"{result.n_ctx}, readout {result.readout}"
    )
    emit(result.to_json(), as_json, human)


@app.command("transformer-lens")
def import_transformer_lens(
    path: str = typer.Argument(
        ...,
        help="A folder `headcount export transformer-lens` writes (config.json, "
        "model.safetensors), or any "
        "TL-native model saved the same way; or a HookedTransformer state dict (TransformerLens 2 "
        "and 3: .pt/.pth/.bin read with weights_only=True, or .safetensors) with --config.",
        show_default=False,
    ),
    config: str | None = typer.Option(
        None,
        "--config",
        help="The HookedTransformerConfig of a state dict, as JSON (≤ 1 MiB; e.g. "
        "json.dump(model.cfg.to_dict(), f)).",
    ),
    out: str = typer.Option(..., "--out", help="Model file to write (safetensors)."),
    as_json: bool = JsonOpt,
) -> None:
    """Read a TransformerLens export back as a headcount model file: bit-identical to the exported
    model when config.json holds headcount's record, else the plain reading (padded heads kept,
    attn_scale = 1/TL's scale, an lm-head vocab decoder). RMSNorm, rotary positions, gated MLPs and
    grouped key/value heads are read (docs/families.md); what headcount does not have (soft caps,
    rope scaling, param-free norms, other activations) exits 2 naming it. JSON fields: path,
    source, record, layers, heads, d_model, vocab, n_ctx, decoder, extensions."""
    from headcount.interop.transformer_lens_io import import_transformer_lens as run_import

    result = run_import(path, out, config)
    human = (
        f"wrote {out}: {result.layers} layer(s), heads {list(result.heads)}, decoder "
        f"{result.decoder}"
    )
    emit(result.to_json(), as_json, human)
