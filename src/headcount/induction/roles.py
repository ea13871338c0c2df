"""What each head of the induction constructions is built to do, as JSON (the zoo's roles files,
`headcount zoo export`): one entry per head with its role, mechanism, query, key and value, and the
decoder.

Role names are those induction/heads.py gives a head whose attention follows the mechanism
(previous_token, duplicate_token, induction, uniform), so `headcount analyze heads` on the exported
model can be compared with them. Layers, heads and positions p are 0-based; coordinates are the
residual-stream indices named at the top of induction/construction.py. The k-hop construction's
roles (its find^{2^t} heads) belong here too, beside its construction
(induction/multihop/construction.py).
"""

from __future__ import annotations

from typing import Any

from headcount.common.validate import check_int
from headcount.induction.construction import (
    ANSWER_HI,
    ANSWER_LO,
    COPIED,
    DUP,
    ONE,
    POS_HI,
    POS_HI2,
    POS_LO,
    POS_LO2,
    POS_SCALED,
    PREV_HI,
    PREV_LO,
    TOKEN_HI,
    TOKEN_HI2,
    TOKEN_LO,
    TOKEN_LO2,
    two_layer_parameters,
)

TWO_LAYER_RESIDUAL = {
    "TOKEN_HI": TOKEN_HI,
    "TOKEN_LO": TOKEN_LO,
    "TOKEN_HI2": TOKEN_HI2,
    "TOKEN_LO2": TOKEN_LO2,
    "POS_HI": POS_HI,
    "POS_LO": POS_LO,
    "POS_HI2": POS_HI2,
    "POS_LO2": POS_LO2,
    "PREV_HI": PREV_HI,
    "PREV_LO": PREV_LO,
    "ONE": ONE,
    "POS_SCALED": POS_SCALED,
    "COPIED": list(range(COPIED, COPIED + 4)),
    "DUP": DUP,
    "ANSWER_HI": ANSWER_HI,
    "ANSWER_LO": ANSWER_LO,
}


def two_layer_roles(n: int, alphabet: int) -> dict[str, Any]:
    """The roles two_layer_induction(n, alphabet) is built with (module docstring), as JSON: the
    named residual coordinates, the constants, one entry per head (0-based layer, head and positions
    p) and the decoder. Role names are those induction/heads.py gives: previous_token,
    duplicate_token, induction."""
    _check_sizes(n, alphabet)
    c = two_layer_parameters(n, alphabet)
    heads = [
        {
            "layer": 0,
            "head": 0,
            "role": "previous_token",
            "mechanism": "attends to position p−1 (position 0 to itself) by a nearest-position "
            "score and "
            f"writes that token's digits and squares ×2^{c.key_shift} into COPIED (12–15)",
            "query": "digits of max(p−1, 0) (PREV_HI, PREV_LO: 8, 9) ×2β₁, and −β₁ from ONE (10)",
            "key": "the key's own position digits and their squares (POS_HI..POS_LO2: 4–7)",
            "value": f"the token's digits and squares (0–3), written ×2^{c.key_shift} into COPIED "
            "(12–15)",
        },
        {
            "layer": 0,
            "head": 1,
            "role": "duplicate_token",
            "mechanism": "attends evenly to every occurrence of σ_p at or before p and writes "
            "s·(their mean "
            "1-based position) into DUP (16): exactly s·(p+1) iff σ_p is new, at most s·(p+1) − "
            "s/2 "
            "otherwise (the ⊥ test)",
            "query": "σ_p's digits (TOKEN_HI, TOKEN_LO: 0, 1) ×2β₁, and −β₁ from ONE (10)",
            "key": "the key's token digits and their squares (0–3)",
            "value": "s·(j+1) from POS_SCALED (11), written into DUP (16)",
        },
        {
            "layer": 1,
            "head": 0,
            "role": "induction",
            "mechanism": "attends to find(p): the latest key j whose previous token (copied by the "
            "previous-token head) equals σ_p, the latest winning by a recency term g·j, and "
            "writes σ_j's "
            "digits into ANSWER (17, 18)",
            "query": f"σ_p's digits (0, 1) ×2β₂/2^{c.key_shift}, −β₂/2^{c.key_shift} and g/s from "
            "ONE (10)",
            "key": "COPIED (12–15): the previous token's digits and squares, and POS_SCALED (11) "
            "= s·(j+1)",
            "value": "σ_j's digits (TOKEN_HI, TOKEN_LO: 0, 1), written into ANSWER_HI, ANSWER_LO "
            "(17, 18)",
        },
    ]
    decoder = {
        "kind": "linear",
        "classes": alphabet + 1,
        "bottom_class": alphabet,
        "description": "token logits 2⟨σ, o⟩ − ‖σ‖² on the answer digits o (17, 18): the nearest "
        "token; "
        "⊥ logit λ·(DUP − s·(p+1) + s/4), the largest when the duplicate test says σ_p is new",
    }
    return {
        "construction": "two_layer_induction",
        "residual": TWO_LAYER_RESIDUAL,
        "parameters": c.to_json(),
        "heads": heads,
        "decoder": decoder,
    }


