"""The `headcount` command: one sub-command group per scenario, plus `reproduce`.

Conventions (spec/README.md): `--json` prints exactly one JSON object on stdout; progress goes to stderr;
bad input exits 2 with a one-line "error: ..." on stderr (what is wrong, what is allowed), never a
traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from collections.abc import Callable
from typing import Any, NoReturn, Optional

import numpy as np
import typer

from headcount.core.errors import InternalError
from headcount.core.symbols import token_text

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Executable theory of what attention can and cannot compute.")
induction_app = typer.Typer(no_args_is_help=True, help="Induction heads (seed 000): solve, construct, predict, certify.")
app.add_typer(induction_app, name="induction")
minmax_app = typer.Typer(no_args_is_help=True, help="Min and max of a list with attention heads (seed 004 §3.1): certify, verify.")
app.add_typer(minmax_app, name="minmax")
boolean_app = typer.Typer(no_args_is_help=True, help="XOR and symmetric Boolean functions with H heads and a degree-D readout (seed 004 §3.2).")
app.add_typer(boolean_app, name="boolean")
train_app = typer.Typer(no_args_is_help=True, help="Train PyTorch models on a task; exact task metrics; save in the model format.")
app.add_typer(train_app, name="train")
sweep_app = typer.Typer(no_args_is_help=True, help="Grids of training runs: parallel, resumable, results in SQLite.")
app.add_typer(sweep_app, name="sweep")


class BadInput(Exception):
    """Raised for input the user can fix; main() prints it on one line and exits 2."""


def fail(message: str) -> NoReturn:
    raise BadInput(message)


def emit(result: dict[str, Any], as_json: bool, human: str | None = None) -> None:
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(human if human is not None else json.dumps(result, indent=2))


def parse_tokens(text: str) -> np.ndarray:
    parts = text.replace(",", " ").split()
    if not parts:
        fail("--input is empty: give tokens as integers separated by spaces, e.g. --input \"3 0 2 3\"")
    try:
        tokens = np.array([int(p) for p in parts], dtype=np.int64)
    except ValueError:
        fail(f"--input {text!r} has a non-integer token: tokens are integers 0..S-1 separated by spaces")
    if tokens.min() < 0:
        fail("--input has a negative token: tokens are integers 0..S-1")
    return tokens


MAX_TABLE_BYTES = 4 * 2**30  # memory the CLI lets a one-layer construction's tables take


def check_size(n: int, alphabet: int, layers: int | None) -> None:
    if n < 1:
        fail(f"--n {n} is too small: the sequence length must be ≥ 1")
    if alphabet < 2:
        fail(f"--alphabet {alphabet} is too small: the alphabet size must be ≥ 2")
    if layers is not None and layers not in (1, 2):
        fail(f"--layers {layers} is not available: constructions exist for --layers 1 or 2")
    if layers == 2 and alphabet > n:
        fail(f"--alphabet {alphabet} > --n {n}: the two-layer construction is for alphabet ≤ n (seed 000)")
    table_bytes = 2 * 8 * n * alphabet * (n + 1)  # the one-layer construction stores ψ_in and Ṽ tables
    if layers == 1 and table_bytes > MAX_TABLE_BYTES:
        fail(f"--layers 1 at n={n}, alphabet={alphabet} needs {table_bytes / 2**30:.1f} GiB of tables "
             f"(2·8·n·S·(n+1) bytes); allowed up to {MAX_TABLE_BYTES / 2**30:.0f} GiB")


def build_or_load(model_file: Optional[Path], layers: Optional[int], n: Optional[int], alphabet: Optional[int]):
    """The model named on the command line: --model FILE, or a construction from --layers/--n/--alphabet."""
    from headcount.core.io import ModelFileError, load_model
    from headcount.induction.constructions import one_layer_induction, two_layer_induction

    if (model_file is None) == (layers is None):
        fail("give exactly one of --model FILE or --layers {1,2} (with --n and --alphabet)")
    if model_file is not None:
        try:
            return load_model(model_file)
        except ModelFileError as err:
            fail(str(err))
    if n is None or alphabet is None:
        fail("--layers needs --n N and --alphabet S")
    check_size(n, alphabet, layers)
    return two_layer_induction(n, alphabet) if layers == 2 else one_layer_induction(n, alphabet)


JsonOpt = typer.Option(False, "--json", help="Print one JSON object on stdout.")


@induction_app.command("solve")
def induction_solve(input: str = typer.Option(..., "--input", help="Tokens, e.g. \"3 0 2 3\"."),
                    hops: int = typer.Option(1, "--hops", help="k of the k-hop task (1 = induction heads)."),
                    as_json: bool = JsonOpt) -> None:
    """The reference answer: one output per position, ⊥ where there is none."""
    from headcount.induction.task import induction_targets

    if hops < 1:
        fail(f"--hops {hops} must be ≥ 1")
    tokens = parse_tokens(input)
    outputs = [token_text(t) for t in induction_targets(tokens, hops)]
    emit({"input": [int(t) for t in tokens], "hops": hops, "outputs": outputs}, as_json, " ".join(outputs))


@induction_app.command("construct")
def induction_construct(layers: int = typer.Option(..., "--layers", help="1 or 2."),
                        n: int = typer.Option(..., "--n", help="Sequence length."),
                        alphabet: int = typer.Option(..., "--alphabet", help="Alphabet size S."),
                        out: Path = typer.Option(..., "--out", help="Model file to write (safetensors)."),
                        as_json: bool = JsonOpt) -> None:
    """Build a construction and write it as a model file."""
    from headcount.core.io import save_model

    model = build_or_load(None, layers, n, alphabet)
    try:
        save_model(model, out)
    except OSError as err:
        fail(f"cannot write {str(out)!r}: {err.strerror}")
    result = {"path": str(out), "layers": len(model.layers), "heads": model.heads, "dim": model.d_model,
              "n": n, "alphabet": alphabet}
    emit(result, as_json, f"wrote {out}: {len(model.layers)} layer(s), heads {model.heads}, dim {model.d_model}")


@induction_app.command("predict")
def induction_predict(input: str = typer.Option(..., "--input", help="Tokens, e.g. \"3 0 2 3\"."),
                      model_file: Optional[Path] = typer.Option(None, "--model", help="Model file."),
                      layers: Optional[int] = typer.Option(None, "--layers", help="Use the 1- or 2-layer construction."),
                      n: Optional[int] = typer.Option(None, "--n", help="Construction length (default: input length)."),
                      alphabet: Optional[int] = typer.Option(None, "--alphabet", help="Construction alphabet size."),
                      precision: str = typer.Option("float64", "--precision", help="fixed:p, float16, bfloat16, float32, float64 or exact."),
                      as_json: bool = JsonOpt) -> None:
    """The model's outputs on one input, in a precision mode."""
    from headcount.core.evaluate import predict
    from headcount.core.precision import parse_precision

    tokens = parse_tokens(input)
    try:
        prec = parse_precision(precision)
    except ValueError as err:
        fail(str(err))
    if layers is not None and n is None:
        n = len(tokens)
    model = build_or_load(model_file, layers, n, alphabet)
    if len(tokens) > model.n_ctx:
        fail(f"--input has {len(tokens)} tokens but the model's context length is {model.n_ctx}")
    if tokens.max() >= model.alphabet:
        fail(f"--input token {int(tokens.max())} is outside the model's alphabet 0..{model.alphabet - 1}")
    with np.errstate(all="ignore"):
        outputs = [token_text(t) for t in predict(model, tokens, prec)[0]]
    emit({"input": [int(t) for t in tokens], "precision": prec.name, "outputs": outputs}, as_json, " ".join(outputs))


