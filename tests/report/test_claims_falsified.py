"""Every claim can fail: fed a falsified measurement, it returns FAIL — and fed the same measurement
unfalsified, PASS (so the FAIL comes from the falsification, not from a broken fake).

Measurements are faked where the claim reads them: certificates through the Context cache (the key
the claim uses), learning summaries through the cache after running the real `summarize_*` on a few
fake database rows, and heavy sub-computations (search, refuter, protocol) by monkeypatching the
name the claim calls. No claim here trains, certifies a large model or searches; the whole file runs
in seconds.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from headcount.core.certify.certificate import Certificate, Counterexample
from headcount.induction.certification import InductionCertificate
from headcount.induction.lower_bound.results import ExhaustiveSearch, Refutation, Searched
from headcount.learn import experiments
from headcount.report.boolean import claims as boolean_claims
from headcount.report.claims import FAIL, PASS, ClaimResult, Context
from headcount.report.induction import constructions as induction_claims
from headcount.report.induction import lower_bound as index_claims
from headcount.report.reproduce import load_claims, run_claim


def run(claim_id: str, ctx: Context | None = None, **params: Any) -> ClaimResult:
    """Run one registered claim with explicit (small) parameters, exceptions turned into FAIL as in
    reproduce."""
    registered = load_claims()[claim_id]
    return run_claim(
        SimpleNamespace(function=registered.function, params_for=lambda scale: params),
        ctx or Context(),
    )


# ----------------------------------------------------------------------------------------------
# induction
def fake_cert(
    construction: str, n: int, S: int, samples: int | None, **changes: Any
) -> InductionCertificate:
    """A certificate as certify_induction returns it, for a correct model: exhaustive when samples
    is None. `changes` set fields of the InductionCertificate or of its core Certificate, by
    name."""
    exhaustive = samples is None
    one = construction == "one_layer"
    p = math.ceil(math.log2(n)) + (2 if one else 4)
    heads, dim = ((1,), n + 1) if one else ((2, 1), 19)
    families = (
        {"exhaustive": S**n}
        if exhaustive
        else {
            "uniform": samples,
            "no_adjacent_repeats": samples,
            "latest_match_far_back": 2,
            "all_equal": 2,
            "bottom_heavy": 2,
            "repeated_block": 2,
            **({"index": 2} if S >= 3 else {}),
        }
    )
    run = {
        "hops": 1,
        "layers": len(heads),
        "heads_per_layer": heads,
        "d_model": dim,
        "n": n,
        "alphabet": S,
        "construction": f"{construction}_induction",
        "exhaustive": exhaustive,
        "seed": None if exhaustive else 0,
        "size": sum(heads) * dim * p,
    }
    checked = {
        "families": families,
        "inputs_checked": sum(families.values()),
        "positions_checked": n * sum(families.values()),
        "precision_bits": p,
        "errors_at_precision_bits": 0,
        "proven_at_precision_bits": True,
        "uncertified_positions": 0,
        "dtypes_exact": ("float64",),
    }
    mine = {key: value for key, value in changes.items() if key in run}
    checked |= {key: value for key, value in changes.items() if key not in run}
    return InductionCertificate(**(run | mine), certificate=Certificate(**checked))


def cert_ctx(certs: list[tuple[str, int, int, int | None, dict[str, Any]]]) -> Context:
    """A Context whose cache holds the given (construction, n, S, samples, changes) certificates."""
    ctx = Context()
    for construction, n, S, samples, changes in certs:
        ctx.cache[("induction", construction, n, S, samples)] = fake_cert(
            construction, n, S, samples, **changes
        )
    return ctx


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({}, None),
        (
            {
                "errors": 3,
                "first_counterexample": Counterexample("exhaustive", (0, 1), 2, "⊥", "0"),
            },
            "3 float64 errors",
        ),
        ({"inputs_checked": 15}, "not checked on all of Σ^n"),  # says exhaustive, but 15 ≠ 2^4
        ({"exhaustive": False}, "not checked on all of Σ^n"),  # scope "sampled"
        ({"proven_at_precision_bits": False, "uncertified_positions": 2}, "not certified"),
    ],
)
def test_two_layer_exhaustive(changes, reason):
    r = run(
        "induction.two_layer.exhaustive",
        cert_ctx([("two_layer", 4, 2, None, changes)]),
        cases=[(2, 4)],
    )
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({}, None),
        (
            {
                "families": {
                    "uniform": 8,
                    "no_adjacent_repeats": 8,
                    "all_equal": 2,
                    "bottom_heavy": 2,
                    "repeated_block": 2,
                    "index": 2,
                }
            },
            "no inputs from latest_match_far_back",
        ),
        ({"proven_at_precision_bits": False, "uncertified_positions": 7}, "not certified"),
        ({"precision_bits": None}, "no precision"),
    ],
)
def test_two_layer_large_n(changes, reason):
    r = run(
        "induction.two_layer.large_n",
        cert_ctx([("two_layer", 1024, 16, 8, changes)]),
        cases=[(1024, 16, 8)],
    )
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail
    if reason is None:
        assert (
            "certified on the inputs checked (scope: sampled)" in r.detail
            and "all of Σ^n" not in r.detail
        )


@pytest.mark.parametrize("falsify", [False, True])
def test_two_layer_constant_dim(monkeypatch, falsify):
    def fake_two_layer(
        n, S
    ):  # the construction's shape, with a dimension that grows with n when falsified
        return SimpleNamespace(d_model=19 + (falsify and n > 64), heads_per_layer=[2, 1])

    monkeypatch.setattr(induction_claims, "two_layer_induction", fake_two_layer)
    r = run("induction.two_layer.constant_dim", lengths=[8, 128], alphabets=[2, 3])
    assert r.status == (FAIL if falsify else PASS), r.detail
    assert r.measured["dim_values"] == ([19, 20] if falsify else [19])


@pytest.mark.parametrize(
    "bits, status", [((10, 13, 16), PASS), ((10, 15, 20), FAIL)]
)  # 1.5 vs 2.5 bits/doubling
def test_two_layer_precision_log_n(bits, status):
    cases = [(64, 64, 8), (256, 64, 8), (1024, 64, 4)]
    ctx = cert_ctx(
        [("two_layer", n, S, s, {"precision_bits": p}) for (n, S, s), p in zip(cases, bits)]
    )
    r = run("induction.two_layer.precision_log_n", ctx, cases=cases)
    assert r.status == status, r.detail
    assert (status == FAIL) == ("exceeds" in r.detail)


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({}, None),
        ({"precision_bits": 14, "size": 65 * 14}, "size 910 > 2·n·log₂ n"),  # bound at n = 64: 768
        ({"heads_per_layer": (2,), "size": 2 * 65 * 8}, "not one head"),
        ({"errors": 1}, "1 float64 errors"),
    ],
)
def test_one_layer_n_log_n(changes, reason):
    cases = [(10, 2, None), (64, 3, 32)]
    ctx = cert_ctx([("one_layer", 10, 2, None, {}), ("one_layer", 64, 3, 32, changes)])
    r = run("induction.one_layer.n_log_n", ctx, cases=cases)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail
    if reason is None:
        assert "n=10: 1·11·6 = 66, certified on all of Σ^n (scope: exhaustive)" in r.detail
        assert "n=64: 1·65·8 = 520, certified on the inputs checked (scope: sampled)" in r.detail


@pytest.mark.parametrize("two_layer_p_at_128, status", [(11, PASS), (25, FAIL)])
def test_separation(two_layer_p_at_128, status):
    one_layer, two_layer = [(64, 3, 32), (128, 3, 32)], [(256, 64, 8), (1024, 64, 4)]
    p128 = {
        "precision_bits": two_layer_p_at_128,
        "size": 57 * two_layer_p_at_128,
    }  # 57·25 > one-layer 129·9
    ctx = cert_ctx(
        [("one_layer", n, S, s, {}) for n, S, s in one_layer]
        + [("two_layer", 64, 3, 32, {}), ("two_layer", 128, 3, 32, p128)]
        + [("two_layer", n, S, s, {}) for n, S, s in two_layer]
    )
    r = run("induction.separation", ctx, one_layer=one_layer, two_layer=two_layer)
    assert r.status == status, r.detail
    assert r.measured["n0"] == (128 if status == PASS else None)


# ----------------------------------------------------------------------------------------------
# INDEX
def protocol_report(k: int, **changes: Any) -> SimpleNamespace:
    """check_protocol's answer for a correct model at INDEX size k (pairs = k·2^k), with changes."""
    report = {
        "message_bits": 3 * k,
        "seed_message_bits": 3 * k,
        "disagreements": 0,
        "disagreements_explained": 0,
        "model_correct": k * 2**k,
        "pairs_checked": k * 2**k,
        "agreements": k * 2**k,
    } | changes
    return SimpleNamespace(**report)


