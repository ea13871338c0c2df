"""The INDEX reduction (headcount.induction.lower_bound): the protocol reproduces the model, Bob's
error bound holds, the bit count is what the docstring says, and the refuter finds (only confirmed)
counterexamples."""

from __future__ import annotations

import json
import math
import time
import zlib
from fractions import Fraction

import flint
import numpy as np
import pytest
from scipy.special import expit

from headcount.common.errors import InputError
from headcount.core.certify.evaluate import predict
from headcount.core.model import MLP, AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.table import OneLayerTable, random_table
from headcount.core.numbers.precision import fixed, round_fixed
from headcount.core.passes.table_form import table_residual
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.induction.lower_bound import error_bounds as lb_exact
from headcount.induction.lower_bound import protocol as lb_protocol
from headcount.induction.lower_bound import refute as lb_refute
from headcount.induction.lower_bound import setup as lb_setup
from headcount.induction.lower_bound.protocol import (
    alice_message,
    bob_heads,
    bob_output,
    check_protocol,
    exact_heads,
    message_layout,
    worst_case_bits,
)
from headcount.induction.lower_bound.refute import refute
from headcount.induction.lower_bound.results import GuidedSearch
from headcount.induction.lower_bound.setup import MAX_PRECISION_BITS
from headcount.induction.task import index_family, index_input

REPORT_KEYS = {
    "k",
    "n",
    "heads",
    "dim",
    "precision_bits",
    "message_bits",
    "pairs_checked",
    "agreements",
    "disagreements",
    "disagreements_explained",
}


def minimal_index_precision(model, k: int) -> int:
    """Smallest p at which the model answers the whole INDEX family right (measured, not
    assumed)."""
    tokens, F, stars = index_family(k)
    expected = F[np.arange(len(F)), stars - 1]
    for p in range(1, 24):
        if np.array_equal(predict(model, tokens, fixed(p))[:, -1], expected):
            return p
    raise AssertionError("no precision up to 23 bits works")


def confirmed_wrong(model, refutation, p: int) -> bool:
    """Re-run the reported input through predict and check the model really gets it wrong."""
    text = {"0": 0, "1": 1, "?": 2}
    sigma = np.array([text[t] for t in refutation.input])
    got = predict(model, sigma[None], fixed(p))[0, refutation.position - 1]
    expected = int(refutation.expected)
    shown = {0: "0", 1: "1", 2: "?", -1: "⊥"}.get(int(got), str(int(got)))
    return int(got) != expected and shown == refutation.model_output


def constant_message_model(seed: int, k: int, heads: int = 2, dim: int = 4) -> OneLayerTable:
    """A random table whose keys and values at Alice's positions ignore both the bit and the
    position: every f gives the same message (0 bits), so the pigeonhole argument must produce an
    error."""
    t = random_table(np.random.default_rng(seed), 2 * k + 1, 3, heads, dim)
    K, V = t.K.copy(), t.V.copy()
    K[:, 1 : 2 * k : 2, :2] = K[:, 1:2, :1]
    V[:, 1 : 2 * k : 2, :2] = V[:, 1:2, :1]
    return OneLayerTable(t.embed, t.Q, K, V, t.decoder, t.mask, t.info)


# ---------------------------------------------------------------------------------------------
# random_table
# ---------------------------------------------------------------------------------------------


def test_random_table_is_seeded_and_shaped():
    a = random_table(np.random.default_rng(5), 7, 3, 2, 4, d_head=3, scale=0.5)
    b = random_table(np.random.default_rng(5), 7, 3, 2, 4, d_head=3, scale=0.5)
    assert np.array_equal(a.V, b.V) and np.array_equal(a.decoder.W_U, b.decoder.W_U)
    assert a.embed.shape == (7, 3, 4) and a.Q.shape == (2, 7, 3, 3) and a.V.shape == (2, 7, 3, 4)
    assert isinstance(a.decoder, LinearDecoder) and a.decoder.W_U.shape == (4, 4)
    assert predict(a, np.zeros((2, 7), dtype=int)).shape == (2, 7)