@induction_app.command("certify")
def induction_certify(model_file: Optional[Path] = typer.Option(None, "--model", help="Model file."),
                      layers: Optional[int] = typer.Option(None, "--layers", help="Certify the 1- or 2-layer construction."),
                      n: int = typer.Option(..., "--n", help="Sequence length."),
                      alphabet: int = typer.Option(..., "--alphabet", help="Alphabet size S."),
                      samples: Optional[int] = typer.Option(None, "--samples", help="Random sequences when not exhaustive."),
                      seed: int = typer.Option(0, "--seed", help="Seed for the random inputs."),
                      as_json: bool = JsonOpt) -> None:
    """Check a model on all of Σ^n (when small) or random + adversarial inputs; find its precision."""
    from headcount.induction.certify import certify_induction

    check_size(n, alphabet, layers)
    if samples is not None and samples < 1:
        fail(f"--samples {samples} must be ≥ 1")
    model = build_or_load(model_file, layers, n, alphabet)
    if n > model.n_ctx or alphabet > model.alphabet:
        fail(f"the model handles n ≤ {model.n_ctx} and alphabet ≤ {model.alphabet}; got --n {n} --alphabet {alphabet}")
    result = certify_induction(model, n, alphabet, samples=samples, seed=seed)
    human = (f"{result['inputs_checked']} inputs ({'exhaustive' if result['exhaustive'] else 'sampled'}), "
             f"{result['errors']} errors, precision_bits {result['precision_bits']}, certified {result['certified']}, "
             f"size {result['size']}, exact dtypes {', '.join(result['dtypes_exact']) or 'none'}")
    emit(result, as_json, human)


def index_model(k: int, model_file: Optional[Path], random_seed: Optional[int], heads: Optional[int], dim: Optional[int]):
    """The one-layer model an INDEX command runs on: --model FILE, or a seeded random table model."""
    from headcount.core.io import ModelFileError, load_model
    from headcount.core.table import random_table

    if k < 1:
        fail(f"--k {k} is too small: k ≥ 1 (the INDEX input has length n = 2k+1)")
    if (model_file is None) == (random_seed is None):
        fail("give exactly one of --model FILE or --random-seed R (with --heads h --dim m)")
    if model_file is not None:
        try:
            model = load_model(model_file)
        except ModelFileError as err:
            fail(str(err))
        if len(model.layers) != 1:
            fail(f"{str(model_file)!r} has {len(model.layers)} layers: the INDEX reduction is about one-layer models")
        return model
    if heads is None or dim is None or heads < 1 or dim < 1:
        fail("--random-seed needs --heads h ≥ 1 and --dim m ≥ 1")
    return random_table(np.random.default_rng(random_seed), 2 * k + 1, 3, heads, dim)