def one_layer_roles(n: int, alphabet: int) -> dict[str, Any]:
    """The role one_layer_induction(n, alphabet)'s one head is built with, as JSON (a table model:
    ψ_in, Q̃, K̃, Ṽ per (position, token); the role name is induction/heads.py's "uniform")."""
    _check_sizes(n, alphabet)
    head = {
        "layer": 0,
        "head": 0,
        "role": "uniform",
        "mechanism": "attends evenly to every position j ≤ p and writes (σ_j+1)/(p+1) into "
        "coordinate j: "
        "the whole prefix, averaged",
        "query": "none: Q̃ = 0",
        "key": "none: K̃ = 0",
        "value": "Ṽ[j, σ] = (σ+1)·e_j: the token's code in the key's own coordinate j (0..n−1)",
    }
    decoder = {
        "kind": "induction_readout",
        "classes": alphabet + 1,
        "bottom_class": alphabet,
        "description": "ψ_out at 1-based position i reads σ_j = ⌊i·y_j + ½⌋ − 1 back for every j "
        "≤ i and "
        "answers σ_{j+1} for the latest j < i with σ_j = σ_i, else ⊥ (not a linear unembedding); "
        f"ψ_in(i, σ) = (σ+1)·e_{n} holds the token's own code in coordinate {n}",
    }
    return {"construction": "one_layer_induction", "heads": [head], "decoder": decoder}


def pointer_role(layer: int) -> str:
    """analyze heads' name for the k-hop construction's pointer head in 0-based layer ≥ 2: it
    attends to find^{2^(layer−2)}(p) — find^1 is scored as "induction"."""
    r = 2 ** (layer - 2)
    return "induction" if r == 1 else f"find^{r}"


