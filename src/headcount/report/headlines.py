"""The report's summary line per claim: the one measured figure a reader looks for first
("certified at n = 4096 with p = 14 bits"), read off the claim's `measured` dict.

A claim that FAILs is summed up by its own detail (what went wrong), and so is a claim without a
headline here or whose measured values lack a field a headline reads (a claim changed its output):
the summary never hides a result behind a stale sentence.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Measured = dict[str, Any]
MAX_FALLBACK = 160  # characters of a detail used as a summary line


def _points(m: Measured, key: str = "points") -> list[dict[str, Any]]:
    return list(m[key])


def _largest(points: list[dict[str, Any]]) -> dict[str, Any]:
    return max(points, key=lambda p: (p["n"], p.get("S", 0)))


def _percent(x: float) -> str:
    """A rate in percent, rounded down at two decimals (99.997% must not read 100.00%)."""
    return f"{math.floor(10_000 * x) / 100:.2f}%"


def _xor(m: Measured) -> str:
    return (
        f"threshold degree of {m['n']}-bit XOR = {m['threshold_degree']['lp']}; "
        f"{m['certified']} (D, H) with D·H ≥ n certified, {m['refused']} with D·H < n refused"
    )


def _symmetric(m: Measured) -> str:
    return (
        f"threshold degree = sign changes on all {m['functions_checked']} symmetric functions of "
        f"n ≤ {m['max_n']}, both bounds certified"
    )


def _frontier(m: Measured) -> str:
    return (
        f"n = {m['n']}: {m['certified']} of {m['models']} models certified exactly on the "
        f"frontier ({', '.join(m['functions'])})"
    )


def _exhaustive(m: Measured) -> str:
    return (
        f"all {m['inputs_checked']:,} inputs of {m['cases']} (S, n) cases certified, "
        f"0 errors, p ≤ {m['max_precision_bits']} bits"
    )


def _large_n(m: Measured) -> str:
    top = _largest(_points(m))
    return (
        f"certified at n = {top['n']:,} (S = {top['S']}) with p = {top['precision_bits']} bits "
        f"on {top['inputs_checked']} sampled inputs, 0 errors"
    )


def _constant_dim(m: Measured) -> str:
    (dim,), (heads,) = m["dim_values"], m["heads_values"]
    lo, hi = m["n_range"]
    return f"d_model = {dim}, heads per layer {heads} at n = {lo}..{hi:,} ({m['cases']} cases)"


def _precision(m: Measured) -> str:
    top = _largest(_points(m))
    return (
        f"p = {m['c']:.2f}·log₂ n + {m['c_prime']:.2f} (c ≤ {m['slope_limit']:g}); "
        f"certified at n = {top['n']:,} with p = {top['precision_bits']} bits"
    )


def _one_layer(m: Measured) -> str:
    top = _largest(_points(m))
    bound = m["size_bound"].removesuffix(" + 0")
    return f"one layer certified up to n = {top['n']} with size {top['size']:,} ≤ {bound}"


def _separation(m: Measured) -> str:
    fit = m["two_layer_size_fit"]
    return (
        f"two-layer size below one-layer from n = {m['n0']} on; two-layer size grows "
        f"{fit['slope_per_log2_n']:g} per doubling of n"
    )


def _protocol(m: Measured) -> str:
    ks = [r["k"] for r in m["one_layer_construction"]]
    return (
        f"Bob reproduces the model on every INDEX pair (k = {min(ks)}..{max(ks)}); "
        f"{m['random_pairs_checked']:,} random-model pairs, {m['random_disagreements']} "
        "unexplained disagreements"
    )


def _refute(m: Measured) -> str:
    found = sum(r["found"] for r in m["random_models"])
    clean = sum(not r["found"] for r in m["construction"])
    return (
        f"wrong inputs found for {found} of {len(m['random_models'])} random one-layer models; "
        f"none for the construction at {clean} values of k"
    )


def _floor(m: Measured) -> str:
    return (
        f"all {len(m['points'])} models respect the error floor; {m['biting']} random models "
        "have a positive floor and an error above it"
    )


def _khop_construction(m: Measured) -> str:
    rows = m["depth"]
    top = max(rows, key=lambda r: r["k"])
    return (
        f"k = 1..{top['k']} certified with depth ⌈log₂ k⌉ + 2 ({top['layers']} layers at "
        f"k = {top['k']}), 0 errors"
    )


def _heads_mechanism(m: Measured) -> str:
    trained = m["trained"]
    same = "the same circuit" if trained["same_circuit"] else "a different circuit"
    return (
        f"construction's roles recovered at n = {m['n']}, S = {m['alphabet']}; the trained model "
        f"({_percent(trained['accuracy'])}) shows {same}"
    )


def _khop_mechanism(m: Measured) -> str:
    built = m["construction"]
    return (
        f"all {built['layers']} layers' built roles recovered (k = {built['hops']}, "
        f"n = {built['n']})"
    )


def _depth_rows(s: Measured) -> str:
    deepest = s["error"][-1][-1]
    shallowest = s["error"][0][-1]
    return (
        f"at k = {s['hops'][-1]}: error {_percent(shallowest)} with L = {s['layers'][0]}, "
        f"{_percent(deepest)} with L = {s['layers'][-1]}"
    )


def _khop_depth(m: Measured) -> str:
    return _depth_rows(m)


def _khop_gpt2(m: Measured) -> str:
    return "GPT-2 blocks: " + _depth_rows(m["gpt2"])


def _khop_families(m: Measured) -> str:
    def depth(family: Measured) -> str:
        last = family["min_depth"][-1]
        return "none" if last is None else f"L = {last}"

    k = next(iter(m.values()))["summary"]["hops"][-1]
    return f"smallest depth at k = {k}: " + ", ".join(
        f"{name} {depth(family)}" for name, family in m.items()
    )


def _induction_depth(m: Measured) -> str:
    return (
        f"two layers ≥ {_percent(m['two_layer_best_min_accuracy'])} at every n; one layer at "
        f"most {_percent(m['one_layer_best_accuracy'])}"
    )


def _minmax_heads(m: Measured) -> str:
    return (
        f"{m['two_heads_solved']} two-head runs solved min and max; "
        f"{m['single_heads_with_counterexample']} of {m['single_heads_checked']} single heads "
        "refuted"
    )


def _xor_phase(m: Measured) -> str:
    return (
        f"n = {m['n']}: {m['below_solved']} of {m['below_cells']} cells below D·H = n solved; "
        f"{m['above_constructions_certified']} of {m['above_cells']} above certified"
    )


def _two_heads(m: Measured) -> str:
    top = max(_points(m), key=lambda p: (p["M"], p["n"]))
    return f"both min and max certified on every input up to M = {top['M']:,}, n = {top['n']:,}"


def _one_head(m: Measured) -> str:
    return (
        f"one head: max wrong on a confirmed input; search d ≤ {max(map(int, m['search']))} "
        f"failed; two heads of d = {m['two_heads_dim']} certify"
    )


def _minimal_dimension(m: Measured) -> str:
    cells = m["cells"]
    found = [c for c in cells if c["verdict"] == "d = 1 found"]
    beyond = sum(c["construction_d"] > 1 for c in found)
    return (
        f"d = 1 certified in {len(found)} of {len(cells)} cells ({beyond} where the construction "
        f"uses d ≥ 2); {len(cells) - len(found)} refuted within the family"
    )


def _minimal_resources(m: Measured) -> str:
    found = [c for c in m["cases"] if c["d"] is not None]
    return "; ".join(f"M = {c['M']}, n = {c['n']}: d = {c['d']}, K = {c['K']}" for c in found)


def _one_layer_minimal(m: Measured) -> str:
    return "; ".join(
        f"n = {c['n']}, S = {c['S']}: h·m·p = {c['size']}" for c in m["cases"] if c["size"]
    )


def _theorem1(m: Measured) -> str:
    rows = m["heads"]
    outcomes = [row[t]["outcome"] for row in rows for t in ("min", "max")]
    return (
        f"{len(rows)} heads chained and re-checked: {outcomes.count('proven')} bounds proven, "
        f"{outcomes.count('wrong input')} wrong inputs, 0 broken"
    )


HEADLINES: dict[str, Callable[[Measured], str]] = {
    "boolean.xor.DH_iff": _xor,
    "boolean.symmetric.threshold_degree": _symmetric,
    "boolean.frontier": _frontier,
    "boolean.minimal_dimension": _minimal_dimension,
    "induction.two_layer.exhaustive": _exhaustive,
    "induction.two_layer.large_n": _large_n,
    "induction.two_layer.constant_dim": _constant_dim,
    "induction.two_layer.precision_log_n": _precision,
    "induction.one_layer.n_log_n": _one_layer,
    "induction.one_layer.minimal": _one_layer_minimal,
    "induction.separation": _separation,
    "induction.index.protocol": _protocol,
    "induction.index.refute": _refute,
    "induction.index.error_floor": _floor,
    "induction.khop.construction": _khop_construction,
    "induction.heads.mechanism": _heads_mechanism,
    "induction.khop.mechanism": _khop_mechanism,
    "learning.khop.depth": _khop_depth,
    "learning.khop.gpt2": _khop_gpt2,
    "learning.khop.families": _khop_families,
    "learning.induction.depth": _induction_depth,
    "learning.minmax.heads": _minmax_heads,
    "learning.xor.phase": _xor_phase,
    "minmax.two_heads.certified": _two_heads,
    "minmax.one_head.obstructed": _one_head,
    "minmax.theorem1.chain": _theorem1,
    "minmax.minimal_resources": _minimal_resources,
}


def headline(claim_id: str, status: str, measured: Measured, detail: str) -> str:
    """The claim's summary line: its headline when it passed and one is known, else its detail
    (cut at a clause boundary to MAX_FALLBACK characters)."""
    make = HEADLINES.get(claim_id)
    if status == "PASS" and make is not None:
        try:
            return make(measured)
        except (KeyError, IndexError, TypeError, ValueError):
            pass  # the measured values changed shape: say what the claim said instead
    return _cut(detail)


def _cut(text: str) -> str:
    if len(text) <= MAX_FALLBACK:
        return text
    head = text[:MAX_FALLBACK]
    for mark in ("; ", " — ", ", "):
        if mark in head:
            return head[: head.rindex(mark)] + " …"
    return head.rstrip() + " …"