@induction_app.command("protocol")
def induction_protocol(k: int = typer.Option(..., "--k", help="INDEX size: inputs have length n = 2k+1."),
                       model_file: Optional[Path] = typer.Option(None, "--model", help="One-layer model file (3 tokens: 0, 1, ? = 2)."),
                       random_seed: Optional[int] = typer.Option(None, "--random-seed", help="Use a seeded random one-layer table model."),
                       heads: Optional[int] = typer.Option(None, "--heads", help="Heads of the random model."),
                       dim: Optional[int] = typer.Option(None, "--dim", help="Embedding dimension of the random model."),
                       precision_bits: int = typer.Option(..., "--precision-bits", help="p of fixed:p."),
                       pairs: Optional[int] = typer.Option(None, "--pairs", help="Sample this many (f, i*) pairs (default: all for k ≤ 16)."),
                       seed: int = typer.Option(0, "--seed", help="Seed for sampled pairs."),
                       as_json: bool = JsonOpt) -> None:
    """Seed 000's INDEX protocol: Alice's message determines the model's answer (Bob checks every pair)."""
    from headcount.induction.index import check_protocol

    model = index_model(k, model_file, random_seed, heads, dim)
    try:
        report = check_protocol(model, k, precision_bits, pairs=pairs, seed=seed).as_dict()
    except ValueError as err:
        fail(str(err))
    human = (f"k={k}: message {report['message_bits']} bits (seed's accounting {report.get('seed_message_bits')}); "
             f"{report['pairs_checked']} pairs, {report['agreements']} agreements, {report['disagreements']} disagreements "
             f"({report['disagreements_explained']} explained by rounding ties)")
    emit(report, as_json, human)


@induction_app.command("refute")
def induction_refute(k: int = typer.Option(..., "--k", help="INDEX size: inputs have length n = 2k+1."),
                     model_file: Optional[Path] = typer.Option(None, "--model", help="One-layer model file (3 tokens: 0, 1, ? = 2)."),
                     random_seed: Optional[int] = typer.Option(None, "--random-seed", help="Use a seeded random one-layer table model."),
                     heads: Optional[int] = typer.Option(None, "--heads", help="Heads of the random model."),
                     dim: Optional[int] = typer.Option(None, "--dim", help="Embedding dimension of the random model."),
                     precision_bits: int = typer.Option(16, "--precision-bits", help="p of fixed:p (default 16)."),
                     seed: int = typer.Option(0, "--seed", help="Seed for the searches."),
                     as_json: bool = JsonOpt) -> None:
    """Find an INDEX input the one-layer model answers wrongly (confirmed by running the model)."""
    from headcount.induction.index import refute

    model = index_model(k, model_file, random_seed, heads, dim)
    try:
        result = refute(model, k, precision_bits, seed=seed).as_dict()
    except ValueError as err:
        fail(str(err))
    if result["found"]:
        human = (f"found by {result['method']}: input {' '.join(result['input'])}, position {result['position']}: "
                 f"expected {result['expected']}, model says {result['model_output']}")
    else:
        human = f"nothing found ({result['method']}); searched: {json.dumps(result['searched'])}"
    emit(result, as_json, human)


@minmax_app.command("certify")
def minmax_certify(M: int = typer.Option(..., "--M", help="Tokens are 1..M."),
                   n: int = typer.Option(..., "--n", help="List length."),
                   heads: int = typer.Option(..., "--heads", help="1: a min head and a max head separately; 2: one layer doing both."),
                   code: str = typer.Option("sign", "--code", help="sign (d = ⌈8 ln M⌉) or compact (d = ⌈log₂ M⌉)."),
                   seed: int = typer.Option(0, "--seed", help="Seed of the greedy sign code."),
                   method: Optional[str] = typer.Option(None, "--method", help="exact-histogram, sufficient-condition or brute-force (default: by M)."),
                   as_json: bool = JsonOpt) -> None:
    """Build the Appendix-A construction and certify it on all C(n+M−1, n) inputs."""
    from headcount.minmax.certify import certify_minmax

    if M < 2 or n < 2:
        fail(f"--M {M} --n {n}: need M ≥ 2 and n ≥ 2")
    if heads not in (1, 2):
        fail(f"--heads {heads} is not available: use 1 or 2")
    if code not in ("sign", "compact"):
        fail(f"--code {code!r} is not available: use sign or compact")
    if method is not None and method not in ("exact-histogram", "sufficient-condition", "brute-force"):
        fail(f"--method {method!r} is not available: use exact-histogram, sufficient-condition or brute-force")
    try:
        result = certify_minmax(M, n, heads, code=code, seed=seed, method=method)
    except ValueError as err:
        fail(str(err))
    human = (f"M={M} n={n} heads={heads} dim={result['dim']} ({result['method']}): errors min {result['errors_min']}, "
             f"max {result['errors_max']}; margins {result['margin_min']}, {result['margin_max']}")
    emit(result, as_json, human)