@pytest.mark.parametrize(
    "construction, random_model, reason",
    [
        ({}, {}, None),
        ({"message_bits": 3}, {}, "sent 3 < k bits"),
        ({"disagreements": 2}, {}, "2 disagreements on the one-layer construction"),
        ({"model_correct": 60}, {}, "errs on INDEX"),
        ({}, {"disagreements": 5, "disagreements_explained": 4}, "1 unexplained disagreements"),
    ],
)
def test_index_protocol(monkeypatch, construction, random_model, reason):
    monkeypatch.setattr(index_claims, "index_precision", lambda model, k: 6)
    monkeypatch.setattr(
        index_claims, "certify_induction", lambda *a, **kw: SimpleNamespace(size=57 * 6)
    )
    monkeypatch.setattr(index_claims, "random_table", lambda rng, n, S, h, m: "random model")
    monkeypatch.setattr(
        index_claims,
        "check_protocol",
        lambda model, k, p: protocol_report(
            k, **(random_model if model == "random model" else construction)
        ),
    )
    r = run(
        "induction.index.protocol", ks=[4], random=[(0, 1, 2, 8)], random_k=4, two_layer_samples=2
    )
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail


@pytest.mark.parametrize(
    "found, message_bits, model_right, construction, reason",
    [
        (True, 36, False, {}, None),
        (
            True,
            36,
            True,
            {},
            "answered correctly — not a counterexample",
        ),  # the refuter's input is not wrong
        (False, 36, False, {}, "no counterexample found"),
        (
            True,
            40,
            False,
            {},
            "no random model has a message shorter than k bits",
        ),  # the theorem's case untested
        (
            True,
            36,
            False,
            {"found": True, "tokens": (0, 2)},
            "a 'counterexample' for the correct construction",
        ),
        (True, 36, False, {"inputs": 7}, "covered 7 inputs, not all k·2^k = 8"),
    ],
)
def test_index_refute(monkeypatch, found, message_bits, model_right, construction, reason):
    k = 40
    index_input = (0, 1) * k + (2,)  # n = 2k + 1 tokens (the last is ?); the last one's answer is ⊥

    def fake_refute(model, k_, p, seed=0):
        if model == "random model":
            searched = Searched(seed, 1 << 20, message_bits, k_)
            tokens = index_input if found else None
            return Refutation(
                found, "collision", k_, 2 * k_ + 1, p, message_bits, "table", searched, tokens
            )
        # the construction at k_ = 2: nothing found in all 2·2^2 inputs
        fields = {"found": False, "tokens": None, "inputs": k_ * 2**k_} | construction
        searched = Searched(
            seed, 1 << 20, 3 * k_, k_, exhaustive=ExhaustiveSearch(fields["inputs"], k_ * 2**k_)
        )
        method = "exhaustive" if fields["found"] else None
        return Refutation(
            fields["found"], method, k_, 2 * k_ + 1, p, 3 * k_, "table", searched, fields["tokens"]
        )

    def fake_predict(
        model, tokens, precision
    ):  # the model's answer at the last position: right or wrong
        target = int(index_claims.task.induction_targets(tokens)[-1])
        return np.array([[target if model_right else target + 1]])

    monkeypatch.setattr(index_claims, "random_table", lambda rng, n, S, h, m: "random model")
    monkeypatch.setattr(index_claims, "refute", fake_refute)
    monkeypatch.setattr(index_claims, "predict", fake_predict)
    monkeypatch.setattr(index_claims, "index_precision", lambda model, k_: 5)
    r = run("induction.index.refute", random=[(0, 1, 2, 4, k)], construction_ks=[2])
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail


