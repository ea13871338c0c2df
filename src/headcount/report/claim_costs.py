"""What each claim cost when it was last measured, by scale: the seconds `headcount reproduce` took
for it on the reference machine (2 CPU cores, idle), read off a run's summary.json. The progress
bar weighs each claim by its cost, so its ETA is the recorded time left at this machine's pace;
the per-claim lines say "about N s". Claims share work through the run's cache (a learning
experiment runs for the first claim that needs it), so a claim run alone with `only` may cost more
than recorded here. A claim without a recorded cost (a new one, or the full scale, not measured
claim by claim) weighs one second and says nothing about its time.
"""

from __future__ import annotations

# measured by `headcount reproduce` (quick) on 2 idle cores, 2026-12-03: claims[].seconds
# (learning.khop.families measured alone after the other 22, its GPT-2 runs already in the database;
# minmax.theorem1.chain, boolean.minimal_dimension, minmax.minimal_resources and
# induction.one_layer.minimal alone; boolean.minimal_dimension re-measured after its 4× speed-up)
RECORDED_SECONDS: dict[str, dict[str, float]] = {
    "quick": {
        "boolean.xor.DH_iff": 3.3,
        "boolean.symmetric.threshold_degree": 2.12,
        "boolean.frontier": 63.37,
        "induction.two_layer.exhaustive": 1.41,
        "induction.two_layer.large_n": 6.24,
        "induction.two_layer.constant_dim": 0.01,
        "induction.two_layer.precision_log_n": 1.64,
        "induction.one_layer.n_log_n": 2.53,
        "induction.separation": 1.52,
        "induction.index.protocol": 5.59,
        "induction.index.refute": 0.98,
        "induction.index.error_floor": 31.71,
        "induction.khop.construction": 56.04,
        # its certificates' seconds, measured alone on a loaded machine (3 jobs on 2 cores; the
        # khop experiment it reports is shared with learning.khop.depth in a whole run)
        "induction.khop.floor": 48.8,
        "induction.khop.pointer_rank": 3.2,
        "induction.heads.mechanism": 0.02,
        "induction.khop.mechanism": 0.74,
        "learning.khop.depth": 0.01,
        "learning.khop.gpt2": 49.97,
        "learning.induction.depth": 0.01,
        "learning.minmax.heads": 27.42,
        "learning.xor.phase": 0.01,
        "minmax.two_heads.certified": 3.84,
        "minmax.one_head.obstructed": 2.32,
        "learning.khop.families": 119.5,
        "minmax.theorem1.chain": 12.12,
        "boolean.minimal_dimension": 1.68,
        "induction.one_layer.minimal": 2.6,
        "minmax.minimal_resources": 4.7,
    },
}


def recorded_seconds(claim_id: str, scale: str) -> float | None:
    """The recorded cost of `claim_id` at `scale` in seconds, or None when none is recorded."""
    return RECORDED_SECONDS.get(scale, {}).get(claim_id)