# ---------------------------------------------------------------------------------------------
# Protocol exactness
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", range(3, 9))
def test_protocol_exact_on_one_layer_construction(k):
    model = one_layer_induction(2 * k + 1, 3)
    p_min = minimal_index_precision(model, k)
    for p in (p_min, p_min + 2):
        report = check_protocol(model, k, p)
        assert report.exhaustive and report.pairs_checked == (1 << k) * k
        assert report.disagreements == 0 and report.agreements == report.pairs_checked
        assert report.model_correct == report.pairs_checked
        assert report.bound_violations == 0
        # Only Alice's k value coordinates vary: k numbers of 3p+2 bits (values 1 or 2 over [0, 2]).
        assert report.message_bits == k * (3 * p + 2)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("heads", [1, 2, 4])
@pytest.mark.parametrize("dim", [2, 8])
@pytest.mark.parametrize("p", [8, 16])
def test_protocol_on_random_tables(seed, heads, dim, p):
    k = 8 if seed % 2 else 5 + seed
    model = random_table(
        np.random.default_rng(seed), 2 * k + 1, 3, heads, dim, mask=("causal", "full")[seed % 2]
    )
    report = check_protocol(model, k, p)
    assert report.exhaustive and report.pairs_checked == (1 << k) * k
    assert report.disagreements == report.disagreements_explained
    assert report.bound_violations == 0
    assert report.message_bits <= report.worst_case_message_bits


def test_disagreements_at_tiny_precision_are_all_explained():
    """At p = 1..3 the ε grid is coarse and some head outputs sit near ties: disagreements happen,
    and every one is explained by Bob's bound (this exercises the 'explained' path, not just the
    zero case)."""
    total = 0
    for seed in range(12):
        model = random_table(
            np.random.default_rng(seed), 13, 3, 1 + seed % 3, 2 + seed % 5, scale=0.5 + seed % 4
        )
        for p in (1, 2, 3):
            report = check_protocol(model, 6, p)
            assert report.exact, report.to_json()
            total += report.disagreements
    assert total > 0


def test_sampled_protocol_and_report_json():
    model = random_table(np.random.default_rng(9), 41, 4, 2, 3)
    report = check_protocol(model, 20, 10, pairs=3000, seed=4)
    assert not report.exhaustive and report.pairs_checked == 3000 and report.seed == 4
    assert report.exact
    d = report.to_json()
    assert REPORT_KEYS <= d.keys()
    json.dumps(d)
    assert check_protocol(model, 20, 10, pairs=3000, seed=4).to_json() | {"seconds": 0} == d | {
        "seconds": 0
    }


def test_single_pairs_match_predict():
    model = random_table(np.random.default_rng(3), 15, 3, 3, 5)
    rng = np.random.default_rng(0)
    for _ in range(40):
        f, i_star = rng.integers(0, 2, size=7), int(rng.integers(1, 8))
        msg = alice_message(model, f, 12)
        assert msg.bits == message_layout(model, 7, 12).bits and len(msg.codes) == 3 * 6
        got = predict(model, index_input(f, i_star)[None], fixed(12))[0, -1]
        assert bob_output(model, msg, i_star, 12) == got


def test_exact_heads_match_the_model_forward_pass():
    model = random_table(np.random.default_rng(11), 11, 3, 3, 4)
    rng = np.random.default_rng(1)
    p = 10
    for _ in range(20):
        f, i_star = rng.integers(0, 2, size=5), int(rng.integers(1, 6))
        heads = exact_heads(model, f, i_star, p)
        mine = round_fixed(model.embed[10, 2], p) + round_fixed(heads, p).sum(axis=0)
        theirs = table_residual(model, index_input(f, i_star)[None], fixed(p))[0, -1]
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Bob's error bound
# ---------------------------------------------------------------------------------------------


def _by_hand(model, f, i_star, p):
    """r, s, b, log Z_B for head outputs at N computed the naive way (no log-sum-exp): an
    independent check."""
    k = len(f)
    sigma = index_input(f, i_star)
    n = 2 * k + 1
    q = round_fixed(model.Q[:, n - 1, 2], p)
    keys = round_fixed(model.K[:, np.arange(n), sigma], p)
    vals = round_fixed(model.V[:, np.arange(n), sigma], p)
    w = np.exp(np.einsum("hd,hjd->hj", q, keys))
    alice, bob = np.arange(1, 2 * k, 2), np.r_[np.arange(0, 2 * k, 2), n - 1]
    za, zb = w[:, alice].sum(1), w[:, bob].sum(1)
    r = np.einsum("hj,hjm->hm", w[:, alice], vals[:, alice]) / za[:, None]
    b = np.einsum("hj,hjm->hm", w[:, bob], vals[:, bob]) / zb[:, None]
    y = (np.einsum("hj,hjm->hm", w, vals)) / w.sum(1)[:, None]
    return r, np.log(za), b, y


