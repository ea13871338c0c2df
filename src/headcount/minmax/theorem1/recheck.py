"""An independent re-check of a Theorem-1 chain from its JSON and the model alone: plain Python
fractions and its own elimination, none of chain.py's, duals.py's or triangular.py's code (they
use python-flint). What `minmax.theorem1.chain` asserts, and what a reader can run on the saved
JSON of `headcount minmax lower-bound`.

    recheck_chain(model, chain_json) -> list[str]     (empty: every object re-verified)

For each task chain marked "proven" it re-derives, from the JSON's numbers: the run (increasing
tokens, α monotone the right way, N of them); every dual (w = (θ_x − θ_y)/⟨θ_x − θ_y, v_x⟩ with a
positive denominator, ⟨w, v_x⟩ = 1, |⟨w, v_{s_j}⟩| < 1/(n−1) for j < i); every step of the
Figure-1 process (u ∉ span(B) where the rank grows; B t = u, the largest |t_k| replaced and above
1/(rε) where it does not; det C as the product of the pivots); the determinants det(AᵀA) and
det(BᵀB) recomputed; Facts 1–2; det(BᵀB) = det(AᵀA)·det(C)²; det(C)² above the volume bound;
and the corollary d > N/2 or (4^p·ℓ²)^d > 4^N. For a chain marked "wrong input" it re-decides the
input exactly.
"""

from __future__ import annotations

from bisect import bisect_right
from fractions import Fraction
from typing import Any

import numpy as np

from headcount.minmax.exact_verify import decide_exact
from headcount.minmax.lower_bound import lemma_n
from headcount.minmax.model import MinMaxModel
from headcount.minmax.task import min_max


def _rat(text: str) -> Fraction:
    return Fraction(text)


def _dot(a, b) -> Fraction:
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


def _rank(columns: list[list[Fraction]]) -> int:
    """Rank by Gaussian elimination over the rationals."""
    rows = [list(r) for r in zip(*columns)] if columns else []
    rank, ncols = 0, len(columns)
    for c in range(ncols):
        pivot = next((r for r in range(rank, len(rows)) if rows[r][c] != 0), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        for r in range(len(rows)):
            if r != rank and rows[r][c] != 0:
                f = rows[r][c] / rows[rank][c]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[rank])]
        rank += 1
    return rank


def _det(m: list[list[Fraction]]) -> Fraction:
    """Determinant by Gaussian elimination over the rationals."""
    m = [list(r) for r in m]
    det = Fraction(1)
    for c in range(len(m)):
        pivot = next((r for r in range(c, len(m)) if m[r][c] != 0), None)
        if pivot is None:
            return Fraction(0)
        if pivot != c:
            m[c], m[pivot] = m[pivot], m[c]
            det = -det
        det *= m[c][c]
        for r in range(c + 1, len(m)):
            f = m[r][c] / m[c][c]
            m[r] = [a - f * b for a, b in zip(m[r], m[c])]
    return det


def _gram(columns: list[list[Fraction]]) -> Fraction:
    return _det([[_dot(a, b) for b in columns] for a in columns])


def _values(model: MinMaxModel) -> tuple[list, list, list, np.ndarray]:
    head = model.layer.heads[0]
    v = [[Fraction(float(x)) for x in row] for row in head.values]
    tmin = [[Fraction(float(x)) for x in row] for row in model.classifier_min.theta]
    tmax = [[Fraction(float(x)) for x in row] for row in model.classifier_max.theta]
    return v, tmin, tmax, head.scores


def _run_problems(task: str, run: list[int], scores: np.ndarray, N: int) -> list[str]:
    s = [float(scores[t - 1]) for t in run]
    ok_order = all(a < b for a, b in zip(run, run[1:]))
    ok_alpha = all((a <= b) if task == "min" else (a >= b) for a, b in zip(s, s[1:]))
    out = []
    if len(run) != N or not ok_order or not ok_alpha:
        out.append(f"{task}: the run {run} is not {N} increasing tokens with α monotone for {task}")
    return out


def _dual_problems(task, order, duals, v, theta, n) -> list[str]:
    eps = Fraction(1, n - 1)
    if [d["position"] for d in duals] != list(range(2, len(order) + 1)):
        return [f"{task}: the duals are not at positions 2..{len(order)}"]
    out = []
    for d in duals:
        i, x, y = d["position"], d["token"], d["partner"]
        w = [_rat(c) for c in d["w"]]
        diff = [a - b for a, b in zip(theta[x - 1], theta[y - 1])]
        den = _dot(diff, v[x - 1])
        if (x, y) != (order[i - 1], order[i - 2]) or den <= 0:
            out.append(f"{task}: dual {i} has the wrong tokens or a non-positive denominator")
        elif w != [c / den for c in diff] or _dot(w, v[x - 1]) != 1:
            out.append(f"{task}: dual {i} is not (θ_x − θ_y)/⟨θ_x − θ_y, v_x⟩")
        elif any(abs(_dot(w, v[order[j] - 1])) >= eps for j in range(i - 1)):
            out.append(f"{task}: dual {i} has |⟨w, v_z⟩| ≥ 1/(n−1) for an earlier z")
    return out


