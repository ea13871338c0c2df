"""Exact minimal one-layer induction models at tiny n, against the INDEX bound (issue 33).

    minimal_one_layer(n, alphabet) -> OneLayerMinimal

**The family.** One head with uniform causal attention and the packed readout (induction.readout,
packed_one_layer_induction): value width m = slots ∈ 1..n, token codes σ + offset as
base-(alphabet + offset) digits, offset 0 or 1, at precision fixed:p. Its size is h·m·p with h = 1
and m the model's d_model, as InductionCertificate.size counts it.

**The oracle.** certify_induction runs each member exhaustively (all alphabet^n inputs). It
returns the member's smallest certified p, and a rejection for every p it passed over: an input
that the exact fixed:p model is proven to answer wrongly. The minimal size found is the minimum of
m·p over the members. Every smaller (m, offset, p), meaning every member at a p with m·p below that
minimum, needs such an input, or it is listed as `uncovered` and the verdict says "incomplete".
Where INDEX embeds (n = 2k + 1, alphabet ≥ 3), `refute` also runs at (k, p). It finds an INDEX
input the member gets wrong (collision or exhaustive search) or reports that the member is right
on the whole INDEX family at that p.

**The INDEX bound.** For any one-layer model with h heads, value width m and key width d_head at
fixed:p, the message is at most h·(m·(4p + 2) + 5p + 2 + ⌈log₂ d_head⌉) bits (the worst case in
lower_bound.protocol). A model right on INDEX at k needs at least k bits, by refute's pigeonhole.
With d_head = 1 and m, p ≥ 1, m·(4p + 2) + 5p + 2 ≤ 13·m·p, so h·m·p ≥ k/13 = (n − 1)/(2C) with
C = 13. `index_min_size` is the smallest m·p (h = 1, d_head = 1) that the message inequality itself
allows. At tiny n both are far below what the family needs: the bound is about growth in n, and
its constants are loose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.common.validate import check_int
from headcount.core.model import OneLayerTable
from headcount.induction.certification import certify_induction
from headcount.induction.lower_bound.refute import refute
from headcount.induction.readout import PackedInductionReadout
from headcount.induction.task import INDEX_TOKENS

MAX_INPUTS = 200_000  # alphabet^n inputs each member is certified on
INDEX_C = 13  # m·(4p + 2) + 5p + 2 ≤ 13·m·p for m, p ≥ 1 (module docstring)


@dataclass(frozen=True)
class Member:
    """One family member's certificate: its smallest certified p (None: none up to 60)."""

    slots: int
    offset: int
    precision_bits: int | None

    @property
    def size(self) -> int | None:
        return None if self.precision_bits is None else self.slots * self.precision_bits


@dataclass(frozen=True)
class Refuted:
    """A smaller member (m·p below the minimal size) and the input it gets wrong at fixed:p:
    certify's rejection, and refute's INDEX input where INDEX embeds (None: not run, or the member
    is right on the INDEX family at p)."""

    slots: int
    offset: int
    p: int
    input: tuple[int, ...]
    position: int
    expected: str
    got: str
    index: dict[str, Any] | None


@dataclass(frozen=True)
class OneLayerMinimal:
    n: int
    alphabet: int
    members: tuple[Member, ...]
    minimal: Member | None
    refuted: tuple[Refuted, ...]
    uncovered: tuple[tuple[int, int, int], ...]  # (slots, offset, p) with no wrong input

    @property
    def k(self) -> int | None:
        """INDEX's k where it embeds (n = 2k + 1, alphabet ≥ 3), else None."""
        return (self.n - 1) // 2 if self.n % 2 == 1 and self.alphabet >= INDEX_TOKENS else None

    @property
    def verdict(self) -> str:
        if self.minimal is None:
            return "no member certified"
        return "incomplete" if self.uncovered else "minimal in the family"

    def to_json(self) -> dict[str, Any]:
        k = self.k
        return {
            "n": self.n,
            "alphabet": self.alphabet,
            "family": "one head, uniform causal attention, packed readout: value width m = "
            "slots 1..n, base alphabet + offset (offset 0, 1); size h·m·p, h = 1",
            "verdict": self.verdict,
            "members": [
                {"slots": m.slots, "offset": m.offset, "precision_bits": m.precision_bits,
                 "size": m.size}
                for m in self.members
            ],  # fmt: skip
            "minimal": None
            if self.minimal is None
            else {"slots": self.minimal.slots, "offset": self.minimal.offset,
                  "precision_bits": self.minimal.precision_bits, "size": self.minimal.size},
            "refuted": [
                {"slots": r.slots, "offset": r.offset, "p": r.p, "input": list(r.input),
                 "position": r.position, "expected": r.expected, "got": r.got, "index": r.index}
                for r in self.refuted
            ],  # fmt: skip
            "uncovered": [list(u) for u in self.uncovered],
            "index_bound": None
            if k is None
            else {"k": k, "C": INDEX_C, "size_at_least": k / INDEX_C,
                  "message_min_size": index_min_size(k)},
        }  # fmt: skip