def test_bob_error_bound_holds_numerically():
    rng = np.random.default_rng(2024)
    worst = 0.0
    for case in range(300):
        k = int(rng.integers(1, 9))
        p = int(rng.integers(1, 13))
        model = random_table(
            rng,
            2 * k + 1,
            3,
            int(rng.integers(1, 4)),
            int(rng.integers(1, 6)),
            scale=float(rng.choice([0.3, 1.0, 2.0])),
        )
        f, i_star = rng.integers(0, 2, size=k), int(rng.integers(1, k + 1))
        r, s, b, y_naive = _by_hand(model, f, i_star, p)
        msg = alice_message(model, f, p)
        eps = 2.0 ** (-3 * p)
        assert np.all(np.abs(msg.r_hat - r) <= eps / 2 + 1e-12) and np.all(
            np.abs(msg.s_hat - s) <= eps / 2 + 1e-12
        )
        bob = bob_heads(model, msg, i_star, p)
        y = exact_heads(model, f, i_star, p)
        np.testing.assert_allclose(y, y_naive, rtol=1e-9, atol=1e-12)
        err = np.abs(y - bob.y_tilde)
        assert np.all(err <= bob.bound), case
        # The closed form of the docstring: (ε/2)(1 + |r − b|/4), up to float slack.
        assert np.all(err <= eps / 2 * (1 + np.abs(r - b) / 4) + 1e-12), case
        worst = max(worst, float((err / bob.bound).max()))
    assert worst > 0.05  # the bound is not vacuous: observed errors reach a real fraction of it


# ---------------------------------------------------------------------------------------------
# Bit accounting
# ---------------------------------------------------------------------------------------------


def test_message_bits_by_hand():
    """k = 2, one head, m = d_head = 1, p = 2 (ε = 2^-6); all table entries are multiples of 2^-2,
    so rounding to p bits changes nothing. Alice's positions are 2 and 4 (0-based 1 and 3)."""
    k, p, n = 2, 2, 5
    embed = np.zeros((n, 3, 1))
    Q, K, V = np.zeros((1, n, 3, 1)), np.zeros((1, n, 3, 1)), np.zeros((1, n, 3, 1))
    Q[0, n - 1, 2, 0] = 1.0
    K[0, 1, :2, 0] = [0.5, 1.0]
    K[0, 3, :2, 0] = [-1.0, 2.0]
    V[0, 1, :2, 0] = [0.25, 0.5]
    V[0, 3, :2, 0] = [-0.75, 1.0]
    model = OneLayerTable(embed, Q, K, V, LinearDecoder(np.ones((1, 4)), np.zeros(4)))
    # r ∈ [-0.75, 1.0]: 1.75·64 + 1 = 113 grid points -> 7 bits. s ∈ [log(e^0.5 + e^-1), log(e^1 +
    # e^2)] = [0.7014, 2.3133]: grid 45..148, 104 points -> 7 bits.
    lo, hi = math.log(math.exp(0.5) + math.exp(-1)), math.log(math.exp(1) + math.exp(2))
    assert (round(hi * 64), round(lo * 64)) == (148, 45)
    layout = message_layout(model, k, p)
    assert layout.r_bits.tolist() == [[7]] and layout.s_bits.tolist() == [7] and layout.bits == 14
    assert layout.seed_bits == 1 * (1 + 1) * 3 * p
    msg = alice_message(model, [1, 0], p)
    assert msg.bits == 14
    # f = (1, 0): scores 1.0, -1.0; values 0.5, -0.75.
    w = np.exp([1.0, -1.0])
    r, s = (w @ [0.5, -0.75]) / w.sum(), math.log(w.sum())
    assert msg.codes == (round(r * 64) - (-48), round(s * 64) - 45)
    # A transmitted number whose interval is one point costs nothing.
    V[0, 3, :2, 0] = V[0, 1, :2, 0] = 0.5
    flat = OneLayerTable(embed, Q, K, V, model.decoder)
    assert message_layout(flat, k, p).r_bits.tolist() == [[0]]


