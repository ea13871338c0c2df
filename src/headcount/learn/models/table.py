"""TableModel: the one-layer table form (core/model/table.py) in PyTorch, so the one-layer
construction (with its documented, non-differentiable readout) loads with identical outputs and can
be probed or perturbed."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from headcount.core.model import OneLayerTable
from headcount.learn.models.tokens import as_tokens, to_numpy


class TableModel(nn.Module):
    """The one-layer table form (core/model/table.py) in PyTorch: ψ_in, Q̃, K̃, Ṽ looked up per
    (position, token), causal softmax attention, residual x_i + Σ_h head_h(i). forward(tokens) ->
    that residual (ψ_out is the table's decoder, kept as data: `predict` applies it); so the
    one-layer construction loads here with identical outputs and can be probed or perturbed with
    torch (its readout is not differentiable)."""

    def __init__(self, table: OneLayerTable):
        super().__init__()
        self.embed = nn.Parameter(torch.from_numpy(table.embed.copy()))  # [n_ctx alphabet d_model]
        self.Q = nn.Parameter(torch.from_numpy(table.Q.copy()))  # [heads n_ctx alphabet d_head]
        self.K = nn.Parameter(torch.from_numpy(table.K.copy()))  # [heads n_ctx alphabet d_head]
        self.V = nn.Parameter(torch.from_numpy(table.V.copy()))  # [heads n_ctx alphabet d_model]
        self.decoder, self.mask, self.info = table.decoder, table.mask, dict(table.info)

    def forward(self, tokens: Any, return_patterns: bool = False):
        n_ctx, alphabet = self.embed.shape[:2]
        tokens = as_tokens(tokens, 0, alphabet - 1, n_ctx)
        n = tokens.shape[1]
        pos = torch.arange(n)[None, :]  # [1 pos]
        x = self.embed[pos, tokens]  # [batch pos d_model]
        q, k, v = (
            self.Q[:, pos, tokens],
            self.K[:, pos, tokens],
            self.V[:, pos, tokens],
        )  # [heads batch pos *]
        scores = q @ k.transpose(-1, -2)  # [heads batch query key]
        if self.mask == "causal":
            scores = scores.masked_fill(
                ~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf")
            )
        pattern = torch.softmax(scores, dim=-1)
        out = x + (pattern @ v).sum(dim=0)  # [batch pos d_model]
        return (
            (out, [pattern.transpose(0, 1)]) if return_patterns else out
        )  # patterns [batch heads q k]

    def predict(self, tokens: Any) -> np.ndarray:
        """ψ_out of the residual: tokens [batch pos] with BOTTOM for ⊥ (the table's own decoder)."""
        with torch.no_grad():
            return self.decoder.decode(self(tokens).double().numpy())


def table_model_to_table(m: TableModel) -> OneLayerTable:
    """The core table model with `m`'s (possibly fine-tuned) tables and the same decoder."""
    return OneLayerTable(
        to_numpy(m.embed),
        to_numpy(m.Q),
        to_numpy(m.K),
        to_numpy(m.V),
        m.decoder,
        m.mask,
        dict(m.info),
    )
