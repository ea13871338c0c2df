"""Symmetric Boolean functions with H heads and a degree-D polynomial readout (spec/boolean.md).

Seed 004 §3.2 and §5 made executable. The public face (the contract of the Python API; everything
else here may move):

    construct(function, n, D, H)   Theorem 3's model, certified exactly on all 2^n inputs
    check(model, function)         any model: exact verdict, Theorem 2's R, a wrong input
    certify(layer, readout, F)     the exact certificate of a layer + readout against F(0..n)
    threshold_degree(function, n)  the threshold degree of a function or truth table (LP + dual)
    frontier(function, n, D, H)    the best accuracy below D·H = T, reached exactly
    theorem2_polynomial(layer, readout, n)   R of degree ≤ D·H with sign R = the model
    symmetric_values(name, n)      F(0..n) of a named symmetric function ("xor", "maj", …)
    BooleanModel, BooleanHead, BooleanLayer, Readout   the model kinds (exact rationals)

The modules, in the shape every scenario shares:

- ``task``          named symmetric functions F(0..n), sign changes (= threshold degree)
- ``threshold``     threshold degree of any truth table by LP (HiGHS): verified witness + exact dual
- ``model``         exact rational heads, layers, polynomial readouts, BooleanModel; exact and
                    float64 evaluation
- ``model_file``    the file format: save_boolean / load_boolean (safetensors + exact rationals,
                    bounded)
- ``construction``  Theorem 3: Lemma 9/11 heads, the factorization (Lemma 12) and additive-basis
                    (Lemmas 13–14) routes, ``construct`` picking the smallest value dimension
- ``certification`` certificates on all n + 1 weights (which covers all 2^n inputs):
                    construct_and_certify, certify_boolean_model, check_model
- ``lower_bound``   Theorem 2: the polynomial R of degree ≤ D·H with sign R = the model; refusal
                    when D·H < T; a wrong input of a too-small model
- ``accuracy_frontier``  the exact accuracy frontier below the threshold degree (`boolean frontier`)
- ``bases``, ``search``  support: Lemma 14 bases and ranges; exact smallest basis, postage stamps
"""

from headcount.boolean.accuracy_frontier import accuracy_frontier as frontier
from headcount.boolean.certification import certify_boolean_model as certify
from headcount.boolean.certification import check_model as check
from headcount.boolean.certification import construct_and_certify as construct
from headcount.boolean.lower_bound import theorem2_polynomial
from headcount.boolean.model import BooleanHead, BooleanLayer, BooleanModel, Readout
from headcount.boolean.task import symmetric_values
from headcount.boolean.threshold import threshold_degree

__all__ = [
    "BooleanHead",
    "BooleanLayer",
    "BooleanModel",
    "Readout",
    "certify",
    "check",
    "construct",
    "frontier",
    "symmetric_values",
    "theorem2_polynomial",
    "threshold_degree",
]
