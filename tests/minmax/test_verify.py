"""minmax/exact_verify.py: the exact histogram verifier against brute force over all multisets."""

from __future__ import annotations

import numpy as np
import pytest

from headcount.core.model.symbols import BOTTOM
from headcount.minmax.brute import verify_brute
from headcount.minmax.construction import compact_code, min_head, two_head_layer
from headcount.minmax.exact_verify import decide_exact, verify_block_layer, verify_exact_one_head
from headcount.minmax.model import Classifier, TokenHead, TokenLayer
from headcount.minmax.task import all_multisets, min_max


def _random_head(rng):
    """Small integer (or half-integer) weights: many exact ties and near-ties."""
    M, d = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    kind = rng.integers(0, 3)
    if kind == 0:  # arbitrary small integers
        scores = rng.integers(-2, 3, M).astype(float)
        values = rng.integers(-1, 2, (M, d)).astype(float)
        theta = rng.integers(-1, 2, (M, d)).astype(float)
    else:  # near the construction: monotone scores, ±1 codes, θ = v, sometimes perturbed
        b = float(rng.choice([0.0, 0.5, 1.0, 2.0, 3.0]))
        scores = (-1 if kind == 1 else 1) * b * np.arange(1, M + 1) + rng.integers(
            -1, 2, M
        ) * 0.5 * rng.integers(0, 2)
        values = rng.choice([-1.0, 1.0], (M, d))
        theta = values + rng.integers(-1, 2, (M, d)) * rng.integers(0, 2)
    return TokenHead(scores, values), Classifier(theta)


def _check_counterexample(head, clf, task, verdict):
    lst = np.array([verdict.worst_input])
    truth = min_max(lst)[0 if task == "min" else 1][0]
    dec = decide_exact(head, clf, lst)[0]
    assert dec != truth and dec == verdict.decision
    assert len(verdict.worst_input) == verdict.n


def test_exact_verifier_agrees_with_brute_force():
    rng = np.random.default_rng(2024)
    outcomes = {True: 0, False: 0}
    for _ in range(300):
        head, clf = _random_head(rng)
        n = int(rng.integers(2, 6))
        for task in ("min", "max"):
            ex = verify_exact_one_head(head, clf, task, n)
            bf = verify_brute(head, clf, task, n)
            assert ex.correct == bf.correct, (head, clf, task, n)
            assert abs(ex.margin - bf.margin) <= ex.tolerance + bf.tolerance + 1e-12
            outcomes[ex.correct] += 1
            if not ex.correct:
                _check_counterexample(head, clf, task, ex)
                _check_counterexample(head, clf, task, bf)
                X = all_multisets(head.M, n)
                assert bf.errors >= 1 and bf.worst_input in {tuple(r) for r in X}
    assert outcomes[True] >= 20 and outcomes[False] >= 20  # both verdicts exercised


def test_exact_tie_is_wrong():
    # all values equal: every logit ties, every input answers ⊥
    head = TokenHead(np.array([0.0, 1.0, 2.0]), np.ones((3, 2)))
    clf = Classifier(np.ones((3, 2)))
    v = verify_exact_one_head(head, clf, "min", 3)
    assert not v.correct and v.margin == 0.0 and v.decision == BOTTOM
    # a tie that float64 cannot see: e^0·(−2) + 2·e^0·1 = 0 exactly (n = 3, same score)
    head = TokenHead(np.zeros(2), np.array([[1.0], [0.5]]))
    clf = Classifier(
        np.array([[1.0], [-2.0]])
    )  # C = [[1, .5], [−2, −1]]: gap(x=1,y=2,ω=2) = 3 + 2·1.5 > 0
    assert (
        verify_exact_one_head(head, clf, "min", 3).correct
        == verify_brute(head, clf, "min", 3).correct
    )


def test_near_tie_needs_exact_recheck():
    # (1−w)·D_x + w·D_ω = 0 exactly with w = 2/3 (n = 3, equal scores): D_x = 2, D_ω = −1
    head = TokenHead(np.zeros(2), np.array([[0.1], [-0.05]]))
    clf = Classifier(np.array([[20.0], [0.0]]))  # C_1ω − C_2ω = 20·v_ω: D_1 = 2, D_2 = −1
    for verdict in (verify_exact_one_head(head, clf, "min", 3), verify_brute(head, clf, "min", 3)):
        assert (
            not verdict.correct and verdict.worst_input == (1, 2, 2) and verdict.decision == BOTTOM
        )
    ex = verify_exact_one_head(head, clf, "min", 3)
    assert ex.exact_rechecks >= 1


