"""The families' semantics as hf_architecture reads them, checked against transformers: an
independent float64 evaluator built from the Architecture and the layout (tests.interop.
hf_reference) matches transformers made float64 throughout to 1e-10 relative, on every hidden
state and the logits, for every random-init shape of test_hf_families (partial rotary, GQA with 1
and 2 key/value heads, untied and tied readouts, with and without biases, NeoX's parallel residual,
gemma's offsets, mistral's window)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headcount.interop.hf_architecture import architecture
from headcount.interop.hf_layout import hf_layout
from tests.interop.hf_reference import Reference, float64_transformers
from tests.interop.test_hf_families import SHAPES, _model

torch = pytest.importorskip("torch")


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.mark.parametrize(("family", "config_class", "model_class", "extra", "says"), SHAPES)
def test_the_reference_matches_float64_transformers(family, config_class, model_class, extra, says):
    config, model = _model(config_class, model_class, extra)
    model = model.double().eval()
    arch = architecture(json.loads(config.to_json_string()), "config.json")
    state = {name: t.detach().numpy() for name, t in model.state_dict().items()}
    layout = hf_layout({name: a.shape for name, a in state.items()}, arch, "state dict")
    tokens = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7]  # n = 14: mistral's window of 8 matters
    states, logits = Reference(arch, layout, state).run(tokens)
    with torch.no_grad():
        stock = model(torch.tensor([tokens]), output_hidden_states=True)
        float64_transformers(model)
        out = model(torch.tensor([tokens]), output_hidden_states=True)
    assert len(out.hidden_states) == len(states) == arch.layers + 1
    for ours, theirs in zip(states, out.hidden_states):
        assert _relative(ours, theirs[0].numpy()) <= 1e-10
    assert _relative(logits, out.logits[0].numpy()) <= 1e-10
    # stock transformers (float32 RMSNorm and rotary tables) is the same function only roughly
    assert _relative(logits, stock.logits[0].numpy()) <= 1e-5