@minmax_app.command("construct")
def minmax_construct(M: int = typer.Option(..., "--M", help="Tokens are 1..M."),
                     n: int = typer.Option(..., "--n", help="List length."),
                     heads: int = typer.Option(..., "--heads", help="2: the two-head layer; 1: the min head alone, with θ = v for both classifiers."),
                     code: str = typer.Option("sign", "--code", help="sign or compact."),
                     seed: int = typer.Option(0, "--seed", help="Seed of the greedy sign code."),
                     out: Path = typer.Option(..., "--out", help="Model file to write (safetensors)."),
                     as_json: bool = JsonOpt) -> None:
    """Write the construction as a model file (heads 1: a single head that `verify` shows fails max)."""
    from headcount.minmax.construction import compact_code, min_head, sign_code, two_head_layer
    from headcount.minmax.model import MinMaxModel, TokenLayer, save_minmax

    if M < 2 or n < 2:
        fail(f"--M {M} --n {n}: need M ≥ 2 and n ≥ 2")
    if heads not in (1, 2) or code not in ("sign", "compact"):
        fail(f"--heads {heads} --code {code!r}: use --heads 1 or 2 and --code sign or compact")
    codes = sign_code(M, seed=seed) if code == "sign" else compact_code(M)
    if heads == 2:
        model = two_head_layer(M, n, codes)
    else:
        head, clf = min_head(M, n, codes)
        model = MinMaxModel(TokenLayer((head,)), clf, clf, {"construction": "min_head_alone", "M": M, "n": n})
    try:
        save_minmax(model, out)
    except OSError as err:
        fail(f"cannot write {str(out)!r}: {err.strerror}")
    emit({"path": str(out), "M": M, "n": n, "heads": heads, "dim": model.layer.dim, "code": code}, as_json,
         f"wrote {out}: {heads} head(s), dim {model.layer.dim}")


@minmax_app.command("verify")
def minmax_verify(M: int = typer.Option(..., "--M", help="Tokens are 1..M."),
                  n: int = typer.Option(..., "--n", help="List length."),
                  model_file: Optional[Path] = typer.Option(None, "--model", help="A single-head min/max model file."),
                  random_seed: Optional[int] = typer.Option(None, "--random-seed", help="Use a seeded random single head."),
                  dim: Optional[int] = typer.Option(None, "--dim", help="Value dimension of the random head."),
                  method: str = typer.Option("exact", "--method", help="exact (histogram linearity) or brute (all multisets)."),
                  as_json: bool = JsonOpt) -> None:
    """Decide whether one head + two classifiers compute min and max on every input; counterexamples."""
    from headcount.core.io import ModelFileError
    from headcount.minmax.model import load_minmax, random_single_head
    from headcount.minmax.task import count_multisets
    from headcount.minmax.verify import scope_of, verify_brute, verify_exact_one_head

    if M < 2 or n < 2:
        fail(f"--M {M} --n {n}: need M ≥ 2 and n ≥ 2")
    if method not in ("exact", "brute"):
        fail(f"--method {method!r} is not available: use exact or brute")
    if (model_file is None) == (random_seed is None):
        fail("give exactly one of --model FILE or --random-seed R (with --dim d)")
    if model_file is not None:
        try:
            model = load_minmax(model_file)
        except ModelFileError as err:
            fail(str(err))
    else:
        if dim is None or dim < 1:
            fail("--random-seed needs --dim d ≥ 1")
        model = random_single_head(np.random.default_rng(random_seed), M, dim)
    if len(model.layer.heads) != 1:
        fail(f"the model has {len(model.layer.heads)} heads: verify is for a single head (use certify for layers)")
    head = model.layer.heads[0]
    if head.M != M:
        fail(f"--M {M} does not match the model's M = {head.M}")
    if method == "brute" and count_multisets(M, n) > 2_000_000:
        fail(f"--method brute would enumerate {count_multisets(M, n)} inputs: allowed up to 2000000 (use exact)")
    result: dict[str, Any] = {"M": M, "n": n, "heads": 1, "dim": head.dim,
                              "method": "exact-histogram" if method == "exact" else "brute-force",
                              "inputs_covered": count_multisets(M, n)}
    verdicts = []
    try:
        for task, clf in (("min", model.classifier_min), ("max", model.classifier_max)):
            v = verify_exact_one_head(head, clf, task, n) if method == "exact" else verify_brute(model, clf, task, n)
            verdicts.append(v)
            result[f"errors_{task}"] = v.errors if v.errors is not None else (0 if v.correct else None)
            result[f"margin_{task}"] = v.margin
            result[f"counterexample_{task}"] = None if v.correct else [int(t) for t in v.worst_input]
    except ValueError as err:
        fail(str(err))
    result["scope"] = scope_of(*verdicts)
    from headcount.minmax.lower_bound import lemma6_quantities, longest_monotone_run

    result["monotone_run"] = longest_monotone_run(head).report()
    result["lemma6"] = lemma6_quantities(head, n)
    human = (f"min: {'correct' if result['counterexample_min'] is None else 'wrong on ' + str(result['counterexample_min'])}; "
             f"max: {'correct' if result['counterexample_max'] is None else 'wrong on ' + str(result['counterexample_max'])}")
    emit(result, as_json, human)


