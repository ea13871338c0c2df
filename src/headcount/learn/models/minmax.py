"""MinMaxNet: position-free heads over tokens 1..M plus two linear classifiers
(headcount.minmax.model), and exact conversions both ways."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from headcount.common.errors import InputError
from headcount.common.validate import check_int
from headcount.learn.models.tokens import as_tokens, to_numpy
from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer


class MinMaxNet(nn.Module):
    """H position-free heads over tokens 1..M (a score and a d-vector per token) summed into z, and
    two linear classifiers without bias: logits_min = θ_min z, logits_max = θ_max z, class i ↔ token
    i+1. forward(x [batch n], tokens 1..M) -> (logits_min [batch M], logits_max [batch M])."""

    def __init__(self, M: int, heads: int = 1, dim: int = 4):
        super().__init__()
        self.M, self.n_heads, self.dim = (
            check_int("M", M, 2),
            check_int("heads", heads, 1),
            check_int("dim", dim, 1),
        )
        self.scores = nn.Parameter(torch.randn(heads, M))  # [heads M]
        self.values = nn.Parameter(torch.randn(heads, M, dim))  # [heads M d]
        self.theta_min = nn.Parameter(torch.randn(M, dim) / math.sqrt(dim))  # [M d]
        self.theta_max = nn.Parameter(torch.randn(M, dim) / math.sqrt(dim))  # [M d]

    def layer(self, x: Any) -> torch.Tensor:
        """z = Σ_h Σ_j softmax_j(score_h[x_j]) value_h[x_j]: [batch d]."""
        idx = as_tokens(x, 1, self.M).to(self.scores.device) - 1  # [batch n], 0-based
        weights = torch.softmax(self.scores[:, idx], dim=-1)  # [heads batch n]
        return torch.einsum("hbn,hbnd->bd", weights, self.values[:, idx])

    def forward(self, x: Any) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.layer(x)
        return z @ self.theta_min.T, z @ self.theta_max.T


def minmax_net_from_model(model: MinMaxModel) -> MinMaxNet:
    """A float64 MinMaxNet with the same layer output and logits as `model`."""
    if not isinstance(model, MinMaxModel):
        raise InputError(
            f"expected a headcount.minmax.model.MinMaxModel, got {type(model).__name__}"
        )
    layer = model.layer
    net = MinMaxNet(layer.M, len(layer.heads), layer.dim).double()
    with torch.no_grad():
        net.scores.copy_(torch.from_numpy(np.stack([h.scores for h in layer.heads])))
        net.values.copy_(torch.from_numpy(np.stack([h.values for h in layer.heads])))
        net.theta_min.copy_(torch.from_numpy(model.classifier_min.theta))
        net.theta_max.copy_(torch.from_numpy(model.classifier_max.theta))
    return net


def minmax_net_to_model(net: MinMaxNet, info: dict[str, Any] | None = None) -> MinMaxModel:
    """The float64 MinMaxModel of `net`, for the exact verifiers and save_minmax."""
    scores, values = to_numpy(net.scores), to_numpy(net.values)
    heads = tuple(TokenHead(scores[h], values[h]) for h in range(net.n_heads))
    meta = {"source": "headcount.learn", "M": net.M, "heads": net.n_heads, "dim": net.dim} | dict(
        info or {}
    )
    return MinMaxModel(
        TokenLayer(heads),
        Classifier(to_numpy(net.theta_min)),
        Classifier(to_numpy(net.theta_max)),
        meta,
    )
