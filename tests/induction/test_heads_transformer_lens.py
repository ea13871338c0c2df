"""TransformerLens's own head detector agrees with `analyze heads` (issue 15, point 4).

On constructions exported to TransformerLens (core/transformer_lens_io.to_transformer_lens), TL's
detection patterns and similarity score (transformer_lens.head_detector: get_*_detection_pattern,
compute_head_attention_similarity_score with error_measure "mul", averaged over inputs as
detect_head does for a list of inputs), computed on the patterns of TL's own forward pass, rank the
same head first for each mechanism as induction/heads.py's scores do. Where the definitions are
shared the numbers are equal up to the normalisation, which the test states exactly: TL divides the
attention on the detection pattern by all n rows of the input, headcount averages over the rows
where the mechanism is defined (previous-token: rows i ≥ 1; duplicate-token: rows with an earlier
occurrence of σ_i). TL's induction pattern counts the token after *every* earlier occurrence,
headcount's only the latest (find(i)); docs/ARCHITECTURE.md §8b works an example. Skipped without
the extra."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformer_lens")

import torch  # noqa: E402
from transformer_lens import head_detector as hd  # noqa: E402

from headcount.core.certify.evaluate import attention_patterns  # noqa: E402
from headcount.induction.construction import two_layer_induction  # noqa: E402
from headcount.induction.heads import score_heads  # noqa: E402
from headcount.induction.layouts import task_characters  # noqa: E402
from headcount.interop.transformer_lens_io import to_transformer_lens  # noqa: E402

DETECTORS = {
    "previous_token": hd.get_previous_token_head_detection_pattern,
    "duplicate_token": hd.get_duplicate_token_head_detection_pattern,
    "induction": hd.get_induction_head_detection_pattern,
}
BUILT = {
    "previous_token": (0, 0),
    "duplicate_token": (0, 1),
    "induction": (1, 0),
}  # the construction's heads


def tl_patterns(model, tokens: np.ndarray) -> list[np.ndarray]:
    """TransformerLens's attention patterns [batch heads query key] per layer, padded heads
    dropped."""
    bridge = to_transformer_lens(model)
    with torch.no_grad():
        _, cache = bridge.run_with_cache(torch.from_numpy(tokens))
    return [
        cache[f"blocks.{l}.attn.hook_pattern"].numpy()[:, : len(layer.heads)]
        for l, layer in enumerate(model.layers)
    ]


def tl_scores(patterns: list[np.ndarray], tokens: np.ndarray) -> dict[str, np.ndarray]:
    """{mechanism: TL's "mul" score [input, head]} over every (layer, head) in order."""
    out = {}
    for name, detector in DETECTORS.items():
        rows = []
        for b in range(len(tokens)):
            detection = detector(torch.from_numpy(tokens[b : b + 1]))
            rows.append(
                [
                    hd.compute_head_attention_similarity_score(
                        torch.from_numpy(layer[b, h].copy()),
                        detection_pattern=detection.double(),
                        exclude_bos=False,
                        exclude_current_token=False,
                        error_measure="mul",
                    )
                    for layer in patterns
                    for h in range(layer.shape[1])
                ]
            )
        out[name] = np.array(rows)
    return out


@pytest.mark.parametrize("n, alphabet", [(16, 4), (32, 8)])
def test_tl_detector_ranks_the_same_heads_first_and_agrees_where_definitions_are_shared(
    n, alphabet
):
    model = two_layer_induction(n, alphabet)
    sigma = task_characters("induction", 24, n, alphabet, seed=3)
    theirs_patterns = tl_patterns(model, sigma)
    ours_patterns = attention_patterns(model, sigma)
    for a, b in zip(theirs_patterns, ours_patterns):  # the same attention, to float64 rounding
        assert np.abs(a - b).max() <= 1e-12
    tl = tl_scores(theirs_patterns, sigma)
    ours = score_heads(ours_patterns, sigma)
    heads = [(s.layer, s.head) for s in ours]
    for name, scores in tl.items():
        tl_first = heads[int(np.argmax(scores.mean(axis=0)))]
        ours_first = heads[int(np.argmax([getattr(s, name) for s in ours]))]
        assert tl_first == ours_first == BUILT[name], name

    # Shared definitions, one input at a time: TL's score = (rows where defined / n) × headcount's.
    earlier_same = (sigma[:, :, None] == sigma[:, None, :]) & np.tri(n, k=-1, dtype=bool)[None]
    for b in range(len(sigma)):
        per_input = score_heads([p[b : b + 1] for p in theirs_patterns], sigma[b : b + 1])
        with_duplicate = earlier_same[b].any(axis=1).sum()
        for k, s in enumerate(per_input):
            assert tl["previous_token"][b, k] == pytest.approx(
                (n - 1) / n * s.previous_token, abs=1e-12
            )
            assert tl["duplicate_token"][b, k] == pytest.approx(
                with_duplicate / n * s.duplicate_token, abs=1e-12
            )
            # TL's induction pattern contains find(i) for every row that has one: it counts at least
            # what headcount's does (more where a head attends after an earlier, not the latest,
            # occurrence).
            assert tl["induction"][b, k] >= with_duplicate / n * s.induction - 1e-12


def test_where_the_induction_definitions_differ():
    """A head that attends to the token after the FIRST earlier occurrence scores fully under TL's
    induction pattern and zero under headcount's where the first occurrence is not the latest."""
    sigma = np.array(
        [[0, 1, 0, 1, 0, 1]]
    )  # find = [−, −, 1, 2, 3, 4]; after the first occurrence: 1, 2, 1, 2
    n = sigma.shape[1]
    A = np.zeros((1, 1, n, n))
    A[0, 0, [0, 1], [0, 0]] = 1  # rows without an earlier occurrence: the first position
    A[0, 0, [2, 3, 4, 5], [1, 2, 1, 2]] = 1
    (ours,) = score_heads([A], sigma)
    detection = hd.get_induction_head_detection_pattern(torch.from_numpy(sigma))
    theirs = hd.compute_head_attention_similarity_score(
        torch.from_numpy(A[0, 0]),
        detection_pattern=detection.double(),
        exclude_bos=False,
        exclude_current_token=False,
        error_measure="mul",
    )
    assert theirs == pytest.approx(4 / 6)  # 4 of 6 rows on a detection position
    assert ours.induction == pytest.approx(2 / 4)  # rows 2, 3 hit find(i); rows 4, 5 do not