def test_block_layer_reduces_to_one_head():
    model = two_head_layer(5, 4, compact_code(5))
    for task, clf in (("min", model.classifier_min), ("max", model.classifier_max)):
        blk = verify_block_layer(model.layer, clf, task, 4)
        bf = verify_brute(model.layer, clf, task, 4)
        assert (
            blk.correct
            and bf.correct
            and abs(blk.margin - bf.margin) <= blk.tolerance + bf.tolerance
        )
    # a non-block layer is refused
    h = model.layer.heads[0]
    mixed = TokenLayer((h, TokenHead(h.scores, h.values + 1)))
    with pytest.raises(ValueError, match="not block-structured"):
        verify_block_layer(mixed, model.classifier_min, "min", 4)


def test_multi_head_brute_force_finds_errors():
    head, clf = min_head(4, 3, compact_code(4))
    bad = TokenLayer(
        (head, TokenHead(-head.scores, head.values))
    )  # a max head added on the same block
    v = verify_brute(bad, clf, "min", 3)
    assert not v.correct and v.errors >= 1
    _check_counterexample(bad, clf, "min", v)


@pytest.mark.parametrize(
    "call",
    [
        lambda h, c: verify_exact_one_head(h, c, "median", 3),
        lambda h, c: verify_exact_one_head(h, c, "min", 1),
        lambda h, c: verify_brute(h, c, "sum", 3),
        lambda h, c: verify_brute(h, c, "max", 0),
    ],
)
def test_bad_arguments(call):
    head, clf = min_head(3, 3, compact_code(3))
    with pytest.raises(ValueError) as err:
        call(head, clf)
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- issue 11: findings 5 and 6,
# soundness


def _finding5():
    """θ·v overflows float64 (1e200·1e200): the old scan saw ±inf in C, NaN gaps, and called it
    correct."""
    V = np.array([[3.0, 1e200], [1.0, 1e200]])
    return TokenHead(np.zeros(2), V), Classifier(V.copy())


def _finding6():
    """θ_1 − θ_2 rounds in float64 (2^-54 is lost next to 1): the old brute force counted 0 errors
    and the exact verifier died with AssertionError('verifier bug')."""
    theta = np.array([[1.0, 0.0], [2.0**-54, 1 - 2.0**-52]])
    V = np.array([[1.0, 1 + 2.0**-52], [0.0, 1.0]])
    return TokenHead(np.array([0.0, -1e4]), V), Classifier(theta)


@pytest.mark.parametrize(
    "case, task, errors, wrong_lists",
    [
        # C_1ω − C_2ω = 2·v_ω1 > 0 for both tokens: class 1 always wins exactly
        (_finding5, "min", 1, {(2, 2)}),
        (_finding5, "max", 2, {(1, 2), (2, 2)}),
        # ⟨θ_2 − θ_1, v_1⟩ = 2^-54 − 2^-104 > 0: class 2 wins on (1, 1) and (1, 2); v_2 gives class
        # 2
        (_finding6, "min", 2, {(1, 1), (1, 2)}),
        (_finding6, "max", 1, {(1, 1)}),
    ],
)
def test_overflow_and_rounded_difference_are_decided_exactly(case, task, errors, wrong_lists):
    head, clf = case()
    truth = {
        lst: min_max(np.array([lst]))[0 if task == "min" else 1][0]
        for lst in ((1, 1), (1, 2), (2, 2))
    }
    dec = decide_exact(head, clf, np.array(list(truth)))
    assert {lst for lst, d in zip(truth, dec) if d != truth[lst]} == wrong_lists
    bf = verify_brute(head, clf, task, 2)
    assert not bf.correct and bf.errors == errors and bf.worst_input in wrong_lists
    ex = verify_exact_one_head(head, clf, task, 2)
    assert not ex.correct and ex.worst_input in wrong_lists
    for v in (ex, bf):
        _check_counterexample(head, clf, task, v)
        assert np.isfinite(v.margin) and np.isfinite(v.tolerance) and v.margin <= 0