def test_worst_case_bound_covers_extreme_models():
    """Entries at the clip limit ±2^p reach the worst case's ballpark and never exceed it."""
    k, p, heads, dim, d_head = 4, 3, 2, 3, 2
    rng = np.random.default_rng(0)
    model = random_table(rng, 2 * k + 1, 3, heads, dim, d_head=d_head)
    big = 2.0**p
    Q = np.full_like(model.Q, big)
    K = np.where(rng.random(model.K.shape) < 0.5, -big, big)
    V = np.where(rng.random(model.V.shape) < 0.5, -big, big)
    extreme = OneLayerTable(model.embed, Q, K, V, model.decoder)
    bits = message_layout(extreme, k, p).bits
    assert bits <= worst_case_bits(heads, dim, d_head, p)
    assert bits >= heads * dim * (4 * p + 1)


# ---------------------------------------------------------------------------------------------
# Refuter
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [6, 30])
def test_refute_finds_collision(k):
    model = constant_message_model(0, k)
    assert message_layout(model, k, 8).bits == 0
    result = refute(model, k, 8)
    assert result.found and result.method == "collision"
    ev = result.evidence
    assert ev.f != ev.f_prime and ev.f[ev.i_star - 1] != ev.f_prime[ev.i_star - 1]
    assert ev.message_bits == 0 < k
    assert confirmed_wrong(model, result, 8)
    assert (
        alice_message(model, [int(c) for c in ev.f], 8).digest()
        == alice_message(model, [int(c) for c in ev.f_prime], 8).digest()
    )
    d = result.to_json()
    json.dumps(d)
    assert d["evidence"]["f"] == ev.f and d["searched"]["methods"] == ["collision"]
    assert d["searched"]["collision"]["colliding_pairs_tried"] >= 1


def test_refute_random_model_long_input():
    model = random_table(np.random.default_rng(0), 81, 3, 1, 2)
    began = time.process_time()  # CPU time (all threads): what the machine's load does not change
    result = refute(model, 40, 4, seed=1)
    assert result.found and result.method in ("collision", "guided")
    assert confirmed_wrong(model, result, 4)
    assert result.position == 81 and len(result.input) == 81
    assert (
        result.input == [{0: "0", 1: "1", 2: "?"}[t] for t in result.tokens]
        and result.tokens[-1] == 2
    )
    assert time.process_time() - began < 20


@pytest.mark.parametrize("k", range(1, 7))
def test_refute_finds_nothing_on_the_construction(k):
    model = one_layer_induction(2 * k + 1, 3)
    result = refute(model, k, 5)
    assert not result.found and result.input is None and result.tokens is None
    assert result.searched.methods == ["exhaustive"]
    assert result.searched.exhaustive.inputs == (1 << k) * k


def test_refute_exhaustive_reports_first_wrong_input():
    model = random_table(np.random.default_rng(7), 11, 3, 2, 6)
    result = refute(model, 5, 8)
    assert result.message_bits >= 5 and result.method == "exhaustive"
    assert confirmed_wrong(model, result, 8)


def _majority_model(k: int) -> OneLayerTable:
    """Uniform attention; Alice's bits vote ±1 in coordinate 0; the decoder says 1 iff the vote is
    positive. Right whenever f's majority agrees with f_{i*} — so all-ones / all-zeros starts are
    right and the local search has to walk to an error."""
    n = 2 * k + 1
    V = np.zeros((1, n, 3, 2))
    V[0, 1 : 2 * k : 2, 0, 0], V[0, 1 : 2 * k : 2, 1, 0] = -1.0, 1.0
    W_U = np.zeros((2, 4))
    W_U[0, :2] = [-1.0, 1.0]
    b_U = np.array([0.0, 0.0, -100.0, -100.0])
    return OneLayerTable(
        np.zeros((n, 3, 2)),
        np.zeros((1, n, 3, 1)),
        np.zeros((1, n, 3, 1)),
        V,
        LinearDecoder(W_U, b_U),
    )