# ---------------------------------------------------------------------------------------------- min
# / max
def minmax_cert(M: int, n: int, code: str, **changes: Any) -> SimpleNamespace:
    """certify_minmax's answer (the fields the claims read) for the correct two-head construction,
    with changes."""
    d = math.ceil(8 * math.log(M)) if code == "sign" else math.ceil(math.log2(M))
    cert = {
        "M": M,
        "n": n,
        "code": code,
        "dim": 2 * d,
        "method": "exact-histogram",
        "errors_min": 0,
        "errors_max": 0,
        "margin_min": 1.0,
        "margin_max": 1.0,
        "inputs_covered": math.comb(n + M - 1, n),
    }
    return SimpleNamespace(**(cert | changes))


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({}, None),
        ({"errors_max": None}, "errors 0/None"),
        ({"dim": 60}, "value dimension 60, not 68"),
        ({"inputs_covered": 1000}, "input count is not C(n+M−1, n)"),
    ],
)
def test_minmax_two_heads_certified(changes, reason):
    ctx = Context()
    ctx.cache[("minmax", 64, 16, 2, "sign")] = minmax_cert(64, 16, "sign", **changes)
    r = run("minmax.two_heads.certified", ctx, cases=[(64, 16, "sign")])
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail


@pytest.mark.parametrize(
    "smallest_d, covered, confirmed, reason",
    [
        (None, [1, 2], True, None),
        (2, [1, 2], True, "found a single head doing both at d = 2"),
        (None, [1], True, "covered d = [1], not 1..2"),
        (None, [1, 2], False, "lacks a confirmed counterexample"),
    ],
)
def test_minmax_one_head_obstructed(monkeypatch, smallest_d, covered, confirmed, reason):
    from headcount.report.minmax import claims as minmax_claims

    results = {
        d: SimpleNamespace(best_margins=(-1.0, -1.0), all_failed_confirmed=confirmed)
        for d in covered
    }
    monkeypatch.setattr(
        minmax_claims,
        "smallest_dimension",
        lambda M, n, d_max, **kw: SimpleNamespace(
            M=M, n=n, d_max=d_max, smallest_d=smallest_d, results=results
        ),
    )
    ctx = Context()
    ctx.cache[("minmax", 8, 4, 2, "compact")] = minmax_cert(8, 4, "compact")
    r = run("minmax.one_head.obstructed", ctx, M=8, n=4, d_max=2, restarts=1, steps=1)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail


