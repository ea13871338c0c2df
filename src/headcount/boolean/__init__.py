"""Symmetric Boolean functions with H heads and a degree-D polynomial readout (spec/boolean.md).

Seed 004 §3.2 and §5 made executable: ``functions`` (named symmetric functions, threshold degree),
``model`` (exact rational heads and readouts), ``theorem2`` (the D·H ≥ T lower bound as a program),
``bases`` and ``theorem3`` (the construction for every D·H ≥ T), ``certify`` (build and check on
all n + 1 weights, which covers all 2^n inputs).
"""
