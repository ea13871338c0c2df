"""Imported models speak their own vocabulary: the decoder kind "vocab" and the vocabulary map.

A model trained elsewhere (a GPT-2 checkpoint) reads model token ids and writes logits over its
whole vocabulary: ``x W_U + b_U`` with W_U separate ("lm-head") or W_Eᵀ ("tied"), or the final
hidden state itself ("hidden": research code that trains GPT2Model with a cross-entropy on its last
hidden state). The vocabulary map says which model ids the task's tokens are (JSON, stored in the
model file):

    {"symbols": [id of symbol 0, id of symbol 1, …], "hops": {"0": id of hop count 0, "1": id, …},
     "none": id, "blank": id}

Every key is optional; a missing one takes headcount's own layout (the identity map): symbol s ↦ s,
hop count k ≥ 1 ↦ S + k − 1 (the learning lab's hop token), "none" (the output ⊥) ↦ S; hop count 0
(hop_0(X)_i = X_i) has a token only where a map names one or the learning lab trained one (S + K
after its K hop tokens, named in the model file's info as "hop_zero_token"). "blank" is accepted
and kept for layouts with a filler token; no layout headcount generates uses it yet.

"hops" names each hop count's id. A list of ids is accepted only with "hops_from": 0 or 1, the hop
count of its first entry: the k-hop paper's vocabulary lists hop counts 0, 1, …, and maps written
for headcount before hop count 0 existed list 1, 2, …, so a bare list is refused rather than read
one way (a wrong guess shifts every hop token by one, and nothing downstream would notice). The
file form written back is always the object.

``bind_task`` turns such a model into one over the task's tokens: its W_E keeps the rows of the
task's input tokens (symbols 0..S−1, then hop tokens S..S+K−1 for hop counts 1..K, then hop count
0's at S + K when asked for: a row gather, exact) and its decoder maps each output id to the task's
label (the symbol, ⊥, or OTHER for an id the task does not use).
Everything downstream — evaluation in every precision mode, the rigorous bounds, certificates — then
runs unchanged.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from headcount.common.errors import InputError, param
from headcount.core.model.parts import (
    LinearDecoder,
    argmax_bounds,
    in_row_blocks,
    register_decoder,
)
from headcount.core.model.symbols import BOTTOM, OTHER
from headcount.core.model.transformer import Transformer
from headcount.core.numbers import add_bounds, affine_bounds

READOUTS = ("tied", "lm-head", "hidden")
MAX_VOCAB_MAP_IDS = (
    1 << 20
)  # ids one list of a vocabulary map may hold (GPT-2's vocabulary is 50,257)


def _id(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise InputError(
            f"vocabulary map: {what} must be a token id 0 ≤ id < 2^31, got {str(value)[:40]!r}"
        )
    return int(value)


def _ids(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or len(value) > MAX_VOCAB_MAP_IDS:
        raise InputError(
            f"vocabulary map: {what!r} must be a list of at most {MAX_VOCAB_MAP_IDS} token ids"
        )
    return tuple(_id(v, f"each of {what!r}") for v in value)


AMBIGUOUS_HOPS = (
    "vocabulary map: a 'hops' list is ambiguous: the k-hop paper's vocabulary lists hop counts 0, "
    '1, 2, …, headcount\'s earlier maps 1, 2, …; say which with "hops_from": 0 or "hops_from": '
    '1, or give an object {"0": id, "1": id, …}'
)
_HOP_COUNT = re.compile(r"0|[1-9][0-9]{0,5}")


def _hop_ids(value: Any, start: Any) -> tuple[tuple[int, int], ...]:
    """(hop count, id) pairs, by count, of the JSON "hops" (an object, or a list with "hops_from"
    `start`; None: absent)."""
    if isinstance(value, dict):
        if start is not None:
            raise InputError(
                "vocabulary map: 'hops_from' goes with a 'hops' list; an object names each hop "
                "count itself"
            )
        if len(value) > MAX_VOCAB_MAP_IDS:
            raise InputError(f"vocabulary map: 'hops' names more than {MAX_VOCAB_MAP_IDS} counts")
        bad = [key for key in value if not _HOP_COUNT.fullmatch(key)]
        if bad:
            raise InputError(
                f'vocabulary map: \'hops\' keys are hop counts written "0", "1", …; got '
                f"{str(bad[0])[:20]!r}"
            )
        return tuple(sorted((int(k), _id(v, f"'hops' {k!r}")) for k, v in value.items()))
    if not isinstance(value, list):
        raise InputError(
            'vocabulary map: \'hops\' must be an object {"0": id, "1": id, …} or a list with '
            "'hops_from'"
        )
    if start is None:
        raise InputError(AMBIGUOUS_HOPS)
    if isinstance(start, bool) or not isinstance(start, int) or start not in (0, 1):
        raise InputError(f"vocabulary map: 'hops_from' must be 0 or 1, got {str(start)[:20]!r}")
    return tuple(enumerate(_ids(value, "hops"), start=int(start)))


def _ranges(counts: list[int]) -> str:
    """Hop counts as runs: [0, 1, 2, 5] -> "0..2, 5" ("none" when empty)."""
    runs: list[list[int]] = []
    for k in counts:
        if runs and k == runs[-1][1] + 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    text = ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in runs[:8])
    return (text + (", …" if len(runs) > 8 else "")) or "none"


@dataclass(frozen=True)
class VocabMap:
    """Model token ids of the task's tokens (module docstring); None: headcount's own layout."""

    symbols: tuple[int, ...] | None = None
    hops: tuple[tuple[int, int], ...] | None = None  # (hop count, id), by count
    none: int | None = None
    blank: int | None = None

    KEYS: ClassVar[tuple[str, ...]] = ("symbols", "hops", "hops_from", "none", "blank")

    @property
    def hop_ids(self) -> tuple[int, ...]:
        """The ids the map gives hop tokens (every count it names)."""
        return tuple(token for _, token in self.hops or ())

    @classmethod
    def from_json(cls, obj: Any) -> VocabMap:
        """Parse (and check) the JSON form; InputError saying what is wrong."""
        if obj is None:
            return cls()
        if not isinstance(obj, dict):
            raise InputError(f"a vocabulary map must be a JSON object with keys {list(cls.KEYS)}")
        unknown = sorted(set(obj) - set(cls.KEYS))
        if unknown:
            raise InputError(
                f"vocabulary map: unknown keys {unknown[:5]}; allowed: {list(cls.KEYS)}"
            )
        if "hops_from" in obj and "hops" not in obj:
            raise InputError(
                "vocabulary map: 'hops_from' says where a 'hops' list starts; no 'hops'"
            )
        out = cls(
            _ids(obj["symbols"], "symbols") if "symbols" in obj else None,
            _hop_ids(obj["hops"], obj.get("hops_from")) if "hops" in obj else None,
            _id(obj["none"], "'none'") if "none" in obj else None,
            _id(obj["blank"], "'blank'") if "blank" in obj else None,
        )
        inputs = (
            list(out.symbols or ())
            + list(out.hop_ids)
            + ([out.blank] if out.blank is not None else [])
        )
        if len(set(inputs)) != len(inputs):
            raise InputError("vocabulary map: symbols, hops and blank must be distinct token ids")
        if out.none is not None and out.symbols is not None and out.none in out.symbols:
            raise InputError(f"vocabulary map: 'none' = {out.none} is also a symbol's id")
        return out

    def to_json(self) -> dict[str, Any]:
        """The JSON form; "hops" always as the object {"k": id}."""
        out: dict[str, Any] = {}
        for key in ("symbols", "hops", "none", "blank"):
            value = getattr(self, key)
            if key == "hops" and value is not None:
                out[key] = {str(k): token for k, token in value}
            elif value is not None:
                out[key] = list(value) if isinstance(value, tuple) else value
        return out

    def input_ids(self, alphabet: int, hops: int, zero: bool = False) -> np.ndarray:
        """Model ids of the task's input tokens: symbols 0..S−1, then hop tokens of hop counts
        1..hops, then (`zero`) hop count 0's (InputError naming what the map lacks)."""
        symbols = tuple(range(alphabet)) if self.symbols is None else self.symbols
        if len(symbols) < alphabet:
            raise InputError(
                f"the vocabulary map has {len(symbols)} symbols; {param('alphabet')} {alphabet} "
                f"needs {alphabet}"
            )
        counts = list(range(1, hops + 1)) + [0] * zero
        if self.hops is None:
            if zero:
                raise InputError(
                    "hop count 0 has no token in headcount's own layout (hop count k ≥ 1 is token "
                    'S + k − 1): the model needs a vocabulary map that names it, "hops": '
                    '{"0": id, …}'
                )
            ids = symbols[:alphabet] + tuple(alphabet + k - 1 for k in counts)
            return np.array(ids, dtype=np.int64)
        named = dict(self.hops)
        missing = [k for k in counts if k not in named]
        if missing:
            raise InputError(
                f"the vocabulary map has no token for hop count {missing[0]}; it names hop counts "
                f"{_ranges(sorted(named))}"
            )
        return np.array(symbols[:alphabet] + tuple(named[k] for k in counts), dtype=np.int64)

    def output_labels(self, alphabet: int, classes: int) -> np.ndarray:
        """[classes] the task label of each output id: s for symbol s's id, BOTTOM for 'none', else
        OTHER."""
        symbols = tuple(range(alphabet)) if self.symbols is None else self.symbols[:alphabet]
        none = alphabet if self.none is None else self.none
        labels = np.full(classes, OTHER, dtype=np.int64)
        for s, token in enumerate(symbols):
            if token < classes:
                labels[token] = s
        if none < classes:
            labels[none] = BOTTOM
        return labels