def test_local_search_walks_to_an_error():
    k, p = 24, 8
    model = _majority_model(k)
    search = lb_refute._Refuter(lb_setup.index_setup(model, k, p), seed=0, budget=10_000)
    search.start(guided=GuidedSearch())
    F = np.stack([np.ones(k, dtype=np.int64), np.zeros(k, dtype=np.int64)])
    stars = np.array([3, 7])
    found, margin = search.evaluate(F, stars)
    assert found is None and np.all(margin > 0)  # both starts are answered right
    result = search.local_search(F, stars, margin)
    assert result is not None and result.method == "guided"
    assert search.searched.guided.local_search_steps >= 1
    assert result.searched == search.searched  # the record as it stood when the input was confirmed
    assert confirmed_wrong(model, result, p)


# ---------------------------------------------------------------------------------------------
# Validation and model forms
# ---------------------------------------------------------------------------------------------


def _weight_model(layers: int, mlp: bool = False, n_ctx: int = 9) -> Transformer:
    rng = np.random.default_rng(0)
    d = 3
    head = lambda: AttentionHead(*(rng.normal(size=s) for s in [(d, 2), (d, 2), (d, 2), (2, d)]))  # noqa: E731
    block = None
    if mlp:
        block = MLP(
            rng.normal(size=(d, 4)), rng.normal(size=4), rng.normal(size=(4, d)), rng.normal(size=d)
        )
    return Transformer(
        rng.normal(size=(3, d)),
        rng.normal(size=(n_ctx, d)),
        tuple(Layer((head(), head()), block) for _ in range(layers)),
        LinearDecoder(rng.normal(size=(d, 4)), np.zeros(4)),
    )


def test_one_layer_weight_model_is_accepted():
    """With an integer W_O (v·W_O stays on the 2^-p grid) the reduction runs on the exact table of
    the model's own fixed:p rounding points; with a Gaussian W_O no table has them and the protocol
    refuses the model, while refute searches it guided by its real-arithmetic table (issue 27,
    finding 3; tests/induction/test_index_weight_form.py)."""
    gaussian = _weight_model(1)
    heads = tuple(
        AttentionHead(h.W_Q, h.W_K, h.W_V, np.array([[1.0, 0.0, -1.0], [0.0, 2.0, 1.0]]))
        for h in gaussian.layers[0].heads
    )
    model = Transformer(gaussian.W_E, gaussian.W_pos, (Layer(heads),), gaussian.decoder)
    report = check_protocol(model, 4, 10)
    assert report.exact and report.heads == 2 and report.model_form == lb_setup.WEIGHTS_FORM
    result = refute(model, 4, 10)
    assert result.found is False or confirmed_wrong(model, result, 10)
    with pytest.raises(InputError, match="not on the 2\\^-10 grid"):
        check_protocol(gaussian, 4, 10)
    guided = refute(gaussian, 4, 10)  # refute searches it guided by its real-arithmetic table
    assert guided.model_form == lb_setup.GUIDE_FORM and guided.message_bits is None
    assert guided.found is False or confirmed_wrong(gaussian, guided, 10)


@pytest.mark.parametrize(
    "call",
    [
        lambda: check_protocol(one_layer_induction(9, 3), 0, 5),
        lambda: check_protocol(one_layer_induction(9, 3), 4, 0),
        lambda: check_protocol(one_layer_induction(9, 3), 5, 5),  # n = 11 > n_ctx = 9
        lambda: check_protocol(one_layer_induction(9, 2), 4, 5),  # alphabet 2
        lambda: check_protocol(_weight_model(2), 4, 5),
        lambda: check_protocol(_weight_model(1, mlp=True), 4, 5),
        lambda: check_protocol(two_layer_induction(9, 3), 4, 5),
        lambda: refute(_weight_model(2), 4, 5),
        lambda: refute(one_layer_induction(9, 3), 0, 5),
        lambda: check_protocol(one_layer_induction(9, 3), 4, MAX_PRECISION_BITS + 1),
        lambda: alice_message(one_layer_induction(9, 3), [0, 2, 1], 5),
        lambda: bob_output(
            one_layer_induction(9, 3), alice_message(one_layer_induction(9, 3), [0, 1], 5), 3, 5
        ),
    ],
)
def test_bad_input_raises_input_error(call):
    with pytest.raises(InputError) as excinfo:
        call()
    assert "\n" not in str(excinfo.value)


