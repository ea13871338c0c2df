"""Seed 000: induction heads — the task, its constructions, their certificates and the one-layer lower bound.

Modules:
    task          the reference solvers (fast and definition-literal), input generators, the INDEX family
    construction  two_layer_induction, one_layer_induction, and the model a command runs on (file or
                  construction, sizes checked)
    readout       ψ_out of the one-layer construction (the decoder kind "induction_readout")
    certify       which inputs (exhaustive or sampled + adversarial) and the typed InductionCertificate
    outputs       one input's answers: the reference's (solve) or a model's in a precision mode
    lower_bound/  the INDEX reduction (setup, protocol, exact) and the refuter (refute)
"""