# ----------------------------------------------------------------------------------------------
# Boolean
def test_xor_dh_iff_true_measurement_passes():
    r = run("boolean.xor.DH_iff", n=4, max_DH=5)
    assert r.status == PASS, r.detail
    assert r.measured["threshold_degree"] == {"sign_changes": 4, "lp": 4}
    assert (r.measured["certified"], r.measured["refused"]) == (
        20,
        5,
    )  # D·H < 4: (1, 1..3), (2..3, 1)


def test_xor_dh_iff_fails_when_low_dh_is_not_refused(monkeypatch):
    real = boolean_claims.construct_and_certify
    monkeypatch.setattr(
        boolean_claims,
        "construct_and_certify",  # check_feasible broken: never refuses
        lambda f, n, D, H, **kw: {"certified": True} if D * H < n else real(f, n, D, H, **kw),
    )
    r = run("boolean.xor.DH_iff", n=4, max_DH=5)
    assert r.status == FAIL and "D=1 H=1: D·H < n was not refused" in r.detail


def test_xor_dh_iff_fails_on_a_wrong_threshold_degree(monkeypatch):
    monkeypatch.setattr(
        boolean_claims, "xor_threshold_degree", lambda n: {"sign_changes": n, "lp": n - 1}
    )
    r = run("boolean.xor.DH_iff", n=4, max_DH=5)
    assert r.status == FAIL and "the LP gives T = 3 for 4-bit XOR" in r.detail


def test_xor_dh_iff_fails_when_a_too_small_model_is_right(monkeypatch):
    monkeypatch.setattr(boolean_claims, "find_wrong_input", lambda layer, readout, F: None)
    r = run("boolean.xor.DH_iff", n=4, max_DH=5)
    assert r.status == FAIL and "right on all inputs, contradicting Theorem 2" in r.detail


def test_xor_dh_iff_fails_when_the_wrong_input_is_answered_right(monkeypatch):
    from headcount.boolean.lower_bound import WrongInput

    # a fake: the model really answers XOR(0000) = +1
    right = WrongInput(t=0, x="0000", model_sign=-1, target=1)
    monkeypatch.setattr(boolean_claims, "find_wrong_input", lambda layer, readout, F: right)
    r = run("boolean.xor.DH_iff", n=4, max_DH=5)
    assert r.status == FAIL and "the 'wrong' input 0000 is answered correctly" in r.detail


def test_xor_dh_iff_fails_on_a_bad_theorem2_degree(monkeypatch):
    from headcount.boolean.lower_bound import Theorem2Check

    monkeypatch.setattr(
        boolean_claims,
        "theorem2_check",
        lambda layer, readout, n: Theorem2Check(
            degree_R=n - 1, bound=n, degree_ok=True, signs_match=True
        ),
    )
    r = run("boolean.xor.DH_iff", n=4, max_DH=5)
    assert r.status == FAIL and "Theorem-2 polynomial of degree 3" in r.detail


@pytest.mark.parametrize(
    "shift, dual, reason",
    [
        (0, True, None),
        (1, True, "≠ sign changes"),
        (0, False, "bounds not certified"),
    ],
)
def test_symmetric_threshold_degree(monkeypatch, shift, dual, reason):
    import dataclasses

    from headcount.boolean import threshold

    real = threshold.threshold_degree_lp

    def falsified(values, n, **kw):
        out = real(values, n, **kw)
        return dataclasses.replace(
            out,
            # off by one on the parity-like functions
            threshold_degree=out.threshold_degree + shift * (out.threshold_degree == n),
            lower_bound_certified=out.lower_bound_certified and dual,
        )

    monkeypatch.setattr(threshold, "threshold_degree_lp", falsified)
    r = run("boolean.symmetric.threshold_degree", max_n=2)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail
    assert r.measured["functions_checked"] == 4 + 8


# ----------------------------------------------------------------------------------------------
# learning
def summary_ctx(tmp_path, name: str, rows: list[dict[str, Any]]) -> Context:
    """A Context whose cached summary of experiment `name` is the real summarize_* of these fake
    rows."""
    ctx = Context(scale="quick", results_db=str(tmp_path / "results.sqlite"))
    ctx.cache[("experiment", name, "quick", ctx.results_db)] = experiments.EXPERIMENTS[
        name
    ].summarize(rows)
    return ctx


