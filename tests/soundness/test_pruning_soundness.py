"""Soundness of certified key pruning (core.attention.pruning, issue 34) on the hostile heads of
pruning_families.py: every key pruned scores below its row's top + cut − 1 (exactly, and as a
float), every aggregated cell holds identical keys with its true multiplicity, and the pruned
rigorous bound contains the exact softmax output (Arb) and overlaps the unpruned bound.

Default run: FAST_HEADS heads per family; the slow set (`-m slow`): HEADCOUNT_PRUNING_HEADS
(default 1,000) per family, on two worker processes. Each family must reach its shortcut: keys
pruned, and for "cells" cells aggregated.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter

import numpy as np
import pytest

from tests.soundness.pruning_families import FAMILIES, check_contains, check_lemma

FAST_HEADS = 6
SLOW_HEADS = int(os.environ.get("HEADCOUNT_PRUNING_HEADS", "1000"))


def run_heads(family: str, count: int, seed: int) -> Counter:
    rng = np.random.default_rng(seed)
    counts: Counter = Counter()
    for _ in range(count):
        head = FAMILIES[family](rng)
        counts.update(check_lemma(head))
        counts.update(check_contains(head, seed=int(rng.integers(1 << 30))))
        counts["heads"] += 1
    return counts


def _assert_reached(family: str, counts: Counter) -> None:
    assert counts["pruned"] > 0, f"{family}: no key pruned"
    assert counts["compared"] > 0, f"{family}: no row compared with Arb"
    if family == "cells":
        assert counts["cells"] > 0, "cells: no cell aggregated"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_pruning_prunes_only_keys_below_the_cut(family):
    counts = run_heads(family, FAST_HEADS, 34 + sorted(FAMILIES).index(family))
    _assert_reached(family, counts)


def _slow_part(args: tuple[str, int, int]) -> Counter:
    return run_heads(*args)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_pruning_prunes_only_keys_below_the_cut_many_heads(family):
    half = SLOW_HEADS // 2
    jobs = [(family, half, 3400), (family, SLOW_HEADS - half, 3401)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        parts = pool.map(_slow_part, jobs)
    counts = parts[0] + parts[1]
    print(
        f"\npruning {family}: heads {counts['heads']}, blocks {counts['blocks']}, keys pruned "
        f"{counts['pruned']}, listed {counts['listed']}, cells aggregated {counts['cells']}, exact "
        f"checks {counts['exact_checks']}, rows against Arb {counts['compared']}; 0 failures"
    )
    _assert_reached(family, counts)