@minmax_app.command("search")
def minmax_search(M: int = typer.Option(..., "--M", help="Tokens are 1..M."),
                  n: int = typer.Option(..., "--n", help="List length."),
                  dim: int = typer.Option(..., "--dim", help="Largest value dimension to try (d = 1..dim)."),
                  restarts: int = typer.Option(2, "--restarts", help="Random restarts per dimension."),
                  steps: int = typer.Option(60, "--steps", help="Optimisation steps per restart."),
                  seed: int = typer.Option(0, "--seed", help="Seed of the restarts."),
                  as_json: bool = JsonOpt) -> None:
    """Search for ONE head + two classifiers doing both min and max; the smallest d reached, and the
    confirmed counterexamples of the best failures (a failed search is evidence, not a proof)."""
    from headcount.minmax.lower_bound import smallest_dimension

    if M < 2 or n < 2 or dim < 1 or restarts < 1 or steps < 0:
        fail(f"--M {M} --n {n} --dim {dim} --restarts {restarts} --steps {steps}: need M, n ≥ 2, dim, restarts ≥ 1, steps ≥ 0")
    try:
        result = smallest_dimension(M, n, dim, restarts=restarts, steps=steps, seed=seed)
    except ValueError as err:
        fail(str(err))
    emit(result, as_json, f"smallest d found: {result.get('smallest_d')}")


@boolean_app.command("construct")
def boolean_construct(function: str = typer.Option(..., "--function", help="xor, and, or, majority, threshold:k, exact:k, mod:m, or F:+-…"),
                      n: int = typer.Option(..., "--n", help="Number of input bits."),
                      degree: int = typer.Option(..., "--degree", help="Readout degree D."),
                      heads: int = typer.Option(..., "--heads", help="Heads H."),
                      out: Optional[Path] = typer.Option(None, "--out", help="Also save the model (exact rationals, safetensors + JSON)."),
                      as_json: bool = JsonOpt) -> None:
    """Theorem 3: H heads + a degree-D readout computing a symmetric function, certified exactly on every
    weight t = 0..n (all 2^n inputs); D·H below the threshold degree is refused (Theorem 2)."""
    from headcount.boolean.certify import construct_and_certify

    if n < 1 or degree < 1 or heads < 1:
        fail(f"--n {n} --degree {degree} --heads {heads}: each must be ≥ 1")
    try:
        result = construct_and_certify(function, n, degree, heads, out=None if out is None else str(out))
    except ValueError as err:
        fail(str(err))
    emit(result, as_json, f"{function} on {n} bits, D={degree}, H={heads}: {result['route']}, dim {result['dim']} "
                          f"(bound {result['dim_bound']}), certified {result['certified']}, errors {result['errors']}")


@boolean_app.command("check")
def boolean_check(model_file: Path = typer.Option(..., "--model", help="A Boolean model file (boolean construct/train --out)."),
                  function: str = typer.Option(..., "--function", help="The target: a symmetric function by name or F:+-…"),
                  n: Optional[int] = typer.Option(None, "--n", help="Input bits (default: the n recorded in the file)."),
                  as_json: bool = JsonOpt) -> None:
    """Check any Boolean model exactly on all 2^n inputs, with its Theorem-2 polynomial R (deg R ≤ D·H,
    sign R = the model): a wrong input when it errs — always, when D·H is below the threshold degree."""
    from headcount.boolean.certify import certify_boolean_model
    from headcount.boolean.functions import parse_function, sign_changes
    from headcount.boolean.model import load_boolean
    from headcount.boolean.theorem2 import theorem2_check
    from headcount.core.io import ModelFileError

    try:
        layer, readout, info = load_boolean(model_file)
    except (ModelFileError, OSError) as err:
        fail(str(err))
    n = n if n is not None else info.get("n")
    if not isinstance(n, int) or n < 1:
        fail("--n N ≥ 1 is needed: the model file does not record its number of input bits")
    try:
        F = parse_function(function, n)
    except ValueError as err:
        fail(str(err))
    T = sign_changes(F)
    t2 = theorem2_check(layer, readout, n)
    result = {"function": function, "n": n, "threshold_degree": T, "degree": readout.degree, "heads": layer.num_heads,
              "dim": layer.dim, "below_bound": readout.degree * layer.num_heads < T,
              **certify_boolean_model(layer, readout, F),
              "theorem2": {"degree_R": t2["degree_R"], "bound": t2["bound"], "degree_ok": t2["degree_ok"],
                           "signs_match": t2["signs_match"]}}
    wrong = result["wrong_input"]
    emit(result, as_json, f"{function} on {n} bits: " + ("correct on all inputs (exact)" if result["certified"] else
                          f"{result['errors']} of {n + 1} weights wrong, e.g. x = {wrong['x']}")
                          + f"; Theorem 2: deg R = {t2['degree_R']} ≤ D·H = {t2['bound']}")


@boolean_app.command("threshold-degree")
def boolean_threshold_degree(function: Optional[str] = typer.Option(None, "--function", help="A symmetric function by name or F:+-…"),
                             n: Optional[int] = typer.Option(None, "--n", help="Number of input bits (with --function)."),
                             truth_table: Optional[str] = typer.Option(None, "--truth-table", help="2^n characters 0/1 ('0' → +1, '1' → −1)."),
                             as_json: bool = JsonOpt) -> None:
    """Threshold degree: sign changes of F for symmetric functions, an LP (HiGHS) with a witness otherwise."""
    from headcount.boolean.functions import parse_function, threshold_degree_symmetric

    if (function is None) == (truth_table is None):
        fail("give exactly one of --function NAME (with --n N) or --truth-table BITS")
    try:
        if function is not None:
            if n is None or n < 1:
                fail("--function needs --n N ≥ 1")
            result = {"function": function, "n": n, "threshold_degree": threshold_degree_symmetric(parse_function(function, n)),
                      "method": "symmetric", "witness": None}
        else:
            from headcount.boolean.threshold import parse_truth_table, threshold_degree_lp

            values, bits = parse_truth_table(truth_table)
            lp = threshold_degree_lp(values, bits)
            result = {"method": "lp", **lp.to_json()}
    except ValueError as err:
        fail(str(err))
    certified = {True: ", both bounds certified", False: ", lower bound = HiGHS verdict"}.get(result.get("lower_bound_certified"), "")
    emit(result, as_json, f"threshold degree {result['threshold_degree']} ({result['method']}{certified})")