def test_finding5_through_the_cli(tmp_path, capsys):
    import json

    from headcount.cli import main
    from headcount.minmax.model import MinMaxModel, save_minmax

    head, clf = _finding5()
    path = tmp_path / "overflow.safetensors"
    save_minmax(MinMaxModel(TokenLayer((head,)), clf, clf), path)
    for method, errors_min in (("exact", None), ("brute", 1)):
        with pytest.raises(SystemExit) as info:
            main(
                [
                    "minmax",
                    "verify",
                    "--M",
                    "2",
                    "--n",
                    "2",
                    "--model",
                    str(path),
                    "--method",
                    method,
                    "--json",
                ]
            )
            raise SystemExit(0)
        out, err = capsys.readouterr()
        assert (info.value.code or 0) == 0, err
        result = json.loads(
            out
        )  # (lemma6's ℓ overflows to Infinity here: lower_bound.py, not the verdict)
        assert result["counterexample_min"] == [2, 2] and result["errors_min"] == errors_min
        assert all(np.isfinite(result[k]) for k in ("margin_min", "margin_max"))
        assert result["counterexample_max"] in ([1, 2], [2, 2])


def test_underflowing_attention_weight_decides():
    """e^-800 underflows to 0 in float64, yet it breaks the exact tie ⟨θ_1 − θ_2, v_1⟩ = 0 on (1,
    2)."""
    head = TokenHead(np.array([0.0, -800.0]), np.array([[1.0, 0.0], [0.0, 1.0]]))
    clf = Classifier(np.array([[1.0, 1.0], [1.0, 0.0]]))
    assert list(decide_exact(head, clf, np.array([[1, 1], [1, 2], [2, 2]]))) == [BOTTOM, 1, 1]
    for task, errors in (("min", 2), ("max", 3)):
        assert verify_brute(head, clf, task, 2).errors == errors
        assert not verify_exact_one_head(head, clf, task, 2).correct
    # mirrored: now the tiny weight makes min right on (1, 2) and a plain exact check must say so
    clf = Classifier(
        np.array([[1.0, 1.0], [1.0, 2.0]])
    )  # class 2 wins (2, 2), tie on v_1, class 2 by e^-800
    assert list(decide_exact(head, clf, np.array([[1, 1], [1, 2], [2, 2]]))) == [BOTTOM, 2, 2]
    assert verify_brute(head, clf, "max", 2).errors == 1  # only (1, 1): ⊥


def test_subnormal_and_2_pow_minus_1020_weights():
    """The decision hangs on subnormal and 2^-1020-scale value coordinates that float64 absorbs next
    to the shared coordinate (0.5 + 2^-1074 = 0.5): products below 2^-1022 carry absolute error
    terms and the near-ties are decided exactly."""
    tiny = 2.0**-1074
    head = TokenHead(np.zeros(3), np.array([[3 * tiny, 1.0], [tiny, 1.0], [2.0**-1020, 1.0]]))
    clf = Classifier(
        np.array([[-1.0, 0.5], [0.5, 0.5], [1.0, 0.5]])
    )  # logit_i = θ_i0·z_0 + 1/2, z_0 > 0
    lists = all_multisets(3, 2)
    assert set(decide_exact(head, clf, lists)) == {3}  # class 3 by z_0/2 > 0 on every list
    for task, errors in (("min", 5), ("max", 3)):  # right only where the answer is 3
        bf = verify_brute(head, clf, task, 2)
        assert bf.errors == errors and not verify_exact_one_head(head, clf, task, 2).correct
    # the same head with class 3 removed from the running: the tiny coordinate still decides,
    # exactly
    clf = Classifier(np.array([[-1.0, 0.5], [0.5, 0.5], [-2.0, 0.5]]))  # class 2 wins everywhere
    assert set(decide_exact(head, clf, lists)) == {2}


def test_internal_inconsistency_is_an_internal_error(monkeypatch):
    """If the exact re-decision disagrees with the verifier's counterexample, that is a bug:
    InternalError, one line — never an AssertionError traceback and never a verdict."""
    from headcount.common.errors import InternalError
    from headcount.minmax import exact_verify as verify_mod

    head, clf = _finding6()
    monkeypatch.setattr(
        verify_mod, "decide_exact", lambda h, c, x: min_max(x)[0]
    )  # "decides" correctly
    with pytest.raises(InternalError) as err:
        verify_mod.verify_exact_one_head(head, clf, "min", 2)
    assert "\n" not in str(err.value) and "verifier bug" in str(err.value)


def test_internal_error_reaches_the_cli_as_one_line_exit_1(monkeypatch, tmp_path, capsys):
    from headcount.cli import main
    from headcount.minmax import exact_verify as verify_mod
    from headcount.minmax.model import MinMaxModel, save_minmax

    head, clf = _finding6()
    path = tmp_path / "f6.safetensors"
    save_minmax(MinMaxModel(TokenLayer((head,)), clf, clf), path)
    monkeypatch.setattr(verify_mod, "decide_exact", lambda h, c, x: min_max(x)[0])
    with pytest.raises(SystemExit) as info:
        main(["minmax", "verify", "--M", "2", "--n", "2", "--model", str(path), "--json"])
    out, err = capsys.readouterr()
    assert info.value.code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "internal error" in err and "Traceback" not in err