# ---------------------------------------------------------------------------------------------
# "Explained" means proven, at every p (issue 11, finding 7)
# ---------------------------------------------------------------------------------------------

PRECISIONS = [8, 16, 24, 32, 40, 52]
SCALES = ["1", "2^(p/2)"]


def _flip(out: np.ndarray) -> np.ndarray:
    """A wrong answer for every honest one: 0 ↔ 1, anything else (⊥, ?) becomes 0."""
    return np.where(out == 0, 1, 0)


def _scaled_model(p: int, scale: str) -> tuple[OneLayerTable, int]:
    """A seeded random table with entries of size 1 or 2^(p/2) (scores near 2^p: float64 cannot
    weigh them at large p). Large values send predict to its exact evaluator, so that case uses a
    smaller k."""
    k = 8 if scale == "1" else 4
    value = 1.0 if scale == "1" else 2.0 ** (p // 2)
    return random_table(np.random.default_rng(p), 2 * k + 1, 3, 2, 3, scale=value), k


@pytest.fixture
def wrong_bob(monkeypatch):
    """Plant a wrong Bob: check_protocol decodes Bob's residual with decode_final, now flipped."""
    honest = lb_protocol.decode_final
    monkeypatch.setattr(
        lb_protocol, "decode_final", lambda st, residual: _flip(honest(st, residual))
    )


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("p", PRECISIONS)
def test_wrong_bob_is_caught_at_every_precision(wrong_bob, p, scale):
    """The old fixed slack 1e-12·max(1, |v|) covered the whole 2^-p grid at p ≥ 40 (or p ≥ 32 with
    values near 2^(p/2)), so a Bob that is wrong on every pair came out fully "explained" and
    exact."""
    model, k = _scaled_model(p, scale)
    report = check_protocol(model, k, p)
    assert (
        report.disagreements == report.pairs_checked == (1 << k) * k
    )  # the honest Bob agrees everywhere
    assert not report.exact and report.first_unexplained is not None
    assert report.disagreements_explained * 50 <= report.disagreements  # only chance near-ties
    assert report.bound_violations == 0


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("p", PRECISIONS)
def test_honest_protocol_exact_at_every_precision(p, scale):
    model, k = _scaled_model(p, scale)
    report = check_protocol(model, k, p)
    assert report.exact and report.disagreements == 0 and report.bound_violations == 0
    assert report.pairs_checked == (1 << k) * k


@pytest.mark.parametrize("p", PRECISIONS)
def test_honest_protocol_exact_on_construction_at_every_precision(p):
    report = check_protocol(one_layer_induction(13, 3), 6, p)
    assert report.exact and report.disagreements == 0
    assert report.model_correct == report.pairs_checked == 6 * 64


def test_partly_wrong_bob_counts_exactly(monkeypatch):
    """Bob wrong on the pairs whose residual hashes to 0 mod 3: exactly those pairs disagree."""
    honest, picked = lb_protocol.decode_final, []

    def sometimes(st, residual):
        pick = np.array([zlib.crc32(row.tobytes()) % 3 == 0 for row in residual], dtype=bool)
        picked.append(int(pick.sum()))
        out = honest(st, residual)
        return np.where(pick, _flip(out), out)

    monkeypatch.setattr(lb_protocol, "decode_final", sometimes)
    model, k = _scaled_model(40, "1")
    report = check_protocol(model, k, 40)
    assert 0 < sum(picked) < report.pairs_checked
    assert report.disagreements == sum(picked) and report.agreements == report.pairs_checked - sum(
        picked
    )
    assert not report.exact and report.disagreements_explained * 50 <= report.disagreements


def test_float_limited_and_exactly_decided_counts(wrong_bob):
    """At p = 52 float64's error is not small against 2^-p: no float tolerance may explain anything,
    every disagreement is re-decided exactly, and each unexplained one is flagged float-limited."""
    model, k = _scaled_model(52, "1")
    report = check_protocol(model, k, 52)
    assert report.disagreements_decided_exactly == report.disagreements == report.pairs_checked
    assert (
        report.disagreements_float_limited == report.disagreements - report.disagreements_explained
    )
    assert report.disagreements_undecided == 0 and report.first_unexplained.float_limited is True
    low = check_protocol(model, k, 8)  # p = 8: float64 settles every pair, nothing is float-limited
    assert (
        low.disagreements_decided_exactly == low.disagreements_float_limited == 0 and not low.exact
    )


def test_exact_budget_exhausted_counts_undecided(wrong_bob, monkeypatch):
    monkeypatch.setattr(lb_exact, "EXACT_BUDGET", 5)
    model, k = _scaled_model(52, "1")
    report = check_protocol(model, k, 52)
    assert report.disagreements_decided_exactly == 5
    assert report.disagreements_undecided >= report.disagreements - 5
    assert report.disagreements_explained <= 5 and not report.exact


def test_unbounded_float_error_reports_null_bound():
    model, k = _scaled_model(52, "2^(p/2)")  # scores near 2^52: float64 cannot weigh them at all
    report = check_protocol(model, k, 52)
    assert report.max_error_bound == math.inf and report.exact
    d = report.to_json()
    assert d["max_error_bound"] is None
    json.dumps(d, allow_nan=False)


def _uniform_value_model(v0: float) -> OneLayerTable:
    """k = 2 (n = 5), one head, m = d_head = 1: every value is v0 and the scores differ (1, 2 or 3),
    so Y = v0 exactly while every weight is transcendental — arb balls can never pin |Y − t| down
    exactly."""
    n = 5
    embed, Q, K = np.zeros((n, 3, 1)), np.zeros((1, n, 3, 1)), np.zeros((1, n, 3, 1))
    Q[0, n - 1, 2, 0] = 1.0
    K[0, :, :, 0] = [[1.0, 2.0, 3.0]] * n
    V = np.full((1, n, 3, 1), v0)
    return OneLayerTable(embed, Q, K, V, LinearDecoder(np.ones((1, 4)), np.zeros(4)))


def test_exact_redecision_settles_a_boundary_case_by_lindemann(monkeypatch):
    """|Y − t| equal to the tolerance exactly: only Lindemann–Weierstrass can say 'within'."""
    p, v0 = 6, 3 * 2.0**-6
    st = lb_setup.index_setup(_uniform_value_model(v0), 2, p)
    calls = []
    real = lb_exact.sign_exp_poly
    monkeypatch.setattr(lb_exact, "sign_exp_poly", lambda poly: calls.append(poly) or real(poly))
    exact = lb_exact.ExactHeads(st)
    tokens = index_input(np.array([1, 0]), 2)
    tie = 3.5 * 2.0**-6  # nearest tie to Y = v0 = 3·2^-6
    tol = tie - v0
    assert exact.explained(tokens, [(0, 0, tol)]) is True and calls
    assert exact.explained(tokens, [(0, 0, float(np.nextafter(tol, 0)))]) is False
    assert exact.explained(tokens, [(0, 0, 2.0**-20)]) is False  # far from every tie


def _exact_quantities(st, f: np.ndarray, i_star: int, prec: int = 400):
    """Independent arb values (python-flint, `prec` bits) of r, s (Alice), b, log Z_B (Bob) and Y
    per head, from exact rational scores of the rounded q, k and exact values."""
    table, p, k = st.table, st.p, st.k
    n = 2 * k + 1
    sigma = index_input(f, i_star)
    q = round_fixed(table.Q[:, n - 1, 2], p)
    keys = round_fixed(table.K[:, np.arange(n), sigma], p)
    vals = round_fixed(table.V[:, np.arange(n), sigma], p)
    old = flint.ctx.prec
    flint.ctx.prec = prec
    try:
        out = []
        for h in range(q.shape[0]):
            scores = [
                sum((Fraction(a) * Fraction(c) for a, c in zip(q[h], keys[h, j])), Fraction(0))
                for j in range(n)
            ]
            w = [flint.arb(flint.fmpq(sc.numerator, sc.denominator)).exp() for sc in scores]

            def average(idx, w=w, h=h):
                den = sum((w[j] for j in idx), flint.arb(0))
                return [
                    sum((w[j] * flint.arb(float(vals[h, j, c])) for j in idx), flint.arb(0)) / den
                    for c in range(vals.shape[-1])
                ], den.log()

            r, s = average(range(1, 2 * k, 2))
            b, log_zb = average(list(range(0, 2 * k, 2)) + [n - 1])
            y, _ = average(range(n))
            out.append((r, s, b, log_zb, y))
        return out
    finally:
        flint.ctx.prec = old


def _not_above(exact_ball, computed: float, bound: float) -> bool:
    """|computed − exact| ≤ bound is not refuted (the arb ball's radius is far below any bound
    here)."""
    return not bool(abs(flint.arb(computed) - exact_ball) > flint.arb(bound))


@pytest.mark.parametrize("case", range(24))
def test_float_error_bounds_hold_exactly(case):
    """Every float64 quantity of the protocol lies within its proven bound of the exact value:
    Alice's r̃, s̃, Bob's b̃, log Z̃_B, check_protocol's Y (δ_Y) and Bob's Ỹ (T_Bob = E + Φ)."""
    rng = np.random.default_rng(100 + case)
    k, p = int(rng.integers(1, 7)), int(rng.integers(2, 30))
    scale = float(rng.choice([0.5, 1.0, 4.0, 2.0 ** (p // 4)]))
    model = random_table(
        rng, 2 * k + 1, 3, int(rng.integers(1, 3)), int(rng.integers(1, 4)), scale=scale
    )
    st = lb_setup.index_setup(model, k, p)
    fe = lb_exact.float_errors(st)
    F, stars = rng.integers(0, 2, size=(6, k)), rng.integers(1, k + 1, size=6)
    r, s = lb_setup.alice_exact(st, F)
    r_hat, s_hat, _, _ = lb_setup.quantize(st, r, s)
    y_bob, lam_hat, b = lb_setup.mix(st, r_hat, s_hat, stars)
    y, lam, _ = lb_setup.mix(st, r, s, stars)
    e, phi = lb_exact.bob_bound(st, fe, r_hat, s_hat, stars, lam_hat, b, y_bob)
    delta_y, _ = lb_exact.mix_error(st, fe, r, s, stars, lam, b, y, fe.r, fe.s)
    assert np.all(np.isfinite(e))
    for row in range(len(F)):
        for h, (r_x, s_x, b_x, lzb_x, y_x) in enumerate(
            _exact_quantities(st, F[row], int(stars[row]))
        ):
            assert _not_above(s_x, s[row, h], fe.s[h])
            assert _not_above(lzb_x, st.log_zb[stars[row] - 1, h], fe.log_zb[h])
            for c in range(st.d_model):
                assert _not_above(r_x[c], r[row, h, c], fe.r[h, c])
                assert _not_above(b_x[c], b[row, h, c], fe.b[h, c])
                assert _not_above(y_x[c], y[row, h, c], delta_y[row, h, c])
                assert _not_above(y_x[c], y_bob[row, h, c], e[row, h, c] + phi[row, h, c])


def test_libm_and_expit_within_the_assumed_error():
    """The float model's assumptions: exp and log within 8u relative (4 ulp), scipy's expit within
    16u."""
    rng = np.random.default_rng(0)
    xs = np.concatenate(
        [rng.uniform(-800, 800, 3000), rng.normal(0, 5, 3000), [0.0, 709.7, -709.7, -745.0]]
    )
    lam = expit(xs)
    ex = np.exp(np.clip(xs, -745.0, 0.0))
    zs = rng.uniform(1.0, 64.0, 3000)
    logs = np.log(zs)
    old = flint.ctx.prec
    flint.ctx.prec = 200
    try:
        for x, got, e in zip(xs, lam, ex):
            true = 1 / (1 + flint.arb(-float(x)).exp())
            assert abs(flint.arb(float(got)) - true) <= 16 * 2.0**-53 * true + flint.arb(2.0**-1020)
            true_e = flint.arb(float(min(max(x, -745.0), 0.0))).exp()
            assert abs(flint.arb(float(e)) - true_e) <= 8 * 2.0**-53 * true_e + flint.arb(
                2.0**-1072
            )
        for z, got in zip(zs, logs):
            true = flint.arb(float(z)).log()
            assert abs(flint.arb(float(got)) - true) <= 8 * 2.0**-53 * abs(true) + flint.arb(
                2.0**-1074
            )
    finally:
        flint.ctx.prec = old
