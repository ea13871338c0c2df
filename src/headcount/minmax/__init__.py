"""Min and max of a list with one attention layer (seed 004 §3.1, §4, Appendix A; spec/minmax.md).

The public face (the contract of the Python API; everything else here may move):

    construct(M, n, heads)       the Appendix-A construction: two heads (min and max), or one
    certify(M, n, heads)         build it and certify both classifiers on every list in [M]^n
    verify(model, M, n)          does one head + two classifiers compute min and max? (exact)
    counterexamples(model)       Theorem 1 as a program: lists a one-head model gets wrong
    theorem1_chain(model, n)     Theorem 1's proof as checked objects: duals, Lemma 6's process,
                                 the inequality proven — or the input the head gets wrong
    longest_monotone_run(head)   Lemma 1's monotone run of attention weights
    solve(x)                     the reference (min, max) of each list
    MinMaxModel, TokenHead, TokenLayer, Classifier   the model kinds

task.py          lists over [M], multisets, histograms, the min/max reference; the size rule
                 M, n ≥ 2
model.py         token-level heads (TokenHead, TokenLayer), classifiers (ties ⇒ ⊥), files,
                 ModelSource
construction.py  the Appendix-A heads and codes; the model `minmax construct` writes
weight_form.py   the min/max layer as an exact weight-form Transformer
certification.py certify_minmax: the construction's certificate (exact-histogram, sufficient
                 condition or brute force)
single_head.py   verify_single_head: does a given head + two classifiers compute min and max
lower_bound.py   Theorem 1 executable: monotone runs (Lemma 1), Lemma-6 quantities, confirmed
                 counterexamples
search.py        a search for one head doing both tasks (evidence, not a proof)
theorem1/        Theorem 1's proof as a chain of checked objects (duals, Lemma 6, Facts 1–2),
                 its independent re-check, and heads on which it runs to its end
exact_verify.py  the exact one-head verifier (histogram linearity), exact decisions on given
                 lists, block reduction
brute.py         brute force over every multiset (verify_brute) and its resource bounds
float_bounds.py  the verifiers' rigorous float64 error bounds
exact_signs.py   exact signs of Σ c·e^a (rationals, Lindemann–Weierstrass, arb balls) for
                 near-ties
"""

from headcount.minmax.certification import certify_minmax as certify
from headcount.minmax.construction import build_construction as construct
from headcount.minmax.lower_bound import longest_monotone_run
from headcount.minmax.lower_bound import one_head_counterexamples as counterexamples
from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer
from headcount.minmax.single_head import verify_single_head as verify
from headcount.minmax.task import min_max as solve
from headcount.minmax.theorem1 import Theorem1Chain, theorem1_chain

__all__ = [
    "Classifier",
    "MinMaxModel",
    "TokenHead",
    "Theorem1Chain",
    "TokenLayer",
    "certify",
    "construct",
    "counterexamples",
    "longest_monotone_run",
    "solve",
    "theorem1_chain",
    "verify",
]
