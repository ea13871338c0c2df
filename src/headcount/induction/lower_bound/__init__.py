"""Seed 000's one-layer lower bound (§3, Appendix A) as a program: the INDEX reduction run on any
one-layer model, and a refuter that turns its pigeonhole step into a search for a wrong input.

Modules (import from them: `from headcount.induction.lower_bound.refute import refute`):
    setup         what the reduction reads from a model at (k, p), the vectorized steps, and the
                  model an INDEX check runs on (load_index_model; the seeded random one-layer table
                  model, random_index_model)
    resources     the resource bounds checked before any work: the chunk sizes, the memory of the
                  setup and the work limits of check_protocol and refute
    protocol      Alice's message, Bob's decoding, check_protocol (Bob versus the model on every
                  (f, i*))
    error_bounds  proven float64 error bounds and the exact re-decision of disagreements (rounding
                  ties)
    floor         the INDEX error floor δ* = h⁻¹(1 − b/k) and the check of a measured error against
                  it
    refute        the refuter (collision, exhaustive, guided random + local search), one
                  search-state class
    minimal       the smallest h·m·p of a stated one-layer family (packed readout), certified
                  exhaustively, every smaller member refuted, beside the INDEX bound
    results       the typed results: ProtocolCheck (check_protocol) and Refutation with what each
                  search method covered (refute)

check_protocol and refute take a model or where it comes from (induction/source.py's ModelSource: a
one-layer model file or a seeded random table model).
"""
