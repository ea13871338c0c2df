"""The torch backend of the blocked attention kernels (core.attention.torch_backend) against the
NumPy ones: the float pass to the last bits, the rigorous pass's soundness (exact softmax of points
in the boxes, in Arb balls), tightness, hostile boxes and work counts, identical certificates, the
platform checks, the choice of backend and device (library and command line), and the chunk threads.
CUDA runs only where torch sees a GPU."""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import pytest
import torch

from headcount.common.errors import InputError, InternalError
from headcount.core.attention import (
    ATTENTION_BLOCK,
    attend,
    attention_backend,
    attention_bounds,
    attention_work,
    check_torch_libm,
    reset_attention_work,
    use_backend,
)
from headcount.core.attention import torch_backend as torch_attention
from headcount.core.attention.settings import current_backend
from headcount.core.attention.torch_backend import NO_CUDA, torch_attend, torch_attention_bounds
from headcount.core.certify.evaluate import certified_predict, emulate
from headcount.core.numbers.interval import gamma
from headcount.core.numbers.precision import FLOAT64, Precision, fixed
from headcount.induction import task
from headcount.induction.certification import certify_induction
from headcount.induction.construction import two_layer_induction
from headcount.induction.multihop.construction import khop_construction
from tests.cli_run import refused, run
from tests.core.test_blocked import assert_holds_exact_softmax, random_qkv

CUDA = torch.cuda.is_available()
DEVICES = ["cpu"] + (["cuda"] * CUDA)
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device")