@boolean_app.command("basis")
def boolean_basis(degree: int = typer.Option(..., "--degree", help="At most D summands."),
                  heads: int = typer.Option(..., "--heads", help="Elements lie in 1..H."),
                  range_: int = typer.Option(..., "--range", help="Every 0..T must be representable."),
                  optimal: bool = typer.Option(False, "--optimal", help="Exact search for the smallest basis."),
                  as_json: bool = JsonOpt) -> None:
    """An additive D-basis inside [H] with range ≥ T: Lemma 14's, or the proven smallest (--optimal)."""
    from headcount.boolean.bases import basis_range, lemma14_basis

    if degree < 1 or heads < 1 or range_ < 0:
        fail(f"--degree {degree} --heads {heads} --range {range_}: need D, H ≥ 1 and T ≥ 0")
    if range_ > degree * heads:
        fail(f"--range {range_} > degree·heads = {degree * heads}: no basis inside [H] reaches it with ≤ D summands")
    try:
        if optimal:
            from headcount.boolean.search import smallest_basis

            basis = smallest_basis(degree, heads, range_)
            if basis is None:
                fail("the exact search ran out of time: use smaller parameters or drop --optimal")
        else:
            basis = lemma14_basis(degree, heads)
            if basis is None or basis_range(basis, degree) < range_:
                fail(f"Lemma 14 gives no basis with range ≥ {range_} for D={degree}, H={heads}: try --optimal")
    except ValueError as err:
        fail(str(err))
    result = {"basis": sorted(int(b) for b in basis), "size": len(basis), "range_reached": basis_range(basis, degree),
              "optimal": bool(optimal)}
    emit(result, as_json, f"basis {result['basis']} (size {result['size']}, range {result['range_reached']})")


@boolean_app.command("stamps")
def boolean_stamps(summands: int = typer.Option(..., "--summands", help="At most D summands."),
                   size: int = typer.Option(..., "--size", help="k positive integers."),
                   as_json: bool = JsonOpt) -> None:
    """The postage-stamp problem: the largest T such that some k positive integers represent every 0..T
    with at most D summands, and one set reaching it."""
    from headcount.boolean.search import stamps

    if summands < 1 or size < 1:
        fail(f"--summands {summands} --size {size}: both must be ≥ 1")
    try:
        reach, basis = stamps(summands, size)
    except ValueError as err:
        fail(str(err))
    emit({"range": int(reach), "basis": sorted(int(b) for b in basis)}, as_json, f"range {reach} with {sorted(basis)}")

# ------------------------------------------------------------------------------------------------
# learning: train, sweep, experiment
# ------------------------------------------------------------------------------------------------

StepsOpt = typer.Option(None, "--steps", help="Training steps (default: the task's measured default).")
SeedOpt = typer.Option(0, "--seed", help="Seed of initialisation and data.")
LrOpt = typer.Option(None, "--lr", help="Peak learning rate of AdamW (default: the task's).")
OutOpt = typer.Option(None, "--out", help="Save the trained model here (.safetensors, headcount model format).")
ProgressOpt = typer.Option(False, "--progress", help="Progress bar on stderr.")


def _train(task: str, as_json: bool, human: Callable[[dict], str], **kwargs: Any) -> None:
    from headcount.learn.train import run_config

    config = {"task": task, **{k: (str(v) if isinstance(v, Path) else v) for k, v in kwargs.items() if v is not None}}
    try:
        result = run_config(config)
    except ValueError as err:
        fail(str(err))
    emit(result, as_json, human(result))


@train_app.command("induction")
def train_induction_cmd(layers: int = typer.Option(2, "--layers"), heads: int = typer.Option(1, "--heads"),
                        dim: int = typer.Option(32, "--dim", help="d_model."), n: int = typer.Option(16, "--n"),
                        alphabet: int = typer.Option(4, "--alphabet"),
                        hops: int = typer.Option(1, "--hops", help="k > 1: k-hop, hop count 1..k as the first token."),
                        steps: Optional[int] = StepsOpt, seed: int = SeedOpt, lr: Optional[float] = LrOpt,
                        positional: str = typer.Option("learned", "--positional", help="learned, sinusoidal or circle."),
                        mlp: bool = typer.Option(False, "--mlp"), out: Optional[Path] = OutOpt,
                        progress: bool = ProgressOpt, as_json: bool = JsonOpt) -> None:
    """Train a causal attention model on induction heads (or k-hop); accuracy on non-⊥, ⊥ and INDEX inputs."""
    _train("induction" if hops == 1 else "khop", as_json,
           lambda r: (f"accuracy {r['accuracy']:.4f} (non-⊥), {r['accuracy_bottom']:.4f} (⊥)"
                      + (f", {r['accuracy_index']:.4f} (INDEX)" if r.get("accuracy_index") is not None else "")
                      + f"; {r['steps']} steps in {r['wall_seconds']:.0f} s" + (f"; saved {r['model_path']}" if r.get("model_path") else "")),
           layers=layers, heads=heads, dim=dim, n=n, alphabet=alphabet, hops=hops, steps=steps, seed=seed, lr=lr,
           positional=positional, mlp=mlp, out=out, progress=progress)


