"""headcount: executable theory of what attention can and cannot compute.

The package's own decoder kinds register themselves when their modules are imported; the one a
scenario owns (the induction construction's readout) is imported here, so any model file headcount
wrote can be read back from any entry point (core.model.files.load_model) without naming the
scenario first.
"""

from headcount.induction import readout as _readout  # noqa: F401 — registers the decoder kind "induction_readout"