def test_verdicts_and_certificates_say_their_scope():
    from headcount.minmax.certification import certify_minmax
    from headcount.minmax.exact_verify import scope_of

    head, clf = _finding6()
    verdicts = [verify_exact_one_head(head, clf, "min", 3), verify_brute(head, clf, "max", 3)]
    assert [v.scope for v in verdicts] == ["exhaustive", "exhaustive"] and scope_of(
        *verdicts
    ) == "exhaustive"
    for method in ("exact-histogram", "brute-force", "sufficient-condition"):
        assert certify_minmax(6, 3, 2, "compact", method=method).scope == "exhaustive"


# ---------------------------------------------------------------- verify_single_head (`minmax
# verify`)


def test_verify_single_head_result_and_json(tmp_path):
    from headcount.minmax.model import MinMaxModel, ModelSource, save_minmax
    from headcount.minmax.single_head import verify_single_head

    head, clf = min_head(6, 3, compact_code(6))
    model = MinMaxModel(TokenLayer((head,)), clf, clf)
    exact, brute = verify_single_head(model, 6, 3), verify_single_head(model, 6, 3, "brute")
    assert exact.method == "exact-histogram" and brute.method == "brute-force"
    for r in (exact, brute):
        assert r.min.correct and not r.max.correct and r.counterexample("min") is None
        assert (
            r.inputs_covered == 56 and r.scope == "exhaustive" and r.monotone_run.obstructs == "max"
        )
        assert r.lemma6.N == 1 and r.dim == head.dim
    js = exact.to_json()
    assert list(js) == [
        "M",
        "n",
        "heads",
        "dim",
        "method",
        "inputs_covered",
        "errors_min",
        "margin_min",
        "counterexample_min",
        "errors_max",
        "margin_max",
        "counterexample_max",
        "scope",
        "monotone_run",
        "lemma6",
    ]
    assert (
        js["errors_min"] == 0
        and js["errors_max"] is None
        and js["counterexample_max"] == list(exact.max.worst_input)
    )
    assert brute.to_json()["errors_max"] == brute.max.errors > 0
    # the same verdicts through a ModelSource (a file, or a seeded random head)
    save_minmax(model, tmp_path / "m.safetensors")
    from_file = verify_single_head(ModelSource(tmp_path / "m.safetensors"), 6, 3)
    assert from_file.to_json() == js
    rand = verify_single_head(ModelSource(random_seed=0, dim=2), 8, 4)
    assert rand.to_json()["counterexample_min"] == [1, 3, 3, 3]  # golden: minmax-verify-exact


@pytest.mark.parametrize(
    "args, needle",
    [
        (dict(M=1, n=3, source=dict(random_seed=0, dim=2)), "M ≥ 2"),
        (
            dict(M=6, n=3, method="magic", source=dict(random_seed=0, dim=2)),
            "method 'magic' is not available",
        ),
        (dict(M=6, n=3, source=dict()), "give exactly one of model FILE or random_seed R"),
        (dict(M=6, n=3, source=dict(random_seed=0)), "random_seed needs dim d ≥ 1"),
        (dict(M=6, n=3, source=dict(path="no/such/file.safetensors")), "no/such/file.safetensors"),
        (
            dict(M=7, n=3, source="two"),
            "the model has 2 heads: verify is for a single head (use certify for layers)",
        ),
        (dict(M=7, n=3, source="one"), "M 7 does not match the model's M = 6"),
        (
            dict(M=200, n=200, method="brute", source=dict(random_seed=1, dim=2)),
            "allowed up to 2000000",
        ),
    ],
)
def test_verify_single_head_bad_input(args, needle):
    from headcount.common.errors import InputError
    from headcount.minmax.model import MinMaxModel, ModelSource
    from headcount.minmax.single_head import verify_single_head

    source = args.pop("source")
    if source == "two":
        source = two_head_layer(6, 3, compact_code(6))
    elif source == "one":
        head, clf = min_head(6, 3, compact_code(6))
        source = MinMaxModel(TokenLayer((head,)), clf, clf)
    else:
        source = ModelSource(**source)
    with pytest.raises(InputError) as err:
        verify_single_head(source, **args)
    assert needle in str(err.value) and "\n" not in str(err.value)
