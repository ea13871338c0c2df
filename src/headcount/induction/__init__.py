"""Seed 000: induction heads — the task, its constructions, their certificates and the one-layer
lower bound. The names below are this scenario's public face (the contract of the Python API);
everything else in the package is internal and may move.

    two_layer(n, alphabet)          the two-layer construction (constant size, O(log n) bits)
    one_layer(n, alphabet)          the one-layer construction in table form (size Θ(n))
    khop(n, alphabet, hops)         the k-hop construction by pointer doubling (⌈log₂ k⌉ + 2 layers)
    solve(tokens, hops=1)           the reference answers (⊥ where there is none)
    sample(n, alphabet, count)      seeded inputs: uniform, or an adversarial family
    certify(model, n, alphabet)     the certificate of a model (headcount.certify wraps it)
    refute(model, k, p)             an INDEX input a one-layer model answers wrongly, confirmed
    protocol(model, k, p)           seed 000's INDEX reduction run on a one-layer model

Modules:
    task          the reference solvers (fast and definition-literal), input generators, the INDEX
                  family
    metrics       predictions scored against the reference answers, on ⊥ and token positions apart
                  (PositionMetrics, induction_metrics)
    construction  two_layer_induction, one_layer_induction, their shapes (ModelShape), the size
                  checks and resource estimates, and writing a construction to a model file
    readout       ψ_out of the one-layer models (decoder kinds "induction_readout" and
                  "packed_induction_readout")
    source        ModelSource: where a command's model comes from (a model file, a construction, or
                  a seeded random one-layer model), its shape before it is built, and loading it
    certification which inputs (exhaustive or sampled + adversarial), the certify plan (the request
                  and the resources checked once) and the typed InductionCertificate
    outputs       one input's answers: the reference's (solve) or a model's in a precision mode
                  (predict)
    layouts       how a model reads the task (plain, hop-prefix) and `headcount evaluate`: error per
                  hop count
    heads         what each attention head of a model does (head scores and roles: `headcount
                  analyze heads`)
    roles         what each head of the constructions is built to do, as JSON (the zoo's roles
                  files)
    multihop/     the k-hop task's constructions by pointer doubling (construction) and its
                  adversarial input families (families)
    lower_bound/  the INDEX reduction (setup, resources, protocol, error_bounds, floor), the refuter
                  (refute) and their typed results (results)
"""

from headcount.induction.certification import InductionCertificate
from headcount.induction.certification import certify_induction as certify
from headcount.induction.construction import one_layer_induction as one_layer
from headcount.induction.construction import two_layer_induction as two_layer
from headcount.induction.lower_bound.protocol import check_protocol as protocol
from headcount.induction.lower_bound.refute import refute
from headcount.induction.multihop.construction import khop_construction as khop
from headcount.induction.outputs import solve
from headcount.induction.task import sample

__all__ = [
    "InductionCertificate",
    "certify",
    "khop",
    "one_layer",
    "protocol",
    "refute",
    "sample",
    "solve",
    "two_layer",
]