def induction_rows(one: float = 0.6, two: dict[int, float] | None = None) -> list[dict[str, Any]]:
    two = {16: 1.0, 32: 1.0} if two is None else two
    rows = []
    for layers, n, acc in [(1, 16, one), (1, 32, one)] + [(2, n, a) for n, a in two.items()]:
        rows.append(
            {
                "config": {"layers": layers, "n": n, "alphabet": 4, "heads": 1, "dim": 32},
                "metrics": {"accuracy": acc, "accuracy_bottom": 1.0, "accuracy_index": acc},
            }
        )
    return rows


@pytest.mark.parametrize(
    "rows, reason",
    [
        (induction_rows(), None),
        (induction_rows(two={16: 1.0, 32: 0.95}), "n=32: 95.00%"),  # two layers below 99% at n = 32
        (induction_rows(one=1.0), "NOT below its two-layer counterpart"),  # one layer ties two
        (induction_rows(two={16: 1.0}), "two-layer models missing at some n"),
    ],
)
def test_learning_induction_depth(tmp_path, rows, reason):
    r = run("learning.induction.depth", summary_ctx(tmp_path, "induction-depth", rows))
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail


MEASURED_KHOP = {
    2: [0.001, 0.322, 0.529, 0.716],
    3: [0.0, 0.088, 0.451, 0.589],
    4: [0.0, 0.0, 0.0, 0.001],
}


def khop_rows(errors: dict[int, list[float]]) -> list[dict[str, Any]]:
    return [
        {
            "config": {"layers": L},
            "metrics": {"accuracy_by_hop": {str(k + 1): 1 - e for k, e in enumerate(row)}},
        }
        for L, row in errors.items()
    ]


@pytest.mark.parametrize(
    "errors, reason",
    [
        (MEASURED_KHOP, None),  # the quick sweep's measured table (rounded)
        (
            MEASURED_KHOP | {2: [0.3, 0.3, 0.3, 0.3]},
            "L=2: error at k=4 (0.3000) is not above error at k=1",
        ),  # a tie
        (
            MEASURED_KHOP | {4: [0.0, 0.2, 0.4, 0.716]},
            "is not better than the shallowest",
        ),  # tie at the largest k
        (
            MEASURED_KHOP | {3: [0.0, 0.088, 0.01, 0.589]},
            "not growing with k",
        ),  # L = 3 solves k = 3 but not k = 2
        ({4: MEASURED_KHOP[4]}, "need ≥ 2 depths"),
    ],
)
def test_learning_khop_depth(tmp_path, errors, reason):
    r = run("learning.khop.depth", summary_ctx(tmp_path, "khop", khop_rows(errors)))
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail


# the quick khop-gpt2 sweep's measured table (1000 steps, seed 0, rounded)
MEASURED_GPT2 = {
    2: [0.0009, 0.294, 0.507, 0.689],
    3: [0.0002, 0.169, 0.394, 0.555],
    4: [0.0004, 0.028, 0.345, 0.436],
    5: [0.0002, 0.001, 0.001, 0.073],
}


def certified_rows(
    errors: dict[int, list[float]], bits: dict[tuple[int, int], int]
) -> list[dict[str, Any]]:
    """khop_rows with each run's certificates: certified at fixed:bits[L, k] where given, else a
    float64 error."""
    rows = khop_rows(errors)
    for row in rows:
        L = row["config"]["layers"]
        row["metrics"]["certificates_by_hop"] = {
            str(k): {
                "errors": 0,
                "precision_bits": bits[L, k],
                "certified": True,
                "dtypes_exact": ["float64"],
            }
            if (L, k) in bits
            else {"errors": 3, "precision_bits": None, "certified": False, "dtypes_exact": None}
            for k in range(1, len(errors[L]) + 1)
        }
    return rows


