"""Training runs that also certify what they trained: the k-hop experiments' runner.

run_khop_certified(config) = train.run_config(config) with the model exported, then
khop_certificates of that model at every hop count, stored with the run's metrics. A built-in sweep
runner (learn/sweep/runners.py names it KHOP_RUNNER), imported only in the worker that runs it. The
exported model is deleted afterwards unless the config names `out` — which only
runners.keeping_models adds (a sweep file may never set it): then it is kept there, as the default
runner keeps it.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.core.certify import certify_model, emulate
from headcount.core.model import Transformer, load_model
from headcount.core.numbers import FLOAT64
from headcount.induction import task as itask
from headcount.induction.layouts import bind_layout, lay_out, layout_reference

KHOP_CERTIFY_SAMPLES = 64  # sampled character strings, shared by every hop count
KHOP_CERTIFY_SEED = (
    20_240_602  # fixed, like the held-out sets: every model is certified on the same inputs
)


def khop_certificates(
    model: Transformer, n: int, alphabet: int, hops: int, samples: int = KHOP_CERTIFY_SAMPLES
) -> dict[str, dict[str, Any]]:
    """Per hop count k = 1..hops (keys "1".."hops"): core.certify.certify.certify_model of the
    exported k-hop model in the hop-prefix layout (induction.layouts: the hop token first, position
    0 not scored) on `samples` character strings with no two adjacent symbols equal — the
    distribution the model was trained on — drawn once (seeded by KHOP_CERTIFY_SEED, n and alphabet)
    and shared by every k. Each entry: float64 `errors` over the `positions` scored,
    `precision_bits` (smallest fixed:p not proven wrong; None when none ≤ 60 is), `certified` (no
    float64 error and every position proven right at that p), `uncertified_positions`,
    `dtypes_exact`. Scope: sampled. Where the float64 model errs on a sample no precision can be
    certified: the search is skipped there (precision_bits, uncertified_positions and dtypes_exact
    None, certified False). (induction.certification.certify_induction's input families include
    repeated symbols, which a k-hop model never saw: every trained model errs there.)"""
    rng = np.random.default_rng([KHOP_CERTIFY_SEED, n, alphabet])
    sigma = itask.no_adjacent_repeats(rng, samples, n, alphabet)
    out = {}
    for k in range(1, hops + 1):
        bound = bind_layout(model, "hop-prefix", n, alphabet, k)
        tokens = lay_out(sigma, "hop-prefix", alphabet, k)
        errors = int(
            (emulate(bound, tokens, FLOAT64)[:, 1:] != itask.induction_targets(sigma, k)).sum()
        )
        if errors:
            out[str(k)] = {
                "errors": errors,
                "positions": sigma.size,
                "precision_bits": None,
                "certified": False,
                "uncertified_positions": None,
                "dtypes_exact": None,
            }
            continue

        def stream(tokens: np.ndarray = tokens) -> Iterator[tuple[str, np.ndarray]]:
            yield "no_adjacent_repeats", tokens

        cert = certify_model(bound, stream, layout_reference("hop-prefix", k))
        out[str(k)] = {
            "errors": cert.errors,
            "positions": cert.positions_checked,
            "precision_bits": cert.precision_bits,
            "certified": cert.certified,
            "uncertified_positions": cert.uncertified_positions,
            "dtypes_exact": list(cert.dtypes_exact),
        }
    return out


def run_khop_certified(config: dict[str, Any]) -> dict[str, Any]:
    """The k-hop experiments' runner: train.run_config(config) with the model exported, then
    `certificates_by_hop` (khop_certificates of that model at the run's n, alphabet, hops) and
    `certify_seconds` added to the run's JSON. Without `out` (or with None) the model goes to a
    temporary file, deleted (model_path None); with `out` (runners.keeping_models) it is written
    there and kept (model_path: that path)."""
    from headcount.learn.train import (
        run_config,
    )  # in the worker only: the parent never imports torch

    if config.get("task") != "khop":
        raise InputError(
            f"the k-hop certified runner runs task 'khop', not {str(config.get('task'))[:40]!r}"
        )
    keep = config.get("out") is not None
    if keep:
        run = run_config(dict(config))
        model = load_model(run.model_path)
    else:
        with tempfile.TemporaryDirectory(prefix="headcount-khop-") as tmp:
            run = run_config({**config, "out": str(Path(tmp) / "model.safetensors")})
            model = load_model(run.model_path)
    began = time.perf_counter()
    certificates = khop_certificates(model, run.n, run.alphabet, run.hops)
    return {
        **run.to_json(),
        "model_path": run.model_path if keep else None,
        "certificates_by_hop": certificates,
        "certify_seconds": time.perf_counter() - began,
    }
