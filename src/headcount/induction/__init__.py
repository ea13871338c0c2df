"""Seed 000: induction heads — the task, its constructions, their certificates and the one-layer
lower bound.

Modules:
    task          the reference solvers (fast and definition-literal), input generators, the INDEX
                  family
    metrics       predictions scored against the reference answers, on ⊥ and token positions apart
                  (PositionMetrics, induction_metrics)
    construction  two_layer_induction, one_layer_induction, their shapes (ModelShape), the size
                  checks and resource estimates, and writing a construction to a model file
    readout       ψ_out of the one-layer construction (the decoder kind "induction_readout")
    source        ModelSource: where a command's model comes from (a model file, a construction, or
                  a seeded random one-layer model), its shape before it is built, and loading it
    certify       which inputs (exhaustive or sampled + adversarial), the certify plan (the request
                  and the resources checked once) and the typed InductionCertificate
    outputs       one input's answers: the reference's (solve) or a model's in a precision mode
                  (predict)
    layouts       how a model reads the task (plain, hop-prefix) and `headcount evaluate`: error per
                  hop count
    heads         what each attention head of a model does (head scores and roles: `headcount
                  analyze heads`)
    roles         what each head of the constructions is built to do, as JSON (the zoo's roles
                  files)
    khop/         the k-hop task's constructions by pointer doubling (construction) and its
                  adversarial input families (families)
    lower_bound/  the INDEX reduction (setup, resources, protocol, error_bounds, floor), the refuter
                  (refute) and their typed results (results)
"""