def packed_one_layer_induction(n: int, alphabet: int, slots: int, offset: int = 0) -> OneLayerTable:
    """One head, d_model = `slots`, table form: ψ_in = 0, uniform causal attention (Q̃ = K̃ = 0),
    Ṽ[j, σ] = (σ + offset)·B^(j mod L)·e_⌊j/L⌋ with B = alphabet + offset and L = ⌈n/slots⌉, and
    the packed readout (induction.readout): position j is a base-B digit of its slot. Fewer slots
    trade width for precision. offset 1 (base alphabet + 1) is the plain construction's coding."""
    n, alphabet = check_int("n", n, 1, 64), check_int("alphabet", alphabet, 1, 1 << 16)
    if alphabet + check_int("offset", offset, 0, 1) < 2:
        raise InputError("a one-token alphabet needs offset 1 (digits in base 2)")
    readout = PackedInductionReadout(n, slots, alphabet + offset, offset)
    L, base = readout.length, alphabet + offset
    embed = np.zeros((n, alphabet, slots))  # [n_ctx alphabet d_model]
    values = np.zeros((1, n, alphabet, slots))  # [heads n_ctx alphabet d_model]
    j = np.arange(n)
    code = np.arange(offset, alphabet + offset, dtype=np.float64)  # σ + offset
    values[0, j, :, j // L] = code[None, :] * (float(base) ** (j % L))[:, None]
    zeros = np.zeros((1, n, alphabet, 1))  # [heads n_ctx alphabet d_head]
    info = {
        "construction": "packed_one_layer_induction",
        "task": "induction",
        "hops": 1,
        "n": n,
        "alphabet": alphabet,
        "slots": slots,
        "offset": offset,
    }
    return OneLayerTable(embed, zeros, zeros, values, readout, "causal", info)


def index_min_size(k: int) -> int:
    """The smallest m·p (h = 1, d_head = 1, m, p ≥ 1) with m·(4p + 2) + 5p + 2 ≥ k: below it
    every one-layer model of that shape errs on INDEX at k (module docstring)."""
    best = math.inf
    for m in range(1, k + 1):
        p = max(1, math.ceil((k - 2 - 2 * m) / (4 * m + 5)))  # smallest p with the bits ≥ k
        best = min(best, m * p)
    return int(best) if best != math.inf else 1


def minimal_one_layer(n: int, alphabet: int) -> OneLayerMinimal:
    """The family's smallest certified h·m·p at (n, alphabet), and a wrong input for every smaller
    member (module docstring)."""
    n = check_int("n", n, 1, 16)
    alphabet = check_int("alphabet", alphabet, 2, 16)
    if alphabet**n > MAX_INPUTS:
        raise InputError(
            f"alphabet^n = {alphabet}^{n} inputs per member; allowed up to {MAX_INPUTS:,}: "
            "use a smaller n or alphabet"
        )
    models, members, rejections = {}, [], {}
    for offset in (0, 1):
        for slots in range(1, n + 1):
            model = packed_one_layer_induction(n, alphabet, slots, offset)
            cert = certify_induction(model, n, alphabet, exhaustive=True, dtypes=False).certificate
            p = cert.precision_bits if cert.certified else None
            members.append(Member(slots, offset, p))
            models[slots, offset] = model
            rejections[slots, offset] = {r.p: r for r in cert.rejected}
    sized = [m for m in members if m.size is not None]
    minimal = min(sized, key=lambda m: (m.size, m.slots, m.offset)) if sized else None
    refuted, uncovered = [], []
    k = (n - 1) // 2 if n % 2 == 1 and alphabet >= INDEX_TOKENS else None
    for m in members if minimal is not None else ():
        for p in range(1, -(-minimal.size // m.slots)):  # every p with slots·p < minimal size
            rej = rejections[m.slots, m.offset].get(p)
            if rej is None:
                uncovered.append((m.slots, m.offset, p))
                continue
            index = None
            if k is not None:
                found = refute(models[m.slots, m.offset], k, p)
                index = found.to_json() if found.found else {"found": False, "k": k}
            refuted.append(
                Refuted(m.slots, m.offset, p, rej.input, rej.position, rej.expected, rej.got, index)
            )
    return OneLayerMinimal(n, alphabet, tuple(members), minimal, tuple(refuted), tuple(uncovered))
