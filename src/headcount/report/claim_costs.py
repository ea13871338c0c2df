"""What each claim cost when it was last measured, by scale: the seconds `headcount reproduce` took
for it on the reference machine (2 CPU cores, idle), read off a run's summary.json. The progress
bar weighs each claim by its cost, so its ETA is the recorded time left at this machine's pace;
the per-claim lines say "about N s". Claims share work through the run's cache (a learning
experiment runs for the first claim that needs it), so a claim run alone with `only` may cost more
than recorded here. A claim without a recorded cost (a new one, or the full scale, not measured
claim by claim) weighs one second and says nothing about its time.
"""

from __future__ import annotations

# measured by `headcount reproduce` (quick) on 2 idle cores, 2026-12-02: claims[].seconds
RECORDED_SECONDS: dict[str, dict[str, float]] = {
    "quick": {
        "boolean.xor.DH_iff": 5.08,
        "boolean.symmetric.threshold_degree": 3.53,
        "boolean.frontier": 115.04,
        "induction.two_layer.exhaustive": 2.81,
        "induction.two_layer.large_n": 12.76,
        "induction.two_layer.constant_dim": 0.01,
        "induction.two_layer.precision_log_n": 3.04,
        "induction.one_layer.n_log_n": 4.39,
        "induction.separation": 2.82,
        "induction.index.protocol": 11.02,
        "induction.index.refute": 2.01,
        "induction.index.error_floor": 71.72,
        "induction.khop.construction": 131.98,
        "induction.heads.mechanism": 0.05,
        "induction.khop.mechanism": 2.16,
        "learning.khop.depth": 0.01,
        "learning.khop.gpt2": 103.48,
        "learning.induction.depth": 0.01,
        "learning.minmax.heads": 45.57,
        "learning.xor.phase": 0.01,
        "minmax.two_heads.certified": 7.92,
        "minmax.one_head.obstructed": 3.58,
    },
}


def recorded_seconds(claim_id: str, scale: str) -> float | None:
    """The recorded cost of `claim_id` at `scale` in seconds, or None when none is recorded."""
    return RECORDED_SECONDS.get(scale, {}).get(claim_id)