def _replay(order, steps, v, p, eps) -> tuple[list[str], list, list, Fraction, dict[int, int]]:
    """Replay the Figure-1 process from the JSON's steps; problems, A, B, det C, N_r."""
    u = [[c * 2**p for c in v[t - 1]] for t in order]
    A, B, det_C, counts, out = [], [], Fraction(1), {}, []
    for step, ui in zip(steps, u):
        kind, r = step["kind"], len(B)
        if kind in ("first", "grows"):
            if _rank(B + [ui]) != r + 1:
                out.append(f"step {step['position']}: u is in span(B), yet the rank grew")
            A, B = A + [ui], B + [ui]
        else:
            t = [_rat(c) for c in step["t"]]
            k = step["column"] - 1
            combo = [
                sum((tk * b[row] for tk, b in zip(t, B)), Fraction(0)) for row in range(len(ui))
            ]
            bound = 1 / (r * eps)
            if combo != ui or abs(t[k]) != max(map(abs, t)) or not abs(t[k]) > bound:
                out.append(
                    f"step {step['position']}: B t ≠ u, or |t_k| is not the largest above 1/(rε)"
                )
            B = B[:k] + [ui] + B[k + 1 :]
            det_C *= t[k]
            counts[r] = counts.get(r, 0) + 1
        if _rat(step["det_C"]) != det_C or step["rank"] != len(B):
            out.append(f"step {step['position']}: det C or the rank differs from the replay")
    return out, A, B, det_C, counts


def _process_problems(task, chain, v, p, n, d, N, ell2) -> list[str]:
    lemma6 = chain["lemma6"]
    eps = Fraction(1, n - 1)
    if len(lemma6["steps"]) != len(chain["order"]) or _rat(lemma6["eps"]) != eps:
        return [f"{task}: the process has {len(lemma6['steps'])} steps or ε ≠ 1/(n−1)"]
    out, A, B, det_C, counts = _replay(chain["order"], lemma6["steps"], v, p, eps)
    R = len(A)
    det_AtA, det_BtB = _gram(A), _gram(B)
    L2 = max(_dot(ui, ui) for ui in [[c * 2**p for c in v[t - 1]] for t in chain["order"]])
    volume = Fraction(1)
    for r, k in counts.items():
        volume *= (1 / (r * eps)) ** (2 * k)
    recorded = (lemma6["det_AtA"], lemma6["det_BtB"], lemma6["det_C"], lemma6["volume_bound"])
    if tuple(map(_rat, recorded)) != (det_AtA, det_BtB, det_C, volume) or lemma6["R"] != R:
        out.append(f"{task}: a determinant, the volume bound or R differs from the recomputation")
    if det_AtA.denominator != 1 or det_AtA < 1:
        out.append(f"{task}: Fact 2 fails (det AᵀA = {det_AtA})")
    if det_BtB > L2**R or det_BtB != det_AtA * det_C**2:
        out.append(f"{task}: Fact 1 or det(BᵀB) = det(AᵀA)·det(C)² fails")
    if not (det_C**2 > volume if counts else det_C**2 >= volume) or R > d:
        out.append(f"{task}: det(C)² is not above the volume bound, or R > d")
    if not (2 * d > N or (4**p * ell2) ** d > Fraction(4) ** N):
        out.append(f"{task}: neither d > N/2 nor d·(p + log₂ ℓ) > N")
    return out


def _longest(scores: np.ndarray, task: str) -> int:
    """The length of the longest run of α obstructing `task` (non-decreasing for min)."""
    tails: list[float] = []
    for s in scores.tolist():
        key = s if task == "min" else -s
        k = bisect_right(tails, key)
        tails[k : k + 1] = [key]
    return len(tails)


def _wrong_problems(task, chain, model, n) -> list[str]:
    wrong = chain["wrong_input"]
    x = np.array([wrong["input"]], dtype=np.int64)
    clf = model.classifier_min if task == "min" else model.classifier_max
    answer = int(min_max(x)[0 if task == "min" else 1][0])
    if len(wrong["input"]) != n or int(decide_exact(model.layer.heads[0], clf, x)[0]) == answer:
        return [f"{task}: the input {wrong['input']} is not decided wrongly"]
    return []


def recheck_chain(model: MinMaxModel, chain: dict[str, Any]) -> list[str]:
    """Every object of a Theorem1Chain's JSON re-verified from the model (module docstring); the
    problems found (empty: all hold)."""
    v, tmin, tmax, scores = _values(model)
    M, n, d, p = chain["M"], chain["n"], chain["d"], chain["p"]
    N, ell2 = lemma_n(M, n), _rat(chain["ell2"])
    out = [] if N == chain["N"] else [f"N = {chain['N']}, not {N}"]
    if ell2 != max(_dot(row, row) for row in v) or d != len(v[0]):
        out.append("ℓ² or d differs from the model's values")
    for c in chain["chains"]:
        task = c["task"]
        if c["outcome"] == "broken":
            out.append(f"{task}: the chain is broken ({c['broken']})")
        elif c["outcome"] == "too short" and not _longest(scores, task) < N:
            out.append(f"{task}: marked too short, yet its longest run has ≥ N = {N} tokens")
        elif c["outcome"] == "vacuous" and N >= 2:
            out.append(f"{task}: marked vacuous at N = {N}")
        elif c["outcome"] == "wrong input":
            out += _wrong_problems(task, c, model, n)
        elif c["outcome"] == "proven":
            theta = tmin if task == "min" else tmax
            order = list(reversed(c["run"])) if task == "min" else list(c["run"])
            out += _run_problems(task, c["run"], scores, N)
            if c["order"] != order:
                out.append(f"{task}: the order is not the run in Lemma-6 order")
            out += _dual_problems(task, order, c["duals"], v, theta, n)
            out += _process_problems(task, c, v, p, n, d, N, ell2)
    return out