def khop_roles(n: int, alphabet: int, hops: int) -> dict[str, Any]:
    """The roles khop_construction(n, alphabet, hops) is built with, as JSON (k = 1:
    two_layer_roles): layer 0 as the two-layer construction's, layer 1 the find head, each later
    layer one pointer head that reads the state stored at the position its pointer names
    (induction/multihop/construction.py)."""
    from headcount.induction.multihop import (
        construction as kc,  # the construction's own column names
    )

    if hops == 1:
        return two_layer_roles(n, alphabet)
    _check_sizes(n, alphabet)
    model = kc.khop_construction(n, alphabet, hops)
    two_shift = (
        f"×2^{two_layer_parameters(n, alphabet).key_shift}"  # layer 0 is the two-layer one's,
    )
    shift = f"×2^{model.info['parameters']['key_shift']}"  # with the k-hop construction's key shift
    layer_zero = [
        {
            key: value.replace(two_shift, shift) if isinstance(value, str) else value
            for key, value in h.items()
        }
        for h in two_layer_roles(n, alphabet)["heads"][:2]
    ]
    heads = [
        *layer_zero,
        {
            "layer": 1,
            "head": 0,
            "role": "induction",
            "mechanism": "attends to find(p) — the latest key j whose copied previous token "
            "equals σ_p "
            "(recency g·j), or to position 0 when σ_p is new (a sink bonus gated by the ⊥ flag) — "
            "and "
            "writes the pointer G = find(p) and the token there (H, a = 1 hop)",
            "query": "σ_p's digits, the recency constant and the ⊥ flag's sink bonus",
            "key": f"COPIED (12–15), POS_SCALED (11) and FIRST ({kc.FIRST}: non-zero at position "
            "0 only)",
            "value": f"the key's position digits → G ({kc.G_HI}, {kc.G_LO}); its token digits → H "
            f"({kc.H_HI}, {kc.H_LO})",
        },
    ]
    for layer in range(2, len(model.layers)):
        r = 2 ** (layer - 2)
        heads.append(
            {
                "layer": layer,
                "head": 0,
                "role": pointer_role(layer),
                "mechanism": f"attends to the position its pointer G = find^{r}(p) names (nearest "
                "position) "
                f"and reads that position's G (→ find^{2 * r}) and H (→ H∘find^{r}, kept where bit "
                f"{layer - 2} of k − 1 = {hops - 1} is set); the layer's ReLU MLP moves the reads "
                "into the "
                "state exactly",
                "query": f"G's digits ({kc.G_HI}, {kc.G_LO})",
                "key": "the key's own position digits and their squares (POS_HI..POS_LO2: 4–7)",
                "value": f"G, H and H's ⊥ flag ({kc.G_HI}–{kc.H_BOT}) into the read slots "
                f"({kc.TG_HI}–{kc.TH_BOT})",
            }
        )
    decoder = {
        "kind": "linear",
        "classes": alphabet + 1,
        "bottom_class": alphabet,
        "description": f"token logits 2⟨σ, H⟩ − ‖σ‖² on H's digits ({kc.H_HI}, {kc.H_LO}): the "
        "nearest "
        f"token; ⊥ logit λ·(H_BOT − 1/2) on the ⊥ flag ({kc.H_BOT})",
    }
    return {
        "construction": model.info["construction"],
        "hops": hops,
        "parameters": model.info["parameters"],
        "heads": heads,
        "decoder": decoder,
    }


def khop_floor_roles(n: int, alphabet: int, hops: int) -> dict[str, Any]:
    """The roles floor_construction(n, alphabet, hops) is built with, as JSON: layer 0 one level
    head per binary level of the position, each later layer one pointer head
    (induction/multihop/floor.py)."""
    from headcount.induction.multihop import construction as kc
    from headcount.induction.multihop import floor

    _check_sizes(n, alphabet)
    model = floor.floor_construction(n, alphabet, hops)
    heads = []
    for level in range(model.info["parameters"]["levels"]):
        key, fv, out_hi, out_lo, out_fv = floor.level_columns(level)
        heads.append(
            {
                "layer": 0,
                "head": level,
                "role": "level_match",
                "mechanism": f"attends to the latest earlier key with σ_p's token whose position "
                f"agrees with p's above bit {level} and has bit {level} = 0 where p's is 1, "
                "else to p itself; the layer's ReLU MLP keeps the first level that found one: "
                "find(p)",
                "query": "σ_p's digits and the constant (ONE: 10)",
                "key": f"the key's token digits and squares (0–3) and its level bias ({key})",
                "value": f"the next position's digits → ({out_hi}, {out_lo}); the level flag's "
                f"key part ({fv}) → {out_fv}",
            }
        )
    for layer in range(1, len(model.layers)):
        r = 2 ** (layer - 1)
        heads.append(
            {
                "layer": layer,
                "head": 0,
                "role": pointer_role(layer + 1),
                "mechanism": f"attends to the position its pointer G = find^{r}(p) names (nearest "
                f"position) and reads that position's G (→ find^{2 * r}) and H (→ H∘find^{r}, "
                f"kept where bit {layer - 1} of k = {hops} is set); the layer's ReLU MLP moves "
                "the reads into the state exactly",
                "query": f"G's digits ({kc.G_HI}, {kc.G_LO})",
                "key": "the key's own position digits and their squares (POS_HI..POS_LO2: 4–7)",
                "value": f"G, H and H's ⊥ flag ({kc.G_HI}–{kc.H_BOT}) into the read slots "
                f"({kc.TG_HI}–{kc.TH_BOT})",
            }
        )
    roles = khop_roles(n, alphabet, 2)  # the same decoder
    return roles | {
        "construction": model.info["construction"],
        "hops": hops,
        "parameters": model.info["parameters"],
        "heads": heads,
    }


def _check_sizes(n: int, alphabet: int) -> None:
    check_int("n", n, 1)
    check_int("alphabet", alphabet, 2)
