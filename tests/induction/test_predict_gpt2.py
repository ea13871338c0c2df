"""induction predict on a model with GPT-2 parts: outputs the proofs leave open are named."""

from __future__ import annotations

import numpy as np

from headcount.core.model import Transformer
from headcount.core.model.files import save_model
from headcount.core.model.vocab import VocabDecoder
from headcount.induction.outputs import predict_input
from headcount.induction.source import ModelSource
from tests.core.test_gpt2_parts import gpt2_like


def test_predict_names_the_fixed_p_outputs_it_could_not_prove(tmp_path):
    """Two vocabulary ids with the same unembedding column tie exactly in the real model (the lower
    id wins), but their logits carry rounding error: the bounds cannot prove the tie, and a GPT-2
    model has no exact evaluator, so predict reports those positions as undecided instead of passing
    a guess as proven."""
    model = gpt2_like(8, readout="lm-head")
    W_U = model.decoder.W_U.copy()
    W_U[:, 1] = W_U[:, 0]
    b_U = np.full(model.decoder.W_U.shape[1], -1e6)
    b_U[:2] = 0.0
    tied = VocabDecoder(W_U, b_U, "lm-head", model.decoder.vocab_map)
    path = tmp_path / "tied.safetensors"
    save_model(
        Transformer(model.W_E, model.W_pos, model.layers, tied, ln_final=model.ln_final), path
    )
    got = predict_input(np.array([1, 2, 3, 4]), ModelSource(path), "fixed:20")
    assert got.outputs == (0, 0, 0, 0) and got.undecided == (1, 2, 3, 4)
    assert got.to_json()["undecided"] == [1, 2, 3, 4]
    assert (
        "undecided"
        not in predict_input(np.array([1, 2, 3, 4]), ModelSource(path), "float64").to_json()
    )
