"""minmax/construction.py and certify.py: the Appendix A heads certified on all inputs."""

from __future__ import annotations

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.minmax.brute import verify_brute
from headcount.minmax.certification import certify_minmax, sufficient_condition
from headcount.minmax.construction import (
    beta,
    build_construction,
    compact_code,
    make_code,
    min_head,
    sign_code,
    write_construction,
)
from headcount.minmax.exact_verify import verify_exact_one_head
from headcount.minmax.model import TokenHead, TokenLayer, load_minmax
from headcount.minmax.task import count_multisets


def test_codes():
    for M in (2, 3, 17, 300):
        c = sign_code(M, seed=3)
        d = c.shape[1]
        assert d == max(1, int(np.ceil(8 * np.log(M)))) and set(np.unique(c)) <= {-1, 1}
        g = c @ c.T - np.diag(np.full(M, d))
        assert 2 * (g - np.diag(np.full(M, 10**6))).max() < d
        assert np.array_equal(c, sign_code(M, seed=3))
        k = compact_code(M)
        assert k.shape[1] == int(np.ceil(np.log2(M))) and len({tuple(r) for r in k}) == M


def test_beta_is_dyadic_and_rounded_up():
    for n in (2, 3, 1000, 4096):
        b = beta(n)
        assert b >= np.log(4 * (n - 1)) and b * 2**20 == int(b * 2**20)
        assert np.all(-b * np.arange(1, 4097) == -(int(b * 2**20) * np.arange(1, 4097)) / 2**20)


@pytest.mark.parametrize("M,n", [(2, 2), (2, 6), (6, 2), (3, 3), (5, 4)])
@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("code", ["sign", "compact"])
def test_all_methods_agree_small(M, n, heads, code):
    results = {
        m: certify_minmax(M, n, heads, code, method=m)
        for m in ("exact-histogram", "sufficient-condition", "brute-force")
    }
    for r in results.values():
        assert r.errors_min == 0 and r.errors_max == 0 and r.certified
        assert r.inputs_covered == count_multisets(M, n) and r.value_bits == 0
    ex, sc, bf = results["exact-histogram"], results["sufficient-condition"], results["brute-force"]
    for ex_m, bf_m, sc_m in (
        (ex.margin_min, bf.margin_min, sc.margin_min),
        (ex.margin_max, bf.margin_max, sc.margin_max),
    ):
        assert abs(ex_m - bf_m) < 1e-9
        assert 0 < sc_m <= ex_m + 1e-9  # a lower bound
    assert sc.sufficient_min.weight_at_least_4_5 and sc.sufficient_max.weight_at_least_4_5


def test_large_exact_histogram_and_sufficient_condition_agree():
    ex = certify_minmax(256, 1000, 1, "sign")
    assert ex.method == "exact-histogram" and ex.errors_min == 0 and ex.errors_max == 0
    assert ex.inputs_covered == count_multisets(256, 1000)
    sc = certify_minmax(256, 1000, 1, "sign", method="sufficient-condition")
    assert sc.errors_min == 0 and sc.errors_max == 0
    assert sc.margin_min <= ex.margin_min + 1e-9 and sc.sufficient_min.inner_products_below_half_d
    comp = certify_minmax(256, 1000, 2, "compact")
    assert comp.errors_min == 0 and comp.dim == 16
    assert abs(comp.margin_min - 1.2) < 1e-5  # (2·4/5 − 1)·2 for codes at Hamming distance 1


def test_sufficient_condition_beyond_exact_range():
    r = certify_minmax(1500, 4096, 2, "compact")
    assert r.method == "sufficient-condition" and r.errors_min == 0 and r.errors_max == 0
    js = r.to_json()  # the command's JSON: sizes, then margin, sufficient, errors per task
    assert list(js)[-6:] == [
        "margin_min",
        "sufficient_min",
        "errors_min",
        "margin_max",
        "sufficient_max",
        "errors_max",
    ]
    assert js["sufficient_min"]["holds"] and "reason" not in js["sufficient_min"]


def test_weak_attention_is_caught_by_both():
    # β far too small: W can drop below 1/2; the sufficient condition fails, the exact verifier and
    # brute force find the same verdict
    code = compact_code(4)
    head, clf = min_head(4, 6, code)
    weak = TokenHead(head.scores / 20, head.values)
    sc = sufficient_condition(TokenLayer((weak,)), clf, "min", 6)
    assert not sc.holds and sc.reason == "attention weight on the extreme token not proven > 1/2"
    assert list(sc.to_json())[-1] == "reason" and sc.to_json()["code_gap"] == 2
    ex, bf = verify_exact_one_head(weak, clf, "min", 6), verify_brute(weak, clf, "min", 6)
    assert ex.correct == bf.correct == False  # noqa: E712


@pytest.mark.parametrize(
    "kwargs,msg,param",
    [
        (dict(M=1, n=3, heads=1), "M ≥ 2", None),
        (dict(M=3, n=1, heads=1), "n ≥ 2", None),
        (dict(M=3, n=3, heads=3), "^heads 3 is not available", "heads"),
        (dict(M=3, n=3, heads=1, code="gray"), "^code 'gray' is not available", "code"),
        (dict(M=3, n=3, heads=1, method="guess"), "^method 'guess' is not available", "method"),
    ],
)
def test_bad_inputs(kwargs, msg, param):
    with pytest.raises(InputError, match=msg) as err:
        certify_minmax(**kwargs)
    assert "\n" not in str(err.value) and err.value.param == param


def test_build_and_write_construction(tmp_path):
    two = build_construction(8, 4, 2, code="compact")
    assert two.layer.n_heads == 2 and two.layer.dim == 2 * 3
    one = build_construction(
        8, 4, 1, code="sign", seed=1
    )  # the min head alone, θ = v for both tasks
    head, clf = min_head(8, 4, make_code(8, "sign", seed=1))
    assert one.layer.n_heads == 1 and np.array_equal(one.layer.heads[0].scores, head.scores)
    assert np.array_equal(one.classifier_min.theta, clf.theta) and np.array_equal(
        one.classifier_max.theta, clf.theta
    )
    written = write_construction(tmp_path / "mm.safetensors", 8, 4, 2, code="compact")
    assert written.to_json() == {
        "path": str(tmp_path / "mm.safetensors"),
        "M": 8,
        "n": 4,
        "heads": 2,
        "dim": 6,
        "code": "compact",
    }
    assert load_minmax(tmp_path / "mm.safetensors").layer.n_heads == 2
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="cannot write"):
        write_construction(tmp_path / "file" / "mm.safetensors", 8, 4, 2)
    for bad, needle in ((dict(heads=3), "^heads 3"), (dict(heads=1, code="gray"), "^code 'gray'")):
        with pytest.raises(InputError, match=needle):
            build_construction(8, 4, **bad)
    with pytest.raises(InputError, match="n ≥ 2"):
        build_construction(8, 1, 2)
