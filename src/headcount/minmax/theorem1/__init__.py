"""Theorem 1 of seed 004 (one head cannot support both min and max with small resources) as a chain
of checked objects: Lemma 1's monotone run, Lemmas 2–5's dual vectors, Lemma 6's Figure-1 process
with Facts 1–2, and the inequality they prove — or the input the head gets wrong.

    theorem1_chain(model, n=None, bits=None) -> Theorem1Chain

chain.py        the orchestrator and its JSON (every object, exact numbers as text)
duals.py        Lemmas 2–5: the duals λ_i / μ_i in exact rationals, or the wrong input
triangular.py   Lemma 6, Facts 1–2, the Figure-1 process (A_i, B_i, C_i) in exact arithmetic
recheck.py      every object of a chain's JSON re-verified from the model, independently
witnesses.py    uniform-attention heads on which the chain runs to its end
"""

from headcount.minmax.theorem1.chain import TaskChain, Theorem1Chain, theorem1_chain
from headcount.minmax.theorem1.recheck import recheck_chain
from headcount.minmax.theorem1.triangular import BrokenChain, TriangularChain, triangular_chain

__all__ = [
    "BrokenChain",
    "TaskChain",
    "Theorem1Chain",
    "TriangularChain",
    "recheck_chain",
    "theorem1_chain",
    "triangular_chain",
]
