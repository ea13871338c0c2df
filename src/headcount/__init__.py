"""headcount: executable theory of what attention can and cannot compute.

The names below are the public Python API — documented, typed, and kept stable; everything else in
the package is internal and may move (docs/api.md lists the contract):

    __version__                              the package version
    load(path), save(model, path)            headcount model files (safetensors + JSON, no pickle)
    Transformer                              the formal model in weight form; from_weights takes
                                             a dict of arrays under TransformerLens's names
    certify(model, task, n=…, alphabet=…)    a Certificate: certified, precision_bits, errors,
                                             scope, counterexamples, rejected, to_json()
    predict(model, tokens, precision)        outputs in a precision mode ("fixed:p", "float64", …)
    analyze_heads(model, task, n=…, …)       head scores and roles
    from_hf(model_or_path)                   a transformers GPT-2 / NeoX / Llama / Mistral / Qwen2 /
                                             Gemma (object or checkpoint) as a model
    to_transformer_lens(model)               a TransformerLens TransformerBridge (the [tl] extra)
    from_transformer_lens(bridge)            and back, bit-identically
    induction, minmax, boolean               the scenarios: constructions, solvers, lower bounds
    InputError, BOTTOM                       the error bad input raises; the token id of ⊥

Importing the package also registers every decoder kind headcount writes (the induction
construction's readout among them), so any model file headcount wrote can be read back from any
entry point.
"""

__version__ = "0.2.0"  # the one place the version is written (pyproject reads it)

from headcount import boolean, induction, minmax
from headcount.api import Certificate, analyze_heads, certify, from_hf, load, predict, save
from headcount.common.errors import InputError
from headcount.core.model import BOTTOM, Transformer
from headcount.induction import readout as _readout  # noqa: F401 — registers the decoder kind "induction_readout"
from headcount.interop.transformer_lens_io import from_transformer_lens, to_transformer_lens

__all__ = [
    "BOTTOM",
    "Certificate",
    "InputError",
    "Transformer",
    "__version__",
    "analyze_heads",
    "boolean",
    "certify",
    "from_hf",
    "from_transformer_lens",
    "induction",
    "load",
    "minmax",
    "predict",
    "save",
    "to_transformer_lens",
]
