"""Min and max of a list with one attention layer (seed 004 §3.1, §4, Appendix A; spec/minmax.md).

task.py          lists over [M], multisets, histograms, the min/max reference; the size rule
                 M, n ≥ 2
model.py         token-level heads (TokenHead, TokenLayer), classifiers (ties ⇒ ⊥), files,
                 ModelSource
construction.py  the Appendix-A heads and codes; the model `minmax construct` writes
weight_form.py   the min/max layer as an exact weight-form Transformer
certify.py       certify_minmax: the construction's certificate (exact-histogram, sufficient
                 condition or brute force)
single_head.py   verify_single_head: does a given head + two classifiers compute min and max
lower_bound.py   Theorem 1 executable: monotone runs (Lemma 1), Lemma-6 quantities, confirmed
                 counterexamples
search.py        a search for one head doing both tasks (evidence, not a proof)
verify.py        the exact one-head verifier (histogram linearity), exact decisions on given
                 lists, block reduction
brute.py         brute force over every multiset (verify_brute) and its resource bounds
float_bounds.py  the verifiers' rigorous float64 error bounds
exact_signs.py   exact signs of Σ c·e^a (rationals, Lindemann–Weierstrass, arb balls) for
                 near-ties
"""
