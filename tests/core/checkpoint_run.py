"""A certificate run with a checkpoint, for tests/core/test_checkpoint.py: small chunks, printed as
JSON without its seconds. With BLOCK_AT the stream stops before that chunk and waits until the run
is killed: a test kills it inside or after the chunk before, whatever the machine's speed.

    python -m tests.core.checkpoint_run FILE MODEL [BLOCK_AT]     MODEL: right | wrong
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from headcount.core.certify import Checkpoint, certify_model
from headcount.induction.construction import two_layer_induction
from headcount.induction.lower_bound.minimal import packed_one_layer_induction
from headcount.induction.readout import PackedInductionReadout
from headcount.induction.task import all_sequences, induction_targets

N, S, CHUNK = 7, 3, 64


def model_named(name: str):
    if name == "right":
        return two_layer_induction(N, S)
    packed = packed_one_layer_induction(N, S, 2, 0)  # read in the wrong base: errors, rejections
    wrong = PackedInductionReadout(N, 2, S + 1, 0)
    return type(packed)(packed.embed, packed.Q, packed.K, packed.V, wrong, "causal", {})


def stream(block_at: int | None):
    def chunks():
        tokens = all_sequences(N, S)
        for index, start in enumerate(range(0, len(tokens), CHUNK)):
            while block_at is not None and index >= block_at:
                time.sleep(0.05)  # until killed
            yield "exhaustive", tokens[start : start + CHUNK]

    return chunks


def certificate(model_name: str, path: str | None, block_at: int | None = None) -> dict:
    saved = None if path is None else Checkpoint(path, {"test": model_name})
    try:
        cert = certify_model(
            model_named(model_name), stream(block_at), induction_targets, checkpoint=saved
        )
    finally:
        if saved is not None:
            saved.close()
    record = cert.to_json()
    record.pop("seconds")
    return record


if __name__ == "__main__":
    np.seterr(all="ignore")
    file, name = sys.argv[1], sys.argv[2]
    print(json.dumps(certificate(name, file, int(sys.argv[3]) if len(sys.argv) > 3 else None)))
