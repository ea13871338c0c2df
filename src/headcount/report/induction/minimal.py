"""induction.one_layer.minimal: at tiny n, the smallest h·m·p at which a one-layer model of a
stated family solves induction heads (headcount.induction.lower_bound.minimal), beside the INDEX
bound (n − 1)/(2C).

Measure: minimal_one_layer per (n, S). Check, independently of the search's bookkeeping: the
minimal member, rebuilt, is right on every input of Sⁿ when run at fixed:p by predict. Every
smaller member (m·p below the minimum, both offsets) has an input that predict at fixed:p, run
here, answers wrongly. The minimum is not below the INDEX bound: k/13, and the smallest m·p that
the message-length inequality allows. Describe: the table.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from headcount.core.certify.evaluate import predict
from headcount.core.numbers import fixed
from headcount.induction.lower_bound.minimal import (
    INDEX_C,
    OneLayerMinimal,
    index_min_size,
    minimal_one_layer,
    packed_one_layer_induction,
)
from headcount.induction.task import all_sequences, induction_targets
from headcount.report.claims import INDUCTION_PAPER, ClaimResult, Context, claim, status
from headcount.report.figures import figure


def _problems(r: OneLayerMinimal) -> list[str]:
    where = f"n={r.n} S={r.alphabet}"
    best = r.minimal
    if best is None:
        return [f"{where}: no member certified"]
    out = []
    tokens = all_sequences(r.n, r.alphabet)
    model = packed_one_layer_induction(r.n, r.alphabet, best.slots, best.offset)
    if not np.array_equal(
        predict(model, tokens, fixed(best.precision_bits)), induction_targets(tokens)
    ):
        out.append(f"{where}: the minimal member errs at fixed:{best.precision_bits}")
    wanted = {
        (m.slots, m.offset, p)
        for m in r.members
        for p in range(1, best.size + 1)
        if m.slots * p < best.size
    }
    have = {(x.slots, x.offset, x.p) for x in r.refuted}
    if wanted - have:
        out.append(f"{where}: {len(wanted - have)} smaller members have no wrong input")
    for x in r.refuted:
        member = packed_one_layer_induction(r.n, r.alphabet, x.slots, x.offset)
        seq = np.array([x.input])
        got = predict(member, seq, fixed(x.p))[0, x.position - 1]
        if got == induction_targets(seq)[0, x.position - 1]:
            out.append(f"{where}: m={x.slots} offset={x.offset} p={x.p}: its input is answered")
            break
    k = r.k
    if k is not None and (best.size < k / INDEX_C or best.size < index_min_size(k)):
        out.append(f"{where}: size {best.size} is below the INDEX bound at k = {k}")
    return out


def _row(r: OneLayerMinimal) -> dict[str, Any]:
    best, k = r.minimal, r.k
    plain = next((m for m in r.members if m.slots == r.n and m.offset == 1), None)
    return {
        "n": r.n,
        "S": r.alphabet,
        "verdict": r.verdict,
        "size": None if best is None else best.size,
        "m": None if best is None else best.slots,
        "p": None if best is None else best.precision_bits,
        "offset": None if best is None else best.offset,
        "plain_size": None if plain is None else plain.size,
        "refuted": len(r.refuted),
        "index_refuted": sum(bool(x.index and x.index.get("found")) for x in r.refuted),
        "index_k": k,
        "index_bound": None if k is None else k / INDEX_C,
        "message_min_size": None if k is None else index_min_size(k),
    }


def _describe(rows: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"n={r['n']} S={r['S']}: h·m·p = {r['size']} (m = {r['m']}, p = {r['p']}; the plain "
        f"layout {r['plain_size']}), {r['refuted']} smaller members refuted"
        + ("" if r["index_k"] is None else f", INDEX bound {r['index_bound']:.2f}")
        for r in rows
    )


@claim(
    "induction.one_layer.minimal",
    paper=INDUCTION_PAPER,
    source="§3 (one layer needs h·m·p = Ω(n)) at the sizes where exhaustive search is possible",
    statement="Exact minimal one-layer models at tiny n: the smallest h·m·p at which a one-layer "
    "model of the stated family (one head, uniform causal attention, the packed readout: value "
    "width m = 1..n, base S or S + 1 digits) solves induction heads, certified on all Sⁿ inputs; "
    "every smaller member has an input it is proven to answer wrongly; beside the INDEX bound "
    "(n − 1)/(2C), C = 13, which no minimum may undercut.",
    check="PASS only if each minimal member is right on every input at its p (predict at fixed:p, "
    "run here), every smaller (m, offset, p) has an input predict at fixed:p answers wrongly, and "
    "no minimum lies below k/13 or the smallest size the INDEX message inequality allows.",
    quick={"cases": [(5, 3), (7, 3), (5, 2), (7, 2), (9, 2)]},
    full={"cases": [(5, 3), (7, 3), (9, 3), (5, 2), (7, 2), (9, 2), (11, 2), (13, 2), (6, 4)]},
)
def minimal_one_layer_claim(ctx: Context, cases) -> ClaimResult:
    results = [minimal_one_layer(n, S) for n, S in cases]
    problems = [p for r in results for p in _problems(r)]
    rows = [_row(r) for r in results]
    detail = "; ".join(problems) or _describe(rows)
    return ClaimResult({"cases": rows}, status(not problems), detail, rows)


@figure("induction_one_layer_minimal", claim="induction.one_layer.minimal")
def draw_minimal(fig: plt.Figure, result: ClaimResult) -> str:
    rows = [r for r in result.series or [] if r["size"] is not None]
    ax = fig.add_subplot(1, 1, 1)
    for S in sorted({r["S"] for r in rows}):
        mine = sorted((r for r in rows if r["S"] == S), key=lambda r: r["n"])
        ns = [r["n"] for r in mine]
        ax.plot(ns, [r["size"] for r in mine], "o-", label=f"minimal h·m·p, S = {S}")
        ax.plot(
            ns, [r["plain_size"] for r in mine], "s:", alpha=0.6, label=f"plain layout, S = {S}"
        )
        ax.plot(ns, [n * np.log2(S) for n in ns], "--", alpha=0.5, label=f"n·log₂ S, S = {S}")
    bound = sorted({(r["n"], r["index_bound"]) for r in rows if r["index_bound"] is not None})
    if bound:
        ax.plot(*zip(*bound), "k_", markersize=14, label="INDEX bound (n − 1)/26")
    ax.set_xticks(sorted({r["n"] for r in rows}))
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("h·m·p")
    ax.legend(fontsize=7)
    ax.set_title("One layer: the smallest certified h·m·p in the family vs the INDEX bound")
    return (
        "o: the smallest h·m·p of the family (one head, uniform attention, packed readout), "
        "certified on all Sⁿ inputs, every smaller member refuted by a proven wrong input; "
        "squares: the plain layout (m = n, base S + 1); dashed: n·log₂ S, the bits of the "
        "prefix; black: the INDEX bound k/13 with k = (n − 1)/2 (odd n, S ≥ 3)."
    )