@train_app.command("minmax")
def train_minmax_cmd(M: int = typer.Option(8, "--M"), n: int = typer.Option(4, "--n"), heads: int = typer.Option(1, "--heads"),
                     dim: int = typer.Option(4, "--dim"), steps: Optional[int] = StepsOpt, seed: int = SeedOpt,
                     lr: Optional[float] = LrOpt, out: Optional[Path] = OutOpt, progress: bool = ProgressOpt,
                     as_json: bool = JsonOpt) -> None:
    """Train H heads + min and max classifiers; exact accuracy, and the exact one-head verifier for H = 1."""
    _train("minmax", as_json, lambda r: f"accuracy min {r['accuracy_min']:.4f}, max {r['accuracy_max']:.4f}, both {r['accuracy_both']:.4f}",
           M=M, n=n, heads=heads, dim=dim, steps=steps, seed=seed, lr=lr, out=out, progress=progress)


@train_app.command("boolean")
def train_boolean_cmd(function: str = typer.Option("xor", "--function"), n: int = typer.Option(8, "--n"),
                      degree: int = typer.Option(2, "--degree"), heads: int = typer.Option(4, "--heads"),
                      dim: Optional[int] = typer.Option(None, "--dim", help="Default: Theorem 3's bound."),
                      steps: Optional[int] = StepsOpt, seed: int = SeedOpt, lr: Optional[float] = LrOpt,
                      out: Optional[Path] = OutOpt, progress: bool = ProgressOpt, as_json: bool = JsonOpt) -> None:
    """Train H heads over {0,1} with a degree-D readout; checked on all 2^n inputs, exactly."""
    _train("boolean", as_json, lambda r: f"{'solved' if r['solved_exact'] else 'not solved'}: {r['accuracy_all_inputs']:.4f} of all inputs"
           + (" (D·H below the threshold degree: impossible by Theorem 2)" if r["below_bound"] else ""),
           function=function, n=n, degree=degree, heads=heads, dim=dim, steps=steps, seed=seed, lr=lr, out=out, progress=progress)


def _sweep_errors():
    from headcount.learn.store import ResultsDBError
    from headcount.learn.sweep import SweepError

    return (SweepError, ResultsDBError, ValueError)


def _flag_value(text: str) -> Any:
    """A --fixed / --grid value: int, float, true/false, else the string itself."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def _spec_from_flags(name: Optional[str], task: Optional[str], fixed: list[str], grid: list[str], seeds: Optional[str]) -> dict:
    if not task:
        fail("give a sweep file, or --task with --grid KEY=V1,V2 (and optional --fixed KEY=V, --seeds 0,1, --name)")
    spec: dict[str, Any] = {"sweep": {"name": name or f"{task}-flags", "task": task}, "fixed": {}, "grid": {}}
    for item, table in [(f, "fixed") for f in fixed] + [(g, "grid") for g in grid]:
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            fail(f"--{table} {item!r}: write KEY=VALUE" + (" or KEY=V1,V2,…" if table == "grid" else ""))
        spec[table][key.strip()] = ([_flag_value(v) for v in value.split(",")] if table == "grid" else _flag_value(value))
    if seeds:
        try:
            spec["sweep"]["seeds"] = [int(v) for v in seeds.split(",")]
        except ValueError:
            fail(f"--seeds {seeds!r}: give integers separated by commas, e.g. --seeds 0,1,2")
    return spec


@sweep_app.command("run")
def sweep_run(spec: Optional[Path] = typer.Argument(None, help="Sweep file (TOML); or build the sweep from the flags below."),
              db: Path = typer.Option(..., "--db", help="Results database (SQLite; created if missing)."),
              workers: Optional[int] = typer.Option(None, "--workers", help="Parallel workers (default: CPUs)."),
              backend: str = typer.Option("local", "--backend", help="local (worker processes) or ray."),
              address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (backend ray)."),
              name: Optional[str] = typer.Option(None, "--name", help="Without a file: the sweep's name (and experiment label)."),
              task: Optional[str] = typer.Option(None, "--task", help="Without a file: induction, khop, minmax or boolean."),
              fixed: list[str] = typer.Option([], "--fixed", help="Without a file: KEY=VALUE for every run (repeatable)."),
              grid: list[str] = typer.Option([], "--grid", help="Without a file: KEY=V1,V2,… a grid axis (repeatable)."),
              seeds: Optional[str] = typer.Option(None, "--seeds", help="Without a file: seeds, e.g. 0,1,2."),
              progress: bool = ProgressOpt, as_json: bool = JsonOpt) -> None:
    """Run every run of the sweep not yet done in the database (re-running resumes)."""
    from headcount.learn.sweep import run_sweep

    if spec is not None:
        if task or fixed or grid or seeds or name:
            fail("give either a sweep file or --task/--fixed/--grid/--seeds/--name, not both")
        if not spec.is_file():
            fail(f"sweep file {spec} does not exist: give a TOML file with [sweep], [fixed] and [grid] tables")
        source: Any = spec
    else:
        source = _spec_from_flags(name, task, fixed, grid, seeds)
    if backend not in ("local", "ray"):
        fail(f"--backend {backend!r} is not available: use local or ray")
    if workers is not None and workers < 1:
        fail(f"--workers {workers}: need at least 1")
    try:
        counts = run_sweep(source, db, workers=workers, backend=backend, address=address, progress=progress)
    except _sweep_errors() as err:
        fail(str(err))
    emit(counts, as_json, f"{counts['runs_done_now']} runs done now, {counts['runs_done_before']} before, "
                          f"{counts['runs_failed']} failed, of {counts['runs_total']}")


@sweep_app.command("table")
def sweep_table_cmd(db: Path = typer.Option(..., "--db"), experiment: str = typer.Option(..., "--experiment"),
                    format: str = typer.Option("md", "--format", help="md, csv or json."),
                    as_json: bool = JsonOpt) -> None:
    """The experiment's runs aggregated over seeds, from the database."""
    from headcount.learn.sweep import sweep_table

    if not db.is_file():
        fail(f"results database {db} does not exist: run a sweep with --db {db} first")
    if as_json:
        format = "json"
    if format not in ("md", "csv", "json"):
        fail(f"--format {format!r} is not available: use md, csv or json")
    try:
        text = sweep_table(db, experiment, format=format)
    except _sweep_errors() as err:
        fail(str(err))
    print(text.rstrip("\n"))


