"""A counterexample finder for one-layer models built on the INDEX reduction's pigeonhole step.

Counterexamples. If message_bits < k, two f ≠ f' share a message (pigeonhole); at an i* where they
differ Bob answers both inputs alike, so the model is wrong on one of them. :func:`refute` searches
for such a collision, else searches the INDEX family exhaustively or by a guided random/local
search, and reports an input only after ``predict(model, σ, fixed(p))`` at position N has been seen
to get it wrong.

The table searched on is setup.as_table's (`model_form`); under setup.GUIDE_FORM (a real-arithmetic
guide) only what ran on the model is the model's: `message_bits` is None, a collision's evidence the
input alone. The search state of one call is one small class, :class:`_Refuter`; what it covered is
reported as typed, frozen records (results.Searched, in the Refutation refute returns).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from headcount.common.validate import check_int
from headcount.core.certify import Model
from headcount.core.model import LinearDecoder
from headcount.induction.lower_bound.protocol import EXHAUSTIVE_K, bob_output, message_from
from headcount.induction.lower_bound.resources import CHUNK_ELEMENTS, check_refute_resources
from headcount.induction.lower_bound.results import (
    CollisionEvidence,
    CollisionSearch,
    Evidence,
    ExhaustiveSearch,
    GuidedSearch,
    Refutation,
    Searched,
)
from headcount.induction.lower_bound.setup import (
    IndexSetup,
    alice_exact,
    confirm_wrong,
    index_setup,
    load_index_model,
    model_at_n,
    quantize,
)
from headcount.induction.source import ModelSource
from headcount.induction.task import all_sequences, index_input, index_token_text

# refute: the most Alice messages computed and, separately, the most INDEX inputs evaluated.
DEFAULT_BUDGET = 1 << 20
# Largest k for which refute's collision search enumerates all 2^k strings f.
COLLISION_ENUMERATE_K = 20


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def _bit_string(f: np.ndarray) -> str:
    return "".join(map(str, f))


def _hash_rows(keys: np.ndarray) -> np.ndarray:
    """64-bit hashes of float64 rows (by bit pattern); equal rows, equal hashes."""
    bits = np.ascontiguousarray(keys).view(np.uint64)
    h = np.full(len(bits), np.uint64(0xCBF29CE484222325))
    mult = np.uint64(0x100000001B3)
    for c in range(bits.shape[1]):
        h = (h ^ bits[:, c]) * mult
        h ^= h >> np.uint64(29)
    return h


def _message_keys(st: IndexSetup, F: np.ndarray) -> np.ndarray:
    r, s = alice_exact(st, F)
    r_hat, s_hat, _, _ = quantize(st, r, s)
    return np.concatenate([r_hat.reshape(len(F), -1), s_hat], axis=1)


def _repeats(seen: dict[int, int], codes: np.ndarray, start: int) -> list[tuple[int, int]]:
    """Up to 64 (first index, this index) pairs of strings whose message hash was seen before;
    `seen` maps each hash to the first string index with it and is updated."""
    pairs = []
    for offset, code in enumerate(codes.tolist()):
        first = seen.setdefault(code, start + offset)
        if first != start + offset and len(pairs) < 64:
            pairs.append((first, start + offset))
    return pairs


def _margins(st: IndexSetup, y: np.ndarray, expected: np.ndarray) -> np.ndarray | None:
    """Logit of the right answer minus the best other logit, from the unrounded heads (a smooth
    guide for local search); None when the decoder is not linear."""
    dec = st.table.decoder
    if not isinstance(dec, LinearDecoder):
        return None
    logits = (st.x_final[None] + y.sum(axis=1)) @ dec.W_U + dec.b_U
    rows = np.arange(len(y))
    right = logits[rows, expected].copy()
    logits[rows, expected] = -np.inf
    return right - logits.max(axis=1)


Candidates = tuple[np.ndarray, np.ndarray, np.ndarray]  # F [P k], stars [P], margins [P]


def _lowest(best: Candidates, F: np.ndarray, stars: np.ndarray, margin: np.ndarray) -> Candidates:
    """The 64 lowest-margin (f, i*) among `best` and the new batch."""
    all_F, all_stars = np.concatenate([best[0], F]), np.concatenate([best[1], stars])
    all_margin = np.concatenate([best[2], margin])
    keep = np.argsort(all_margin, kind="stable")[:64]
    return all_F[keep], all_stars[keep], all_margin[keep]


def _neighbours(F: np.ndarray, stars: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every single-bit flip of every row of F [P k] except at its own i* (that would change the
    right answer): (flipped strings [P·(k−1) k], their i* [P·(k−1)]), row p's flips contiguous."""
    P = len(F)
    flips = np.repeat(F, k, axis=0)
    pos = np.tile(np.arange(k), P)
    flips[np.arange(P * k), pos] ^= 1
    nstars = np.repeat(stars, k)
    keep = pos != nstars - 1
    return flips[keep], nstars[keep]


