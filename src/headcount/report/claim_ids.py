"""The claims' ids, and the selection of some (reproduce's `only` patterns) over them — without
importing a claim: so `only` is checked at once, not after the scenarios load (seconds). The
registry (headcount.report.reproduce.load_claims) must hold exactly these ids; a test holds it to
it."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from headcount.common.errors import InputError, param

CLAIM_IDS = (
    "boolean.xor.DH_iff",
    "boolean.symmetric.threshold_degree",
    "learning.khop.depth",
    "learning.khop.gpt2",
    "learning.khop.families",
    "boolean.frontier",
    "boolean.minimal_dimension",
    "induction.index.protocol",
    "induction.index.refute",
    "induction.index.error_floor",
    "induction.two_layer.exhaustive",
    "induction.two_layer.large_n",
    "induction.two_layer.constant_dim",
    "induction.two_layer.precision_log_n",
    "induction.one_layer.n_log_n",
    "induction.one_layer.minimal",
    "induction.separation",
    "induction.khop.construction",
    "induction.khop.floor",
    "induction.khop.pointer_rank",
    "induction.heads.mechanism",
    "induction.khop.mechanism",
    "learning.induction.depth",
    "learning.minmax.heads",
    "learning.xor.phase",
    "minmax.two_heads.certified",
    "minmax.one_head.obstructed",
    "minmax.theorem1.chain",
    "minmax.minimal_resources",
)


def _patterns(only: str | Iterable[str] | None) -> list[str]:
    if only is None:
        return []
    items = [only] if isinstance(only, str) else list(only)
    return [p.strip() for item in items for p in str(item).split(",") if p.strip()]


def _matches(claim_id: str, pattern: str) -> bool:
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(claim_id, pattern)
    return pattern in claim_id


def selected_ids(only: str | Iterable[str] | None, ids: Iterable[str] = CLAIM_IDS) -> list[str]:
    """The ids matching any pattern of `only` (glob if it has * ? [, else substring; comma-separated
    patterns allowed); every id when `only` is None. InputError listing the ids if none match."""
    ids = list(ids)
    patterns = _patterns(only)
    if not patterns:
        if only is not None:
            raise InputError(f"empty {param('only')} pattern; claim ids are: {', '.join(ids)}")
        return ids
    chosen = [i for i in ids if any(_matches(i, p) for p in patterns)]
    if not chosen:
        raise InputError(
            f"{param('only')} {','.join(patterns)!r} matches no claim; claim ids are: "
            f"{', '.join(ids)}"
        )
    return chosen