def float_tolerance(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> float:
    """How far two float64 passes may differ: their scores come from different BLAS kernels (each
    within γ_{d+1}·Σ|q_i k_i| of exact), which shifts every weight by that relative amount after
    exp, plus the sums' rounding (blocked vs dense: 16 ulp of max|v|)."""
    score_error = gamma(q.shape[-1] + 1) * float((np.abs(q) @ np.abs(np.swapaxes(k, -1, -2))).max())
    return (4 * score_error + 16 * np.finfo(float).eps) * float(np.abs(v).max())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mask", ["causal", "full"])
@pytest.mark.parametrize("scale", [0.1, 3.0, 60.0, 1e4])  # flat to sharp: dense and sparse blocks
def test_float_pass_agrees_with_numpy_to_the_last_bits(device, mask, scale):
    q, k, v = random_qkv(1, 2 * ATTENTION_BLOCK + 77, scale)
    numpy_out = attend(q, k, v, mask, FLOAT64)
    with use_backend("torch", device):
        out = torch_attend(q, k, v, mask, FLOAT64)
        assert np.array_equal(attend(q, k, v, mask, FLOAT64), out)  # attend dispatches to it
    assert out.shape == numpy_out.shape and out.dtype == np.float64
    assert np.max(np.abs(out - numpy_out)) <= float_tolerance(q, k, v)


def test_float_pass_scale_and_leading_axes():
    q, k, v = random_qkv(9, ATTENTION_BLOCK + 30, 2.0, batch=6)
    q4, k4, v4 = (a.reshape(2, 3, *a.shape[1:]) for a in (q, k, v))
    with use_backend("torch"):
        out = torch_attend(
            q4, k4, v4, "causal", fixed(8), scale=0.125
        )  # fixed:p computes in float64
    assert out.shape == (2, 3, ATTENTION_BLOCK + 30, 3)
    expected = attend(q, k, v, "causal", FLOAT64, scale=0.125).reshape(out.shape)
    assert np.max(np.abs(out - expected)) <= float_tolerance(q * 0.125, k, v)


@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16"])
def test_emulated_dtypes_run_the_numpy_kernels(kind):
    q, k, v = (a.astype(np.float32) for a in random_qkv(2, ATTENTION_BLOCK + 5, 3.0))
    prec = Precision(kind)
    with use_backend("torch"):
        out = torch_attend(q, k, v, "causal", prec)
        assert current_backend() == ("torch", "cpu")  # the fallback's numpy context ended with it
    assert np.array_equal(out, attend(q, k, v, "causal", prec))


def test_small_inputs_take_the_dense_numpy_pass():
    q, k, v = random_qkv(3, ATTENTION_BLOCK, 5.0)
    with use_backend("torch"):
        small = attend(q, k, v, "causal", FLOAT64)
    assert np.array_equal(small, attend(q, k, v, "causal", FLOAT64))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mask", ["causal", "full"])
@pytest.mark.parametrize("scale", [0.5, 30.0, 3e3])
def test_rigorous_pass_contains_the_exact_softmax_of_points_in_the_boxes(device, mask, scale):
    n = ATTENTION_BLOCK + 40
    q, k, v = random_qkv(4, n, scale, batch=1)
    rng = np.random.default_rng(5)
    radius = [np.abs(rng.standard_normal(a.shape)) * 1e-9 * np.abs(a).max() for a in (q, k, v)]
    with use_backend("torch", device):
        z_mid, z_rad = torch_attention_bounds((q, radius[0]), (k, radius[1]), (v, radius[2]), mask)
        assert np.array_equal(
            attention_bounds((q, radius[0]), (k, radius[1]), (v, radius[2]), mask)[1], z_rad
        )
    assert np.isfinite(z_rad).all()
    assert_holds_exact_softmax((q, k, v), radius, (z_mid, z_rad), mask, rng)


@pytest.mark.parametrize("scale", [0.5, 30.0, 3e3])
def test_rigorous_pass_is_as_tight_as_numpy_and_does_the_same_work(scale):
    n = 2 * ATTENTION_BLOCK + 5
    q, k, v = random_qkv(6, n, scale)
    boxes = [(a, np.abs(a) * 1e-12) for a in (q, k, v)]
    reset_attention_work()
    mid, rad = attention_bounds(*boxes, "causal")
    numpy_work = attention_work()
    reset_attention_work()
    with use_backend("torch"):
        t_mid, t_rad = torch_attention_bounds(*boxes, "causal")
    assert attention_work() == numpy_work  # the same blocks dense / sparse, the same near keys
    assert np.all(np.abs(mid - t_mid) <= rad + t_rad)
    assert np.all(t_rad <= 1.01 * rad + 1e-300) and np.all(rad <= 1.01 * t_rad + 1e-300)


def test_hostile_boxes_are_unbounded_where_numpy_says_so():
    n = ATTENTION_BLOCK + 9
    q, k, v = random_qkv(7, n, 4.0, batch=1)
    zeros = [np.zeros_like(a) for a in (q, k, v)]
    nan_query = np.where(np.arange(n)[None, :, None] == 3, np.nan, q)
    for hostile in (
        (q * 1e300, k * 1e300),
        (nan_query, k),
        (q * 2.0**45, k),
    ):  # overflow, NaN, > 2^40
        boxes = (hostile[0], zeros[0]), (hostile[1], zeros[1]), (v, zeros[2])
        with np.errstate(all="ignore"):
            numpy_rad = attention_bounds(*boxes, "causal")[1]
            with use_backend("torch"):
                rad = torch_attention_bounds(*boxes, "causal")[1]
        assert not np.isnan(rad).any()
        assert np.array_equal(np.isinf(rad), np.isinf(numpy_rad)) and np.isinf(rad).any()
    unbounded = np.where(
        np.arange(n)[None, :, None] == 5, np.inf, zeros[1]
    )  # one key's box is unbounded
    with use_backend("torch"):
        rad = torch_attention_bounds((q, zeros[0]), (k, unbounded), (v, zeros[2]), "causal")[1]
    assert np.isinf(rad[0, 5:]).all() and np.isfinite(rad[0, :5]).all()


@pytest.fixture
def one_torch_thread():
    """One intra-op thread for torch while the test runs (restored after): torch's OpenMP team waits
    at barriers for descheduled threads when other jobs load the machine (3–15× slower here, same
    answers). The library itself sets nothing global."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _without_seconds(cert) -> dict:
    out = cert.to_json()
    out.pop("seconds")
    return out


CERTIFIED = [(64, 64, 8), (256, 64, 8), (8, 2, None)]  # (n, alphabet, samples); None: exhaustive


def _certificates_agree(build, n: int, S: int, **kw) -> None:
    numpy_cert = _without_seconds(certify_induction(build(), n, S, **kw))
    with use_backend("torch", "cpu"):
        torch_cert = _without_seconds(certify_induction(build(), n, S, **kw))
    assert torch_cert == numpy_cert and numpy_cert["certified"]


@pytest.mark.parametrize("n,S,samples", CERTIFIED)
def test_certificates_agree(n, S, samples, one_torch_thread):
    _certificates_agree(lambda: two_layer_induction(n, S), n, S, samples=samples)


def test_khop_certificates_agree(one_torch_thread):
    _certificates_agree(
        lambda: khop_construction(64, 8, 4), 64, 8, samples=32, hops=4, dtypes=False
    )


@pytest.mark.slow
def test_certificates_agree_at_n_1024(
    one_torch_thread,
):  # the float pass runs on torch too (n > one block)
    _certificates_agree(lambda: two_layer_induction(1024, 16), 1024, 16, samples=4)


def test_chunks_follow_the_backend(monkeypatch):
    """Under the torch backend certified_predict and emulate run their chunks one at a time in the
    calling thread (torch's own threads do the work; two thread teams would compete for the cores),
    every chunk on the torch kernels, and the answers are numpy's."""
    n, S = ATTENTION_BLOCK + 64, 16
    model = two_layer_induction(n, S)
    tokens = np.random.default_rng(0).integers(0, S, size=(40, n))
    threads: set[int] = set()
    kernels = {
        "bounds": torch_attention.torch_attention_bounds,
        "float": torch_attention.torch_attend,
    }

    def spy(name):
        def call(*args, **kwargs):
            threads.add(threading.get_ident())
            return kernels[name](*args, **kwargs)

        return call

    monkeypatch.setattr(torch_attention, "torch_attention_bounds", spy("bounds"))
    monkeypatch.setattr(torch_attention, "torch_attend", spy("float"))
    expected = (emulate(model, tokens), *certified_predict(model, tokens, fixed(12)))
    with use_backend("torch"):
        got = (emulate(model, tokens), *certified_predict(model, tokens, fixed(12)))
    assert threads == {threading.get_ident()}
    assert all(np.array_equal(a, b) for a, b in zip(got, expected))
    assert got[2].all() and np.array_equal(got[0], task.induction_targets(tokens))


# --- the platform checks
# -----------------------------------------------------------------------------


def test_the_libm_check_passes_here_and_refuses_an_inaccurate_exp(monkeypatch):
    check_torch_libm("cpu")
    assert "cpu" in torch_attention._checked
    monkeypatch.setattr(torch_attention, "_checked", set())
    exact_exp = torch.exp
    monkeypatch.setattr(torch, "exp", lambda x: exact_exp(x) * (1 + 2.0**-48))  # 32 ulp off
    with pytest.raises(
        InternalError, match=r"torch\.<lambda>\(.*\) = .* on cpu is off by more than 4 ulp"
    ):
        check_torch_libm("cpu")
    q, k, v = random_qkv(8, 20, 1.0, batch=1)
    with use_backend("torch"), pytest.raises(InternalError):  # never a bound on such a device
        torch_attention_bounds(*[(a, np.zeros_like(a)) for a in (q, k, v)], "causal")
    assert torch_attention._checked == set()


def test_the_libm_check_covers_the_multithreaded_loop(monkeypatch):
    """An exp that is wrong only on large tensors (torch's multithreaded loop, which the kernels
    run) is caught too, and the float pass refuses the device as the rigorous pass does (issue 27: a
    process's first multithreaded exp was seen 3·10⁻⁹ off; torch_attention._warm_up runs one before
    the check)."""
    monkeypatch.setattr(torch_attention, "_checked", set())
    exact_exp = torch.exp

    def exp(x):
        y = exact_exp(x)
        return y * (1 + 2.0**-28) if x.numel() >= torch_attention.PARALLEL_SIZE else y

    monkeypatch.setattr(torch, "exp", exp)
    with pytest.raises(InternalError, match=r"on cpu \(multithreaded\) is off by more than 4 ulp"):
        check_torch_libm("cpu")
    q, k, v = random_qkv(8, 2 * ATTENTION_BLOCK + 1, 1.0, batch=1)
    with use_backend("torch"), pytest.raises(InternalError):
        torch_attend(q, k, v, "causal", FLOAT64)


def test_the_arithmetic_check_refuses_flushed_subnormals():
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush subnormals")
    try:
        with pytest.raises(InternalError, match="subnormal"):
            torch_attention._check_arithmetic("cpu")
    finally:
        torch.set_flush_denormal(False)
    torch_attention._check_arithmetic("cpu")


# --- choosing the backend
# -----------------------------------------------------------------------------


def test_attention_backend_checks_its_input():
    with attention_backend("torch", "cpu"):
        assert current_backend() == ("torch", "cpu")
    with attention_backend("numpy", "auto"):
        assert current_backend() == ("numpy", "cpu")
    with attention_backend("torch", "auto"):
        assert current_backend() == ("torch", "cuda" if CUDA else "cpu")
    for backend, device, message, at_fault in (
        ("Torch", "cpu", "{backend} 'Torch' is not available: use numpy or torch", "backend"),
        ("torch", "gpu", "{device} 'gpu' is not available: use cpu, cuda or auto", "device"),
        (
            "numpy",
            "cuda",
            "{device} cuda needs {backend} torch (the numpy kernels run on the cpu)",
            "device",
        ),
    ):
        with pytest.raises(InputError) as refusal, attention_backend(backend, device):
            pass
        # the parameters named as Python has them, and as the command line spells them (its flags)
        assert str(refusal.value) == message.format(backend="backend", device="device")
        assert refusal.value.render(lambda name: f"--{name}") == message.format(
            backend="--backend", device="--device"
        )
        assert refusal.value.param == at_fault
    assert current_backend() == ("numpy", "cpu")


@pytest.mark.skipif(CUDA, reason="a CUDA device is present")
def test_cuda_without_a_gpu_is_refused():
    with (
        pytest.raises(InputError, match=f"^{re.escape(NO_CUDA)}$"),
        attention_backend("torch", "cuda"),
    ):
        pass
    q, k, v = random_qkv(8, ATTENTION_BLOCK + 1, 1.0, batch=1)
    with (
        use_backend("torch", "cuda"),
        pytest.raises(InputError, match=re.escape(NO_CUDA)),
    ):  # the library API too
        attend(q, k, v, "causal", FLOAT64)


CERTIFY = ("induction", "certify", "--layers", "2", "--n", "8", "--alphabet", "2", "--json")


def test_cli_backend_and_device(capsys):
    code, out, _ = run(capsys, *CERTIFY)
    numpy_cert = json.loads(out)
    code_t, out_t, _ = run(capsys, *CERTIFY, "--backend", "torch", "--device", "cpu")
    torch_cert = json.loads(out_t)
    assert code == code_t == 0 and numpy_cert["certified"]
    for cert in (numpy_cert, torch_cert):
        cert.pop("seconds")
    assert torch_cert == numpy_cert
    refused(capsys, *CERTIFY, "--backend", "jax", needles=("--backend 'jax'", "use numpy or torch"))
    refused(
        capsys, *CERTIFY, "--device", "gpu", needles=("--device 'gpu'", "use cpu, cuda or auto")
    )
    refused(capsys, *CERTIFY, "--device", "cuda", needles=("needs --backend torch",))
    if not CUDA:
        line = refused(capsys, *CERTIFY, "--backend", "torch", "--device", "cuda")
        assert line == f"error: {NO_CUDA}"


# --- CUDA
# ---------------------------------------------------------------------------------------------


@needs_cuda
def test_cuda_certificate_agrees_with_numpy():
    n, S = 2 * ATTENTION_BLOCK + 64, 16
    model = two_layer_induction(n, S)
    tokens = np.random.default_rng(1).integers(0, S, size=(8, n))
    expected = (emulate(model, tokens), *certified_predict(model, tokens, fixed(12)))
    with attention_backend("torch", "cuda"):
        check_torch_libm("cuda")
        got = (emulate(model, tokens), *certified_predict(model, tokens, fixed(12)))
    assert all(np.array_equal(a, b) for a, b in zip(got, expected))