# ---------------------------------------------------------------------------------------------
# The search
# ---------------------------------------------------------------------------------------------


class _Refuter:
    """The state of one refute call: the setup, the seeded generator, the budget, the clock, and
    `searched`, the frozen record of what each method has covered so far (replaced as counts
    grow)."""

    def __init__(self, st: IndexSetup, seed: int, budget: int):
        self.st, self.budget = st, budget
        self.rng = np.random.default_rng(seed)
        self.began = time.perf_counter()
        self.searched = Searched(seed, budget, st.layout.bits, st.k)

    def start(self, **record: Any) -> None:
        """Begin a method's record, e.g. start(guided=GuidedSearch())."""
        self.searched = replace(self.searched, **record)

    def _count(self, method: str, **more: int) -> None:
        record = getattr(self.searched, method)
        grown = replace(record, **{name: getattr(record, name) + n for name, n in more.items()})
        self.searched = replace(self.searched, **{method: grown})

    def _result(self, found: bool, method: str | None, **fields: Any) -> Refutation:
        st = self.st
        return Refutation(
            found,
            method,
            st.k,
            st.n,
            st.p,
            st.layout.bits if st.models_own else None,
            st.form,
            self.searched,
            seconds=time.perf_counter() - self.began,
            **fields,
        )

    def found(
        self,
        method: str,
        f: np.ndarray,
        i_star: int,
        output: int,
        evidence: Evidence | CollisionEvidence,
    ) -> Refutation:
        """The Refutation for a confirmed wrong input σ(f, i*), on which the model answers
        `output`."""
        return self._result(
            True,
            method,
            tokens=tuple(int(t) for t in index_input(f, i_star)),
            position=self.st.n,
            expected=index_token_text(int(f[i_star - 1])),
            model_output=index_token_text(output),
            evidence=evidence,
        )

    def nothing(self) -> Refutation:
        return self._result(False, None)

    # -- (a) collision --------------------------------------------------------------------------

    def collision(self) -> Refutation | None:
        """Pigeonhole search: hash the messages of many f; for f ≠ f' with equal messages and i*
        where they differ, Bob answers σ(f, i*) and σ(f', i*) alike, so (up to rounding ties) the
        model errs on one.

        Strings are streamed in chunks; a dict from message hash to the first string with it finds
        repeats across chunks in one pass. Equal hashes are re-checked as equal messages before
        use."""
        st, k = self.st, self.st.k
        enumerate_all = k <= COLLISION_ENUMERATE_K and (1 << k) <= self.budget
        total = (1 << k) if enumerate_all else self.budget
        per = max(1024, CHUNK_ELEMENTS // max(1, st.n_heads * k * st.d_model))
        self.start(collision=CollisionSearch("all 2^k" if enumerate_all else "seeded random"))
        seen: dict[int, int] = {}
        strings: list[np.ndarray] = []
        for start in range(0, total, per):
            c = min(per, total - start)
            F = (
                all_sequences(k, 2, start, start + c)
                if enumerate_all
                else self.rng.integers(0, 2, size=(c, k))
            )
            strings.append(F.astype(np.int8))
            self._count("collision", messages=c)
            pairs = _repeats(seen, _hash_rows(_message_keys(st, F)), start)
            all_f = np.concatenate(strings) if pairs else None
            for ia, ib in pairs:
                found = self._try_collision(all_f[ia].astype(np.int64), all_f[ib].astype(np.int64))
                if found:
                    return found
        return None

    def _try_collision(self, f1: np.ndarray, f2: np.ndarray) -> Refutation | None:
        """Confirm a hash repeat (f1, f2) as a message collision, and find the input the model gets
        wrong."""
        st = self.st
        if np.array_equal(f1, f2):
            return None  # the same random string drawn twice
        keys = _message_keys(st, np.stack([f1, f2]))
        if not np.array_equal(keys[0].view(np.uint64), keys[1].view(np.uint64)):
            return None  # a hash collision, not a message collision
        self._count("collision", colliding_pairs_tried=1)
        stars = np.flatnonzero(f1 != f2)[:16] + 1
        both = np.concatenate(
            [np.repeat(f1[None], len(stars), 0), np.repeat(f2[None], len(stars), 0)]
        )
        both_stars = np.concatenate([stars, stars])
        wrong, out = confirm_wrong(st, both, both_stars)
        self._count("collision", inputs_confirmed=len(both))
        if not wrong.any():
            # right on both: a rounding tie, or a guide table whose protocol is not the model's
            return None
        t = int(np.flatnonzero(wrong)[0])
        i_star = int(both_stars[t])
        if (
            not st.models_own
        ):  # the shared message and Bob's answer are the guide's, not the model's
            return self.found(
                "collision", both[t], i_star, int(out[t]), Evidence(_bit_string(both[t]), i_star)
            )
        msg = message_from(st, *[part[0] for part in quantize(st, *alice_exact(st, f1[None]))])
        evidence = CollisionEvidence(
            f=_bit_string(f1),
            f_prime=_bit_string(f2),
            i_star=i_star,
            wrong_input="f" if t < len(stars) else "f_prime",
            message_bits=msg.bits,
            k=st.k,
            message_digest=msg.digest(),
            message_first_values=tuple(
                float(x) for x in np.concatenate([msg.r_hat[0, :4], msg.s_hat[:1]])
            ),
            bob_output=index_token_text(bob_output(st.table, msg, i_star, st.p)),
        )
        return self.found("collision", both[t], i_star, int(out[t]), evidence)

    # -- (b) exhaustive -------------------------------------------------------------------------

    def exhaustive(self) -> Refutation | None:
        """Run the model (predict, fixed:p) on all 2^k·k INDEX inputs in lexicographic order: the
        first wrong one."""
        k = self.st.k
        per = max(1, (1 << 15) // k)
        self.start(exhaustive=ExhaustiveSearch(0, (1 << k) * k))
        for start in range(0, 1 << k, per):
            F = all_sequences(k, 2, start, min(1 << k, start + per))
            Fp, stars = np.repeat(F, k, axis=0), np.tile(np.arange(1, k + 1), len(F))
            wrong, out = confirm_wrong(self.st, Fp, stars)
            self._count("exhaustive", inputs=len(stars))
            if wrong.any():
                t = int(np.flatnonzero(wrong)[0])
                evidence = Evidence(_bit_string(Fp[t]), int(stars[t]))
                return self.found("exhaustive", Fp[t], int(stars[t]), int(out[t]), evidence)
        return None

    # -- (c) guided -----------------------------------------------------------------------------

    def guided(self) -> Refutation | None:
        """Seeded random (f, i*) first (a quarter of the budget for linear decoders, all of it
        otherwise), then greedy local search from the 64 lowest-margin inputs seen. Candidates come
        from the closed-form evaluation at N; each is confirmed by predict before it is reported."""
        k, budget = self.st.k, self.budget
        self.start(guided=GuidedSearch())
        linear = isinstance(self.st.table.decoder, LinearDecoder)
        batch = 4096
        random_share = max(batch, budget // 4) if linear else budget
        best: Candidates = (np.empty((0, k), np.int64), np.empty(0, np.int64), np.empty(0))
        while self.searched.guided.inputs < min(budget, random_share):
            c = min(batch, budget - self.searched.guided.inputs)
            F, stars = self.rng.integers(0, 2, size=(c, k)), self.rng.integers(1, k + 1, size=c)
            self._count("guided", random_inputs=c)
            found, margin = self.evaluate(F, stars)
            if found:
                return found
            if margin is not None:
                best = _lowest(best, F, stars, margin)
        if not linear or not len(best[0]):
            return None
        return self.local_search(*best)

    def evaluate(
        self, F: np.ndarray, stars: np.ndarray
    ) -> tuple[Refutation | None, np.ndarray | None]:
        """Closed-form outputs at N for a batch; confirm up to 64 apparent errors with predict.
        Returns (confirmed refutation or None, margins or None)."""
        out, y = model_at_n(self.st, F, stars)
        self._count("guided", inputs=len(F))
        expected = F[np.arange(len(F)), stars - 1]
        idx = np.flatnonzero(out != expected)[:64]
        if len(idx):
            wrong, got = confirm_wrong(self.st, F[idx], stars[idx])
            self._count("guided", confirmations=len(idx))
            if wrong.any():
                t = int(np.flatnonzero(wrong)[0])
                f, i_star = F[idx[t]], int(stars[idx[t]])
                return self.found(
                    "guided", f, i_star, int(got[t]), Evidence(_bit_string(f), i_star)
                ), None
        return None, _margins(self.st, y, expected)

    def local_search(
        self, F: np.ndarray, stars: np.ndarray, margin: np.ndarray
    ) -> Refutation | None:
        """Greedy descent on the right answer's logit margin (linear decoders): each candidate moves
        to its best single-bit neighbour, never flipping f_{i*} (that would change the right
        answer); a candidate with no improving neighbour restarts at a random (f, i*)."""
        k = self.st.k
        if k < 2:
            return None
        F, stars, margin = F.copy(), stars.copy(), margin.copy()
        while self.searched.guided.inputs + len(F) * k <= self.budget:
            P = len(F)
            flips, nstars = _neighbours(F, stars, k)
            self._count("guided", local_search_steps=1)
            found, nmargin = self.evaluate(flips, nstars)
            if found:
                return found
            nmargin = nmargin.reshape(P, k - 1)
            best = nmargin.argmin(axis=1)
            improved = nmargin[np.arange(P), best] < margin
            moved = flips.reshape(P, k - 1, k)[np.arange(P), best]
            F = np.where(improved[:, None], moved, F)
            margin = np.where(improved, nmargin[np.arange(P), best], margin)
            stuck = np.flatnonzero(~improved)
            if len(stuck):
                self._count("guided", restarts=len(stuck))
                F[stuck] = self.rng.integers(0, 2, size=(len(stuck), k))
                stars[stuck] = self.rng.integers(1, k + 1, size=len(stuck))
                found, fresh = self.evaluate(F[stuck], stars[stuck])
                if found:
                    return found
                margin[stuck] = fresh
        return None


def refute(
    model: Model | ModelSource, k: int, p: int, *, seed: int = 0, budget: int = DEFAULT_BUDGET
) -> Refutation:
    """Find an INDEX input σ(f, i*) that the model at fixed:p answers wrongly at N = 2k+1 (a model,
    or where it comes from: ModelSource, a one-layer model file or a seeded random table model, read
    or drawn first).

    Methods, in order: (a) "collision" when message_bits < k (pigeonhole: a collision must exist
    among all 2^k strings; enumerated for k ≤ COLLISION_ENUMERATE_K when 2^k ≤ budget, else `budget`
    seeded random strings); (b) "exhaustive" when k ≤ EXHAUSTIVE_K or 2^k·k ≤ budget: the whole
    family through predict — if it finds nothing the model is correct on INDEX at this (k, p) and
    the search stops;
    (c) "guided": seeded random restarts and local search, `budget` inputs. Every reported input has
    been run through predict(model as given, σ, fixed(p)) and seen to be wrong at N."""
    if isinstance(model, ModelSource):
        model = load_index_model(model, k)
    seed, budget = check_int("seed", seed, 0), check_int("budget", budget, 1)
    check_refute_resources(model, check_int("k", k, 1), budget, EXHAUSTIVE_K)
    st = index_setup(model, k, p, guide=True)
    search = _Refuter(st, seed, budget)
    found = search.collision() if st.layout.bits < st.k else None
    if found is None:
        whole_family = st.k <= EXHAUSTIVE_K or (1 << st.k) * st.k <= search.budget
        found = search.exhaustive() if whole_family else search.guided()
    return found or search.nothing()