@app.command("experiment")
def experiment_cmd(name: str = typer.Argument(..., help="induction-depth, khop, minmax-heads or xor-phase."),
                   scale: str = typer.Option("quick", "--scale", help="quick or full."),
                   db: Path = typer.Option(Path("headcount-results.sqlite"), "--db", help="Results database."),
                   workers: Optional[int] = typer.Option(None, "--workers"),
                   backend: str = typer.Option("local", "--backend", help="local or ray."),
                   address: Optional[str] = typer.Option(None, "--address"),
                   progress: bool = ProgressOpt, as_json: bool = JsonOpt) -> None:
    """Run one learning experiment of the spec (a resumable sweep), then its table and figure from the database."""
    from headcount.learn.experiments import EXPERIMENTS, run_experiment

    if name not in EXPERIMENTS:
        fail(f"unknown experiment {name!r}: use one of {', '.join(EXPERIMENTS)}")
    if scale not in ("quick", "full"):
        fail(f"--scale {scale!r} is not available: use quick or full")
    if backend not in ("local", "ray"):
        fail(f"--backend {backend!r} is not available: use local or ray")
    try:
        result = run_experiment(name, scale, db, workers=workers, backend=backend, address=address, progress=progress)
    except _sweep_errors() as err:
        fail(str(err))
    figure = result["figure"]
    emit(result, as_json, result["table"] + (f"\nfigure: {figure['png']} ({figure['svg']})\n{figure['caption']}" if figure else ""))



@app.command("reproduce")
def reproduce(scale: str = typer.Option("quick", "--scale", help="quick (default, minutes) or full."),
              only: Optional[str] = typer.Option(None, "--only", help="Run only claims whose id matches this pattern."),
              out: Path = typer.Option(Path("headcount-report"), "--out", help="Output folder."),
              as_json: bool = JsonOpt) -> None:
    """Re-derive every claim of both papers and write a report (exit 1 if any claim fails)."""
    if scale not in ("quick", "full"):
        fail(f"--scale {scale!r} is not available: use quick or full")
    from headcount.report.reproduce import run_reproduce

    try:
        summary = run_reproduce(scale=scale, only=only, out_dir=str(out))
    except ValueError as err:
        fail(str(err))
    lines = [f"{c['status']:4}  {c['id']:40}  {c['statement']}" for c in summary["claims"]]
    lines.append(f"{summary['passed']} passed, {summary['failed']} failed in {summary['wall_seconds']:.0f} s; report in {summary['out_dir']}")
    emit(summary, as_json, "\n".join(lines))
    if summary["failed"]:
        raise typer.Exit(1)


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the Typer app, turning usage errors and BadInput into one line and exit 2, and an
    internal inconsistency (InternalError, AssertionError) into one line and exit 1."""
    try:
        app(args=argv, standalone_mode=False)
    except BadInput as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except typer.TyperException as err:  # usage errors (exit_code 2) and other click-level errors
        if type(err).__name__ == "NoArgsIsHelpError":
            print(err.format_message(), file=sys.stderr)
            sys.exit(0)
        lines = err.format_message().strip().splitlines() or ["invalid usage"]
        print(f"error: {lines[0]} (see --help)", file=sys.stderr)
        sys.exit(err.exit_code)
    except typer.Exit as err:
        sys.exit(err.exit_code)
    except typer.Abort:
        print("error: aborted", file=sys.stderr)
        sys.exit(130)
    except (InternalError, AssertionError) as err:  # a bug, not bad input: one line, exit 1
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        print(f"internal error (a bug in headcount, please report it): {first}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
