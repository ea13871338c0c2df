"""BooleanNet: heads over {0, 1} plus a degree-D polynomial readout (headcount.boolean.model), and
exact conversions both ways (every float64 is a dyadic rational; Boolean model files hold the exact
rationals as strings, so constructions round-trip exactly)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import torch
from torch import nn

from headcount.boolean.model import BooleanHead, BooleanLayer, Readout, fmpq_to_float, to_fmpq
from headcount.common.errors import InputError
from headcount.common.validate import check_int
from headcount.learn.models.tokens import as_tokens, to_numpy


def monomial_exponents(dim: int, degree: int) -> list[tuple[int, ...]]:
    """All exponent tuples K ∈ N^dim with |K| ≤ degree, the constant first, then by degree,
    lexicographic."""
    out = []
    for total in range(degree + 1):
        for combo in itertools.combinations_with_replacement(range(dim), total):
            out.append(tuple(combo.count(i) for i in range(dim)))
    return out


class BooleanNet(nn.Module):
    """H heads over {0, 1}^n (log-weights, so w_0, w_1 > 0, and values v_0, v_1 ∈ R^d) summed into
    z, then g = Σ_K c_K z^K over all monomials of degree ≤ D (constant included). The answer is sign
    g (true ↔ −1).

    A head's output depends on x only through t = |x|: z_h(t) = v_0 + λ(t)(v_1 − v_0) with λ(t) =
    t·w_1 / ((n−t)w_0 + t·w_1) = sigmoid(log w_1 − log w_0 + log t − log(n−t)), which is exactly 0
    at t = 0 and 1 at t = n and never overflows. forward(x [batch n] bits) -> g [batch]; score(t) ->
    g [batch]."""

    def __init__(self, n: int, heads: int = 1, dim: int = 2, degree: int = 2):
        super().__init__()
        self.n, self.n_heads = check_int("n", n, 1), check_int("heads", heads, 1)
        self.dim, self.degree = check_int("dim", dim, 1), check_int("degree", degree, 1)
        exps = monomial_exponents(dim, degree)
        self.logw = nn.Parameter(torch.randn(heads, 2))  # [heads 2]: log w_0, log w_1
        self.values = nn.Parameter(torch.randn(heads, 2, dim))  # [heads 2 d]: v_0, v_1
        self.register_buffer("exponents", torch.tensor(exps, dtype=torch.long))  # [monomials d]
        self.coef = nn.Parameter(torch.randn(len(exps)) / math.sqrt(len(exps)))  # [monomials]

    def layer(self, t: Any) -> torch.Tensor:
        """z(t) for weights t [batch] in 0..n: [batch d]."""
        t = as_tokens(torch.as_tensor(t).reshape(1, -1), 0, self.n)[0].to(self.logw)
        r = self.logw[:, 1] - self.logw[:, 0]  # [heads]
        lam = torch.sigmoid(
            r[:, None] + torch.log(t)[None, :] - torch.log(self.n - t)[None, :]
        )  # [heads batch]
        v0, v1 = self.values[:, 0], self.values[:, 1]  # [heads d]
        return (v0[:, None, :] + lam[..., None] * (v1 - v0)[:, None, :]).sum(dim=0)

    def readout(self, z: torch.Tensor) -> torch.Tensor:
        """g(z) = Σ_K c_K z^K: [batch]. Powers by repeated products (no 0^0 in the gradient)."""
        powers = [torch.ones_like(z)]
        for _ in range(self.degree):
            powers.append(powers[-1] * z)
        powers = torch.stack(powers)  # [degree+1 batch d]
        picked = powers[self.exponents, :, torch.arange(self.dim)[None, :]]  # [monomials d batch]
        return self.coef @ picked.prod(dim=1)

    def score(self, t: Any) -> torch.Tensor:
        return self.readout(self.layer(t))

    def forward(self, x: Any) -> torch.Tensor:
        x = as_tokens(x, 0, 1)
        if x.shape[1] != self.n:
            raise InputError(f"inputs must have n = {self.n} bits, got {x.shape[1]}")
        return self.score(x.sum(dim=1))


def _log_rational(q) -> float:
    """log of a positive fmpq, fine for numbers far outside float64's range (math.log takes big
    ints)."""
    return math.log(int(q.p)) - math.log(int(q.q))


def boolean_net_from_model(layer: BooleanLayer, readout: Readout, n: int) -> BooleanNet:
    """A float64 BooleanNet for the exact (layer, readout) of headcount.boolean.model, at input
    length n. Weights and coefficients are rounded to float64 (exact for dyadic rationals); log w
    from the exact w."""
    if readout.dim != layer.dim:
        raise InputError(f"readout has d = {readout.dim} but the layer outputs d = {layer.dim}")
    net = BooleanNet(n, len(layer.heads), layer.dim, readout.degree).double()
    index = {K: i for i, K in enumerate(monomial_exponents(layer.dim, readout.degree))}
    coef = np.zeros(len(index))
    for K, c in readout.terms.items():
        coef[index[tuple(K)]] = fmpq_to_float(c)
    with torch.no_grad():
        net.logw.copy_(
            torch.tensor(
                [[_log_rational(h.w0), _log_rational(h.w1)] for h in layer.heads],
                dtype=torch.float64,
            )
        )
        net.values.copy_(
            torch.tensor(
                [
                    [[fmpq_to_float(x) for x in h.v0], [fmpq_to_float(x) for x in h.v1]]
                    for h in layer.heads
                ],
                dtype=torch.float64,
            )
        )
        net.coef.copy_(torch.from_numpy(coef))
    return net


def boolean_net_to_model(net: BooleanNet) -> tuple[BooleanLayer, Readout]:
    """The exact (layer, readout) of `net`'s float64 parameters (floats are dyadic rationals, so
    exact). Only w_1/w_0 matters, so w = exp(log w − max(log w_0, log w_1)): the larger is 1,
    nothing overflows; a weight that underflows to 0 is stored as the smallest positive float64 (w
    must be > 0)."""
    logw, values, coef = to_numpy(net.logw), to_numpy(net.values), to_numpy(net.coef)
    heads = []
    for h in range(net.n_heads):
        w = np.maximum(np.exp(logw[h] - logw[h].max()), np.nextafter(0.0, 1.0))
        heads.append(
            BooleanHead(
                to_fmpq(float(w[0])),
                to_fmpq(float(w[1])),
                tuple(map(float, values[h, 0])),
                tuple(map(float, values[h, 1])),
            )
        )
    terms = {
        K: to_fmpq(float(c))
        for K, c in zip(monomial_exponents(net.dim, net.degree), coef)
        if c != 0
    }
    return BooleanLayer(tuple(heads)), Readout(terms, net.degree, net.dim)
