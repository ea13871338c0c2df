"""Symmetric Boolean functions with H heads and a degree-D polynomial readout (spec/boolean.md).

Seed 004 §3.2 and §5 made executable, in the shape every scenario shares:

- ``task``          named symmetric functions F(0..n), sign changes (= threshold degree)
- ``threshold``     threshold degree of any truth table by LP (HiGHS): verified witness + exact dual
- ``model``         exact rational heads, layers, polynomial readouts, BooleanModel; exact and
                    float64 evaluation
- ``model_file``    the file format: save_boolean / load_boolean (safetensors + exact rationals,
                    bounded)
- ``construction``  Theorem 3: Lemma 9/11 heads, the factorization (Lemma 12) and additive-basis
                    (Lemmas 13–14) routes, ``construct`` picking the smallest value dimension
- ``certify``       certificates on all n + 1 weights (which covers all 2^n inputs):
                    construct_and_certify, certify_boolean_model, check_model
- ``lower_bound``   Theorem 2: the polynomial R of degree ≤ D·H with sign R = the model; refusal
                    when D·H < T; a wrong input of a too-small model
- ``frontier``      the exact accuracy frontier below the threshold degree (`boolean frontier`)
- ``bases``, ``search``  support: Lemma 14 bases and ranges; exact smallest basis, postage stamps
"""