@pytest.mark.parametrize(
    "errors, reason",
    [
        (MEASURED_GPT2, None),
        (
            MEASURED_GPT2 | {5: [0.0, 0.0, 0.0, 0.7]},
            "is not better than the shallowest",
        ),  # depth buys nothing
        (
            {L: [0.5, 0.6, 0.7, 0.8] for L in MEASURED_GPT2},
            "not growing with k",
        ),  # a broken block: no depth solves even k = 1
        (
            MEASURED_GPT2 | {3: [0.3, 0.3, 0.3, 0.3]},
            "L=3: error at k=4 (0.3000) is not above error at k=1",
        ),
        ({2: MEASURED_GPT2[2]}, "need ≥ 2 depths"),
    ],
)
def test_learning_khop_gpt2(tmp_path, errors, reason):
    bits = {(5, 1): 3, (5, 2): 4, (4, 1): 6}
    ctx = summary_ctx(tmp_path, "khop-gpt2", certified_rows(errors, bits))
    ctx.cache[("experiment", "khop", "quick", ctx.results_db)] = experiments.EXPERIMENTS[
        "khop"
    ].summarize(khop_rows(MEASURED_KHOP))
    r = run("learning.khop.gpt2", ctx)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail
    # the precision is reported, never asserted: certified cells show p, the others —
    gpt2 = r.measured["gpt2"]
    assert list(r.measured) == ["gpt2", "attention_only", "gpt2_steps", "attention_only_steps"]
    assert "precision_bits" not in r.measured["attention_only"]  # those rows have no certificates
    assert (r.measured["gpt2_steps"], r.measured["attention_only_steps"]) == (1000, None)
    L5 = gpt2["layers"].index(5) if 5 in gpt2["layers"] else None
    if L5 is not None:
        assert gpt2["precision_bits"][L5] == [3, 4, None, None] and "L=5: 3 4 — —" in r.detail
    if reason is None:
        assert "L=2: 68.9 vs 71.6" in r.detail
        assert (
            "(training steps: GPT-2-style 1000, attention-only the trainer's default)" in r.detail
        )
        assert "k=1: 2 vs 2, k=2: 4 vs 3, k=3: 5 vs 4, k=4: none vs 4" in r.detail


def minmax_rows(two_solved: bool = True, verifier_lies: bool = False) -> list[dict[str, Any]]:
    rows = []
    for heads, dim, both in [(1, 2, 0.7), (2, 3, 1.0 if two_solved else 0.9)]:
        verdict = {"counterexample_exists": heads == 1, "correct": heads == 2 or verifier_lies}
        rows.append(
            {
                "config": {"M": 8, "n": 4, "heads": heads, "dim": dim},
                "metrics": {
                    "accuracy_both": both,
                    "accuracy_min": both,
                    "accuracy_max": both,
                    "verifier_min": verdict,
                    "verifier_max": verdict,
                    "exhaustive": True,
                },
            }
        )
    return rows


@pytest.mark.parametrize(
    "two_solved, verifier_lies, status",
    [
        (True, False, PASS),
        (False, False, FAIL),  # no two-head run solves both
        (
            True,
            True,
            FAIL,
        ),  # the verifier calls a single head correct that exhaustive evaluation finds 70% right
    ],
)
def test_learning_minmax_heads(tmp_path, two_solved, verifier_lies, status):
    r = run(
        "learning.minmax.heads",
        summary_ctx(tmp_path, "minmax-heads", minmax_rows(two_solved, verifier_lies)),
    )
    assert r.status == status, r.detail
    assert r.measured["two_heads_solved"] == int(two_solved)
    assert r.measured["verifier_agrees_with_exhaustive"] is not verifier_lies
    # measured is the typed summary's JSON (the figure reads the summary itself), with the
    # constructions
    assert r.measured == r.series.to_json() and r.series.construction_dims == {8: 6}


def xor_rows(solved: dict[tuple[int, int], bool], n: int = 4) -> list[dict[str, Any]]:
    return [
        {
            "config": {"function": "xor", "n": n, "degree": D, "heads": H},
            "metrics": {
                "threshold_degree": n,
                "dim": 1,
                "solved_exact": s,
                "accuracy_all_inputs": 1.0 if s else 0.5,
            },
        }
        for (D, H), s in solved.items()
    ]


@pytest.mark.parametrize(
    "solved, reason",
    [
        ({(1, 1): False, (1, 2): False, (2, 2): True, (1, 4): False}, None),
        (
            {(1, 1): False, (1, 2): True, (2, 2): True, (1, 4): False},
            "1 of 2 cells below D·H = n solved",
        ),
        (
            {(2, 2): True, (1, 4): True},
            "0 of 0 cells below",
        ),  # nothing below the curve: the claim is untested
    ],
)
def test_learning_xor_phase(tmp_path, solved, reason):
    r = run("learning.xor.phase", summary_ctx(tmp_path, "xor-phase", xor_rows(solved)))
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail
    assert r.measured == r.series.to_json() and r.measured["above_constructions_certified"] == 2


@pytest.mark.parametrize("wrong, reason", [(False, None), (True, "≠ frontier")])
def test_boolean_frontier(monkeypatch, wrong, reason):
    """A wrong model accuracy (1/64 off) fails; the other falsifications (a suboptimal row, a model
    for the wrong pattern, a D·H left out) are in tests/report/test_boolean_frontier.py."""
    from flint import fmpq

    from headcount.boolean import accuracy_frontier as bf

    real = bf.model_accuracy
    if wrong:
        off = lambda layer, readout, F: real(layer, readout, F) - fmpq(1, 64)
        monkeypatch.setattr(bf, "model_accuracy", off)
    params = {"n": 6, "functions": ["xor", "mod:3"], "all_pairs": False, "experiment": None}
    r = run("boolean.frontier", **params)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail


