"""The public API's smoke test (issue 30), run by .ci/package from a fresh virtual environment that
holds only the built wheel (with the [tl] extra), and by tests/test_api.py in the test suite.

Only names the package's top level and scenario faces export are used: a model built from a
weights dict is certified, one weight is broken and a confirmed counterexample comes back, the
model goes to TransformerLens, TL's own detect_head runs on it, and it comes back bit-identically.
Exits non-zero (an AssertionError) on any failure; prints one line per step.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

import headcount


def main() -> None:
    assert isinstance(headcount.__version__, str) and headcount.__version__.count(".") == 2
    weights = headcount.induction.two_layer(8, 3).weights()  # a dict of numpy arrays
    model = headcount.Transformer.from_weights(weights, readout="bottom-last")
    cert = headcount.certify(model, "induction", n=8, alphabet=3)
    assert cert.certified and cert.scope == "exhaustive" and cert.errors == 0, cert
    # the construction itself certifies at the same precision: zero-padded heads change nothing
    own = headcount.certify(headcount.induction.two_layer(8, 3), "induction", n=8, alphabet=3)
    assert own.certified and cert.precision_bits == own.precision_bits, (cert, own)
    print("certified:", cert)

    broken = dict(weights)
    broken["blocks.1.attn.W_O"] = -broken["blocks.1.attn.W_O"]  # the induction head writes back
    bad = headcount.certify(
        headcount.Transformer.from_weights(broken, readout="bottom-last"), n=8, alphabet=3
    )
    assert not bad.certified and bad.errors > 0 and bad.counterexamples, bad
    found = bad.counterexamples[0]
    assert found.expected != found.model_output
    print("broken:", bad, "first counterexample:", found.to_json())

    bridge = headcount.to_transformer_lens(model)
    from transformer_lens.head_detector import detect_head

    text = "0 1 2 0 1 2 0"  # the task's symbols are the tokens (no BOS); TL wants < n_ctx of them
    assert bridge.to_tokens(text).tolist() == [[0, 1, 2, 0, 1, 2, 0]]
    scores = detect_head(bridge, text, "induction_head")
    assert tuple(scores.shape) == (bridge.cfg.n_layers, bridge.cfg.n_heads), scores.shape
    print("detect_head(induction_head):", [[round(float(s), 3) for s in row] for row in scores])

    back = headcount.from_transformer_lens(bridge)
    again = back.weights()
    assert again.keys() == weights.keys()
    assert all(np.asarray(again[k]).tobytes() == np.asarray(weights[k]).tobytes() for k in weights)
    print("round trip through TransformerLens: bit-identical")

    done = subprocess.run(
        [sys.executable, "-m", "headcount.cli", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and headcount.__version__ in done.stdout, done
    print("headcount --version:", done.stdout.strip())


if __name__ == "__main__":
    main()
