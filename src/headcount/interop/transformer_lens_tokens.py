"""The tokenizer a TransformerLens export carries (issue 30), so that TransformerLens's string tools
(``bridge.to_tokens``, ``to_str_tokens``, ``to_string``, ``run_with_cache`` on text,
``transformer_lens.head_detector.detect_head``) work on a headcount model unchanged.

Its words are the task's symbols as headcount prints them (core.model.symbols.token_text): token id
i ↔ the text of symbol i for i in 0..d_vocab−1 (``"0"``, ``"1"``, …), one word per symbol, words
separated by whitespace: ``bridge.to_tokens("0 1 2 0")`` is exactly ``[[0, 1, 2, 0]]`` and
``bridge.to_string(tokens)`` gives the text back. It is a ``tokenizers`` WordLevel model with a
WhitespaceSplit pre-tokenizer (no normalizer, no post-processor, no decoder: decoding joins the
words with spaces) wrapped as a ``transformers.PreTrainedTokenizerFast`` (both come with
transformers, which the [tl] extra needs anyway), and two special tokens just past the model's
vocabulary, which no headcount model can embed:

    "<unk>"  id d_vocab      what a word that is not a symbol becomes
    "<pad>"  id d_vocab + 1  padding of a batch of unequal strings, and the EOS token (so
                             TransformerLens adds none of its own); TransformerLens's boot makes it
                             the BOS token too

BOS: a headcount model has no beginning-of-sequence token (position 0 holds the first symbol, and
every construction's positional code counts from it), so prepending one would shift every position.
The config says ``default_prepend_bos`` False and ``tokenizer_prepends_bos`` False and the tokenizer
adds nothing: ``to_tokens`` gives exactly the symbols' ids, and TransformerLens's BOS-aware tools
(``exclude_bos``) should be left at their defaults. Asking for a BOS anyway (``prepend_bos=True``)
puts "<pad>" first, which the embedding refuses (an index error) instead of silently shifting the
positions; likewise "<unk>" and padding: text that is not symbols never runs.

`tokenizer_files` gives the tokenizer as the two JSON files of the folder export (written by
headcount.interop.transformer_lens_io without transformers; its load.py reads them with
``PreTrainedTokenizerFast.from_pretrained``, JSON only, no code) and `symbol_tokenizer` builds the
same tokenizer in memory (importing transformers and tokenizers only then).
"""

from __future__ import annotations

import json
from typing import Any

from headcount.core.model.symbols import token_text

UNK, PAD = "<unk>", "<pad>"
TOKENIZER_FILE, TOKENIZER_CONFIG_FILE = "tokenizer.json", "tokenizer_config.json"


def symbol_vocab(d_vocab: int) -> dict[str, int]:
    """word → id: each symbol's text (token_text) → its id, then the two special tokens."""
    return {token_text(i): i for i in range(d_vocab)} | {UNK: d_vocab, PAD: d_vocab + 1}


def _special(content: str, ident: int) -> dict[str, Any]:
    flags = dict.fromkeys(("single_word", "lstrip", "rstrip", "normalized"), False)
    return {"id": ident, "content": content} | flags | {"special": True}


def tokenizer_files(d_vocab: int, n_ctx: int) -> dict[str, dict[str, Any]]:
    """{file name: JSON object} of the tokenizer over `d_vocab` symbols (module docstring):
    tokenizer.json (the ``tokenizers`` serialisation) and tokenizer_config.json (the special tokens
    and settings ``PreTrainedTokenizerFast.from_pretrained`` reads)."""
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [_special(UNK, d_vocab), _special(PAD, d_vocab + 1)],
        "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": symbol_vocab(d_vocab), "unk_token": UNK},
    }
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": UNK,
        "pad_token": PAD,
        "eos_token": PAD,
        "model_max_length": n_ctx,
        "padding_side": "right",
        "clean_up_tokenization_spaces": False,
    }
    return {TOKENIZER_FILE: tokenizer, TOKENIZER_CONFIG_FILE: config}


def symbol_tokenizer(d_vocab: int, n_ctx: int) -> Any:
    """The tokenizer of `tokenizer_files`, in memory: a ``transformers.PreTrainedTokenizerFast``
    (ImportError without transformers: the caller names the extra)."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    files = tokenizer_files(d_vocab, n_ctx)
    settings = {k: v for k, v in files[TOKENIZER_CONFIG_FILE].items() if k != "tokenizer_class"}
    model = Tokenizer.from_str(json.dumps(files[TOKENIZER_FILE]))
    return PreTrainedTokenizerFast(tokenizer_object=model, **settings)