# ----------------------------------------------------------------------------------------------
# mechanism
def mechanism_ctx(tmp_path, trained: Any) -> Context:
    """A Context whose best two-layer run (n = 8, S = 3) is cached with model `trained`: no sweep,
    no training."""
    from headcount.report.induction.mechanism import EXPERIMENT, TrainedModel

    ctx = Context(scale="quick", results_db=str(tmp_path / "results.sqlite"))
    config = {
        "task": "induction",
        "layers": 2,
        "heads": 1,
        "dim": 32,
        "n": 8,
        "alphabet": 3,
        "seed": 0,
    }
    run_ = TrainedModel("0123456789abcdef", config, 0.999, trained)
    ctx.cache[("best-two-layer-model", EXPERIMENT, "quick", ctx.results_db)] = run_
    return ctx


def blind(model: Any, layer: int) -> Any:
    """`model` with W_Q = 0 in every head of `layer`: they attend evenly, whatever they were built
    for."""
    from dataclasses import replace

    heads = tuple(replace(h, W_Q=np.zeros_like(h.W_Q)) for h in model.layers[layer].heads)
    layers = tuple(replace(x, heads=heads) if i == layer else x for i, x in enumerate(model.layers))
    return replace(model, layers=layers)


@pytest.mark.parametrize(
    "layer, reason", [(None, None), (0, "layer 0: roles"), (1, "layer 1: roles")]
)
def test_induction_heads_mechanism(tmp_path, monkeypatch, layer, reason):
    from headcount.induction.construction import build_construction
    from headcount.report.induction import mechanism

    built = build_construction(2, 8, 3)
    if layer is not None:  # the construction's heads lose their roles: the claim must notice
        monkeypatch.setattr(mechanism, "two_layer_induction", lambda n, S: blind(built, layer))
    r = run("induction.heads.mechanism", mechanism_ctx(tmp_path, built), samples=64, draw=8)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail
    assert (
        r.measured["trained"]["same_circuit"] is True
    )  # the trained stand-in is the intact construction


def test_induction_heads_mechanism_reports_a_trained_model_without_the_circuit(tmp_path):
    from headcount.induction.construction import build_construction

    trained = blind(build_construction(2, 8, 3), 1)  # no induction head: reported, not asserted
    r = run("induction.heads.mechanism", mechanism_ctx(tmp_path, trained), samples=64, draw=8)
    assert r.status == PASS, r.detail
    assert r.measured["trained"]["same_circuit"] is False
    assert "NOT the construction's circuit (no induction in layer 1)" in r.detail


# ----------------------------------------------------------------------------------------------
# scope wording
def test_certificate_wording_follows_scope():
    wording = induction_claims.certified_wording
    assert wording("sampled") == "certified on the inputs checked (scope: sampled)"
    assert wording("exhaustive") == "certified on all of Σ^n (scope: exhaustive)"
    for exhaustive, scope in [
        (True, "exhaustive"),
        (False, "sampled"),
    ]:  # the scope follows the input set
        assert fake_cert("two_layer", 4, 2, None, exhaustive=exhaustive).scope == scope


def test_boolean_certificates_are_exhaustive():
    from headcount.boolean.certification import certify_boolean_model, construct_and_certify

    r = construct_and_certify("xor", 5, 2, 3, use_search=False).certificate
    assert (r.scope, r.weights_checked, r.certified) == ("exhaustive", 6, True)
    layer, readout = boolean_claims.truncated_model(
        5, 2, 2
    )  # a too-small model: still an exhaustive verdict
    wrong = certify_boolean_model(layer, readout, [(-1) ** t for t in range(6)])
    assert (wrong.scope, wrong.certified, wrong.wrong_input.t) == ("exhaustive", False, 5)


def test_every_claim_has_a_falsification_test():
    """A claim registered without a test in this folder's test files (a call of run with its id)
    makes this fail, and so does a test of an id that is not registered."""
    files = sorted(Path(__file__).parent.glob("test_*.py"))
    tested = {cid for f in files for cid in re.findall(r'\brun\(\s*"([\w.]+)"', f.read_text())}
    registered = {cid for cid in load_claims() if not cid.startswith("test.")}
    assert (registered - tested, tested - registered) == (set(), set())


# ------------------------------------------------------------------------------------- k-hop
# construction
KHOP_TINY = {
    "hops": 2,
    "depth_case": (16, 4, 16),
    "precision_alphabet": 4,
    "precision_cases": [(16, 16), (32, 16)],
    "precision_hops": [2],
    "experiment": None,  # the trained models are reported, not asserted: not needed to falsify
}


