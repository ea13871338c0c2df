"""The number systems of the formal model and of its proofs: precision modes (fixed:p and the IEEE
types), midpoint–radius boxes in float64 with outward rounding (Box), exact signs of exponential
polynomials, exact integer arithmetic through python-flint, rotary position tables as Arb
enclosures, and exact infeasibility certificates for strict linear systems (Gordan). No model, no
attention: everything above builds on these.
"""

from headcount.core.numbers.arb import FLINT_LOCK, dyadic, fmpz_mat, int_array, int_matmul
from headcount.core.numbers.expsum import MAX_PREC, UndecidedError, as_fmpq, sign_exp_poly
from headcount.core.numbers.gordan import (
    check_gordan,
    exact_gordan,
    float_matrix,
    gordan_certificate,
    solve_rational,
    strict_solution,
)
from headcount.core.numbers.interval import (
    SAFETY,
    TINY,
    Box,
    U,
    add_bounds,
    affine_bounds,
    box_from_interval,
    exact_dot,
    fraction_bits,
    gamma,
    inflate,
    mul_bounds,
    outward,
    quantize_bounds,
    scale_bounds,
    underflow_count,
)
from headcount.core.numbers.precision import (
    EXACT,
    FLOAT64,
    IEEE_DTYPES,
    Precision,
    fixed,
    parse_precision,
    round_bfloat16,
    round_fixed,
)
from headcount.core.numbers.rotary import RotaryTable, rotary_table

__all__ = [
    "EXACT",
    "FLINT_LOCK",
    "FLOAT64",
    "IEEE_DTYPES",
    "MAX_PREC",
    "SAFETY",
    "TINY",
    "U",
    "Box",
    "Precision",
    "RotaryTable",
    "UndecidedError",
    "add_bounds",
    "check_gordan",
    "exact_gordan",
    "float_matrix",
    "gordan_certificate",
    "solve_rational",
    "strict_solution",
    "affine_bounds",
    "as_fmpq",
    "box_from_interval",
    "dyadic",
    "exact_dot",
    "fixed",
    "fmpz_mat",
    "fraction_bits",
    "gamma",
    "inflate",
    "int_array",
    "int_matmul",
    "mul_bounds",
    "outward",
    "parse_precision",
    "quantize_bounds",
    "round_bfloat16",
    "rotary_table",
    "round_fixed",
    "scale_bounds",
    "sign_exp_poly",
    "underflow_count",
]
