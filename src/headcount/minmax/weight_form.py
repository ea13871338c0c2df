"""A min/max model as a weight-form Transformer (core/model/transformer.py), exactly: what
`headcount zoo export` hands to TransformerLens (its transformer-lens format).

A position-free head (scores s_ω, values v_ω per token, minmax/model.py) is a weight-form head whose
score is key-only: every embedding carries a constant coordinate ONE, the query reads it (q = 1) and
the key reads the token's score (k = s_ω), so ⟨q, k⟩ = s_ω. The embedding also carries every head's
value v_ω, which W_V selects and W_O writes, head outputs summed, into an OUT block the embedding
leaves at zero:

    coordinate   0          1..H               H+1 .. H+H·d                 H+1+H·d .. H+(H+1)·d
    W_E[ω−1]     1          s_ω of each head   v_ω of each head (d each)     0 (OUT: Σ_h Att_h)

Positions are all zero (W_pos = 0) and the mask is causal, so the last position attends to the whole
list: its OUT block is the min/max layer's output z. The unembedding reads OUT with θᵀ (class ω−1
has logit ⟨θ_ω, z⟩); the weight form's last class ⊥ reads nothing and has bias −(2B + 1), below
every class logit, B = max_ω Σ_k |θ_ωk|·Σ_h max |v_hk| ≥ |⟨θ_ω, z⟩|. Token t of the Transformer is ω
= t + 1.

Exact: every score, key and value is a stored float64 number copied, or a sum of it with exact
zeros, so q, k, v, the softmax weights and the head outputs are the min/max model's own computation;
only the summation order of the value and logit sums may differ (one rounding each). The min/max
classifier answers ⊥ on an exact tie, the weight form the lowest tied class: they agree wherever the
classifier is not tied, which for a certified model (a positive margin, minmax/certification.py) is
every list — tests check every list of small sizes and every multiset of the zoo's.
"""

from __future__ import annotations

import numpy as np

from headcount.common.validate import check_choice
from headcount.core.model import AttentionHead, Layer, LinearDecoder, Transformer
from headcount.minmax.model import Classifier, MinMaxModel
from headcount.minmax.task import check_sizes

TASKS = ("min", "max")


def bottom_bias(model: MinMaxModel, classifier: Classifier) -> float:
    """−(2B + 1) with B ≥ max_ω |⟨θ_ω, z⟩| over every layer output z (module docstring)."""
    z_bound = sum(np.abs(h.values).max(axis=0) for h in model.layer.heads)  # [d] ≥ |z_k|
    return -(2.0 * float((np.abs(classifier.theta) @ z_bound).max()) + 1.0)


def minmax_to_transformer(model: MinMaxModel, n: int, task: str) -> Transformer:
    """The weight-form Transformer (module docstring) whose last-position answer on a list x ∈ [M]^n
    (tokens x − 1) is f_task(x), task "min" or "max"."""
    check_sizes(model.layer.M, n)
    check_choice("task", task, TASKS)
    layer = model.layer
    M, d, H = layer.M, layer.dim, layer.n_heads
    one, values, out = 0, H + 1, H + 1 + H * d
    d_model = out + d
    W_E = np.zeros((M, d_model))  # [M d_model]
    W_E[:, one] = 1.0
    heads = []
    for h, head in enumerate(layer.heads):
        W_E[:, 1 + h] = head.scores
        block = slice(values + h * d, values + (h + 1) * d)
        W_E[:, block] = head.values
        W_Q, W_K = np.zeros((d_model, 1)), np.zeros((d_model, 1))
        W_Q[one, 0], W_K[1 + h, 0] = 1.0, 1.0
        W_V, W_O = np.zeros((d_model, d)), np.zeros((d, d_model))
        W_V[block, :] = np.eye(d)
        W_O[:, out:] = np.eye(d)
        heads.append(AttentionHead(W_Q, W_K, W_V, W_O))
    classifier = model.classifier_min if task == "min" else model.classifier_max
    W_U = np.zeros((d_model, M + 1))  # [d_model M+1], the last class ⊥
    W_U[out:, :M] = classifier.theta.T
    b_U = np.zeros(M + 1)
    b_U[M] = bottom_bias(model, classifier)
    info = {
        "construction": "minmax_weight_form",
        "task": task,
        "M": M,
        "n": n,
        "tokens": "token t is ω = t + 1; the answer is at the last position",
        "coordinates": {
            "one": one,
            "scores": [1, H],
            "values": [values, out - 1],
            "out": [out, d_model - 1],
        },
        "source": model.info,
    }
    return Transformer(
        W_E, np.zeros((n, d_model)), (Layer(tuple(heads)),), LinearDecoder(W_U, b_U), "causal", info
    )