@pytest.mark.parametrize(
    "layers, reason", [(3, None), (4, "k=2: 4 layers, not ⌈log₂ k⌉ + 2 = 3"), (2, "k=2: 2 layers")]
)
def test_khop_construction(layers, reason):
    """One falsification (the depth at k = 2) on the real tiny construction's certificates; every
    other one (errors, unproven positions, heads, width, families, precision linear in n, falsified
    models) is in tests/report/test_khop_construction_claim.py."""
    from dataclasses import replace

    from headcount.report.induction.khop_construction import CACHE_KIND

    ctx = Context()
    assert (
        run("induction.khop.construction", ctx, **KHOP_TINY).status == PASS
    )  # certifies into ctx.cache
    key = (CACHE_KIND, 16, 4, 2, 16, 0)  # (kind, n, S, k, samples, seed)
    point = ctx.cache[key]
    ctx.cache[key] = replace(point, certificate=replace(point.certificate, layers=layers))
    r = run("induction.khop.construction", ctx, **KHOP_TINY)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail


# ------------------------------------------------------------------------------------------ INDEX
# floor
FLOOR_TINY = {
    "ks": [6],
    "shape": (1, 1, 1),
    "seeds": [3],
    "construction_ks": [3],
    "trained_ks": [],
    "experiment": None,
}


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({}, None),
        (
            {"model_correct": 384, "agreements": 384, "disagreements": 0},
            "INDEX error 0 < floor 0.0246",
        ),
        ({"protocol_correct": 384}, "Bob's error 0 < floor 0.0246"),
    ],
)
def test_index_error_floor(changes, reason):
    """Random model seed 3 at k = 6 sends 5 bits (floor 0.0246); made right on all 384 pairs without
    the disagreements that would explain it (or Bob made right), it falls below the floor. The rest:
    tests/report/test_index_floor.py."""
    from dataclasses import replace

    from headcount.report.induction.index_floor import CACHE_KIND

    ctx = Context()
    assert (
        run("induction.index.error_floor", ctx, **FLOOR_TINY).status == PASS
    )  # checks into ctx.cache
    key = (CACHE_KIND, "random", 6, 3, 1, 1, 1)  # (kind, "random", k, seed, h, m, p)
    ctx.cache[key] = replace(ctx.cache[key], **changes)
    r = run("induction.index.error_floor", ctx, **FLOOR_TINY)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail


# ------------------------------------------------------------------------------------------- k-hop
# mechanism
KHOP_MECHANISM_TINY = {"n": 64, "alphabet": 4, "hops": 16, "samples": 64, "draw": 16}


def khop_mechanism_ctx(tmp_path) -> Context:
    """A Context whose deepest trained k-hop run is cached — the variable-hop construction (n = 16,
    S = 4, K = 4, hop-prefix like the lab's models) as its stand-in: no sweep, no training."""
    from headcount.induction.multihop.construction import variable_hop_construction
    from headcount.report.induction.khop_mechanism import CACHE_KIND, EXPERIMENT, TrainedKhop

    ctx = Context(scale="quick", results_db=str(tmp_path / "results.sqlite"))
    config = {
        "task": "khop",
        "layers": 4,
        "heads": 2,
        "dim": 32,
        "n": 16,
        "alphabet": 4,
        "hops": 4,
        "seed": 0,
    }
    stand_in = TrainedKhop(
        "fedcba9876543210",
        config,
        {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0},
        variable_hop_construction(16, 4, 4),
    )
    ctx.cache[(CACHE_KIND, EXPERIMENT, "quick", ctx.results_db)] = stand_in
    return ctx


@pytest.mark.parametrize(
    "layer, reason",
    [
        (None, None),
        (3, "layer 3: roles ['uniform'], built ['find^2']"),  # the find^2 pointer head, blinded
        (5, "layer 5: roles ['uniform'], built ['find^8']"),  # the last pointer head
        (1, "layer 1: roles"),  # the find head itself
    ],
)
def test_induction_khop_mechanism(tmp_path, monkeypatch, layer, reason):
    """A construction whose pointer head no longer follows its pointer (W_Q = 0: it averages) FAILs;
    the trained model's roles are reported either way."""
    from headcount.induction.multihop.construction import khop_construction
    from headcount.report.induction import khop_mechanism

    def broken(
        n: int, S: int, k: int
    ) -> Any:  # the constructions with that layer lose its head's role
        model = khop_construction(n, S, k)
        return blind(model, layer) if layer < len(model.layers) else model

    if layer is not None:
        monkeypatch.setattr(khop_mechanism, "khop_construction", broken)
    r = run("induction.khop.mechanism", khop_mechanism_ctx(tmp_path), **KHOP_MECHANISM_TINY)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail
    assert r.measured["trained"]["run_id"] == "fedcba9876543210"  # reported, whatever the verdict