@register_decoder
@dataclass(frozen=True, eq=False)
class VocabDecoder:
    """Logits over the model's vocabulary (module docstring), argmax with ties to the lowest id,
    then the task label of that id (`labels`, set by bind_task; None: the raw id)."""

    W_U: np.ndarray | None  # [d_model vocab]; None for readout "hidden" (the logits are x itself)
    b_U: np.ndarray | None  # [vocab]
    readout: str
    vocab_map: VocabMap = VocabMap()
    labels: np.ndarray | None = None  # [vocab]
    kind: ClassVar[str] = "vocab"

    def __post_init__(self) -> None:
        if self.readout not in READOUTS:
            raise ValueError(f"unknown readout {self.readout!r}: use one of {READOUTS}")
        if (self.W_U is None) != (self.readout == "hidden"):
            raise ValueError("readout 'hidden' has no W_U; 'tied' and 'lm-head' need one")
        for name in ("W_U", "b_U"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, np.ascontiguousarray(value, dtype=np.float64))
        if self.b_U is not None and self.W_U is not None and self.b_U.shape != (self.W_U.shape[1],):
            raise ValueError(f"b_U {self.b_U.shape} does not fit W_U {self.W_U.shape}")

    def classes(self, d_model: int) -> int:
        """How many output ids the logits cover."""
        return d_model if self.W_U is None else self.W_U.shape[1]

    def _labelled(self, cls: np.ndarray) -> np.ndarray:
        return cls.astype(np.int64) if self.labels is None else self.labels[cls]

    def _logits(self, x: np.ndarray) -> np.ndarray:
        logits = x if self.W_U is None else x @ self.W_U.astype(x.dtype)
        return logits if self.b_U is None else logits + self.b_U.astype(x.dtype)

    def decode(self, x: np.ndarray) -> np.ndarray:
        (cls,) = in_row_blocks(lambda y: (np.argmax(self._logits(y), axis=-1),), x)
        return self._labelled(cls)

    def _decide(self, mid: np.ndarray, rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.W_U is None:
            lmid, lrad = (mid, rad) if self.b_U is None else add_bounds(mid, rad, self.b_U, 0.0)
        else:
            lmid, lrad = affine_bounds(mid, rad, self.W_U, self.b_U)
        return argmax_bounds(lmid, lrad)

    def decode_bounds(self, mid: np.ndarray, rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cls, decided = in_row_blocks(self._decide, mid, rad)
        return self._labelled(cls), decided

    def tensors(self) -> dict[str, np.ndarray]:
        return {
            name: value for name in ("W_U", "b_U") if (value := getattr(self, name)) is not None
        }

    def config(self) -> dict[str, Any]:
        return {"readout": self.readout, "vocab_map": self.vocab_map.to_json()}

    @classmethod
    def from_parts(cls, tensors: dict[str, np.ndarray], config: dict[str, Any]) -> VocabDecoder:
        return cls(
            tensors.get("W_U"),
            tensors.get("b_U"),
            config.get("readout"),
            VocabMap.from_json(config.get("vocab_map")),
        )


def bind_task(model: Transformer, alphabet: int, hops: int = 0, zero: bool = False) -> Transformer:
    """`model` as a model over the task's tokens (module docstring): symbols 0..alphabet−1, when
    hops ≥ 1 the tokens of hop counts 1..hops at alphabet..alphabet+hops−1 and, with `zero`, hop
    count 0's at alphabet+hops. A model with a "vocab" decoder gets the gathered W_E and the output
    labels; any other model speaks headcount's own layout (_bind_own)."""
    if not isinstance(model, Transformer) or not isinstance(model.decoder, VocabDecoder):
        return _bind_own(model, alphabet, hops, zero)
    decoder = model.decoder
    ids = decoder.vocab_map.input_ids(alphabet, hops, zero)
    if ids.max(initial=0) >= model.alphabet:
        raise InputError(
            f"the vocabulary map names token id {int(ids.max())}; the model reads "
            f"{model.alphabet} ids"
        )
    labels = decoder.vocab_map.output_labels(alphabet, decoder.classes(model.d_model))
    if not (labels >= 0).any():
        raise InputError("no symbol of the vocabulary map is an output id of the model's readout")
    info = model.info | {
        "vocab_map": decoder.vocab_map.to_json(),
        "bound_to": {"alphabet": alphabet, "hops": hops} | ({"hop_zero": True} if zero else {}),
    }
    return dataclasses.replace(
        model, W_E=model.W_E[ids], decoder=dataclasses.replace(decoder, labels=labels), info=info
    )


def _bind_own(model, alphabet: int, hops: int, zero: bool):
    """bind_task of a model in headcount's own layout: checked to read the task's tokens, and
    returned as it is, or, with `zero`, with W_E's hop-0 row moved to alphabet+hops. Only a model
    the learning lab trained on hop count 0 has that row: its info names it ("hop_zero_token",
    S + K after its K hop tokens), and then hop counts above K are refused (their token would be
    hop 0's)."""
    info = getattr(model, "info", None) or {}
    token = info.get("hop_zero_token")
    if token is not None and (
        isinstance(token, bool)
        or not isinstance(token, int)
        or not alphabet <= token < model.alphabet
    ):
        raise InputError(f"the model file's hop_zero_token {str(token)[:20]!r} is not a hop token")
    if token is not None and alphabet + hops > token:
        raise InputError(
            f"the model has hop tokens for hop counts 1..{token - alphabet} (and 0); hop count "
            f"{hops} needs more"
        )
    if zero and token is None:
        VocabMap().input_ids(alphabet, hops, zero)  # refused: no hop-0 token of its own
    needed = alphabet + hops
    if model.alphabet < needed:
        what = f"{alphabet} symbols" + (f" and {hops} hop tokens" if hops else "")
        raise InputError(f"the model reads {model.alphabet} input tokens; {what} need {needed}")
    if isinstance(model.decoder, LinearDecoder) and model.decoder.alphabet < alphabet:
        raise InputError(
            f"the model's decoder has {model.decoder.alphabet} symbol classes; "
            f"{param('alphabet')} {alphabet} needs them all"
        )
    if not zero:
        return model
    rows = np.r_[np.arange(needed), token]
    return dataclasses.replace(model, W_E=model.W_E[rows])
