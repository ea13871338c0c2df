#!/usr/bin/env python
"""Benchmark of training throughput: headcount's SequenceModel against a torch.nn.TransformerEncoder
model.

    python benchmarks/bench_learn.py [--quick] [--json] [--two-threads]

Figures (benchmarks/README.md, section "bench_learn.py", explains each), in one process, on the
induction task (``headcount.learn.train.induction_batch``, uniform σ, alphabet S = 4), for (n=16,
d=32, L=2, H=1) — the training experiments' default — and (n=64, d=64, L=2, H=4) (default run only),
batch 64:

1. training steps/second with ``torch.set_num_threads(1)`` (``loop.one_thread``, as training runs
   use) of
   (a) ``SequenceModel`` with mlp=True, layernorm=True (d_mlp = 4·d: pre-LN blocks, the closest
       match) and
   (b) the attention-only default ``SequenceModel`` (what the experiments train), each against the
       same
   ``EncoderBaseline``: token + learned positional ``nn.Embedding``, ``nn.TransformerEncoder`` of
   ``nn.TransformerEncoderLayer(d, H, dim_feedforward=4·d, dropout=0, batch_first=True,
   norm_first=True)``
   with a final LayerNorm and ``is_causal=True`` + ``generate_square_subsequent_mask``,
   ``nn.Linear`` to
   S + 1 classes. Every model runs ``loop.fit``'s step (AdamW betas (0.9, 0.98), weight decay 0.01,
   lr 3e-3 with ``lr_at``'s warm-up + cosine schedule, gradient clipping at 1, cross-entropy on the
   induction targets) on the same pre-generated batches from the same seed; warm-up steps are not
   timed;
   timed blocks of the three models are interleaved and the best block counts. Checks: the
   benchmark's
   step reproduces ``loop.fit`` bit for bit, each model's loss falls over the timed steps, every
   model
   is causal;
2. the parameter counts of the three models;
3. forward-only batches/second (eval mode, ``torch.no_grad``) on one batch;
4. with --two-threads, the same training comparison with ``torch.set_num_threads(2)`` (fresh models,
   fewer steps; on a shared 2-core machine these rows are slow to take and noisy, hence not in the
   default run);
5. ``induction_batch``'s cost per batch, which ``train_induction`` pays on every step but which is
   not in (1).

The readable table goes to stdout, or to stderr with --json (then stdout holds one JSON object).
Progress lines go to stderr. Default run: ~40-60 s on 2 cores (+ ~30 s with --two-threads); --quick:
~10 s.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F_nn
from torch import nn

from bench_common import best_time, figure, finish_table, log, numpy_blas_threads
from bench_common import machine_info as common_machine_info
from headcount.learn.loop import fit, lr_at, one_thread
from headcount.learn.models import SequenceConfig, SequenceModel
from headcount.learn.train import IGNORE, INDUCTION_LR, induction_batch

ALPHABET = 4  # the training experiments' default alphabet
BATCH = 64
WEIGHT_DECAY = 0.01  # train_induction's default
SEED = 0
MODELS = ("ours_full", "ours_attn", "encoder")
LABELS = {
    "ours_full": "SequenceModel mlp+LN (d_mlp=4d)",
    "ours_attn": "SequenceModel attention-only",
    "encoder": "nn.TransformerEncoder",
}


# ------------------------------------------------------------------------------------------------
# Models
# ------------------------------------------------------------------------------------------------


class EncoderBaseline(nn.Module):
    """A straightforward causal model from torch.nn: token + learned positional embeddings, a pre-LN
    nn.TransformerEncoder (ReLU feed-forward of width d_ff, dropout 0, final LayerNorm), a linear
    decoder to `classes` outputs. forward(tokens [batch pos] int64) -> logits [batch pos
    classes]."""

    def __init__(
        self, vocab: int, classes: int, n_ctx: int, layers: int, heads: int, dim: int, d_ff: int
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(n_ctx, dim)
        layer = nn.TransformerEncoderLayer(
            dim,
            heads,
            dim_feedforward=d_ff,
            dropout=0.0,
            activation="relu",
            batch_first=True,
            norm_first=True,
        )
        # enable_nested_tensor only matters for padding masks (none here) and warns with norm_first
        self.encoder = nn.TransformerEncoder(
            layer, layers, norm=nn.LayerNorm(dim), enable_nested_tensor=False
        )
        self.decoder = nn.Linear(dim, classes)
        self.register_buffer(
            "mask", nn.Transformer.generate_square_subsequent_mask(n_ctx), persistent=False
        )

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[1]
        x = self.embed(tokens) + self.pos.weight[:n]
        return self.decoder(self.encoder(x, mask=self.mask[:n, :n], is_causal=True))


def build(kind: str, size: dict[str, int]) -> nn.Module:
    """A freshly initialised model of `kind` at `size`, seeded with SEED (so every run starts
    alike)."""
    torch.manual_seed(SEED)
    n, d, L, H = size["n"], size["dim"], size["layers"], size["heads"]
    if kind == "encoder":
        return EncoderBaseline(ALPHABET, ALPHABET + 1, n, L, H, d, 4 * d)
    full = kind == "ours_full"
    return SequenceModel(
        SequenceConfig(
            vocab=ALPHABET,
            alphabet=ALPHABET,
            n_ctx=n,
            layers=L,
            heads=H,
            dim=d,
            mlp=full,
            layernorm=full,
            d_mlp=4 * d if full else None,
        )
    )


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def batches(size: dict[str, int], count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """`count` training batches (inputs, class targets) from train.induction_batch, seeded: every
    model sees the same data in the same order."""
    rng = np.random.default_rng(SEED)
    return [
        induction_batch(rng, BATCH, size["n"], ALPHABET, 1, False, "uniform") for _ in range(count)
    ]


def batch_loss(model: nn.Module, inputs: np.ndarray, target: np.ndarray) -> torch.Tensor:
    """train_induction's loss: cross-entropy over every position, ⊥ (class alphabet) included."""
    logits = model(torch.from_numpy(inputs))
    return F_nn.cross_entropy(
        logits.reshape(-1, ALPHABET + 1), torch.from_numpy(target).reshape(-1), ignore_index=IGNORE
    )


# ------------------------------------------------------------------------------------------------
# Training
# ------------------------------------------------------------------------------------------------


class Trainer:
    """loop.fit cut into blocks, so the models' timed blocks can be interleaved: the same
    AdamW (betas (0.9, 0.98)), lr_at schedule over `steps` with fit's default warm-up,
    zero_grad(set_to_none), clip_grad_norm_ at 1 and loss.item() per step. check_fit() verifies that
    it reproduces fit exactly."""

    def __init__(
        self,
        model: nn.Module,
        data: list[tuple[np.ndarray, np.ndarray]],
        steps: int,
        lr: float = INDUCTION_LR,
        weight_decay: float = WEIGHT_DECAY,
        clip: float = 1.0,
    ):
        self.model, self.data, self.steps, self.lr, self.clip = model, data, steps, lr, clip
        self.warmup = max(1, min(100, steps // 10))  # fit's default
        self.opt = torch.optim.AdamW(
            model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=weight_decay
        )
        self.step = 0
        self.losses: list[float] = []
        model.train()

    def run(self, k: int) -> None:
        model, opt = self.model, self.opt
        for _ in range(k):
            for group in opt.param_groups:
                group["lr"] = lr_at(self.step, self.steps, self.lr, self.warmup)
            loss = batch_loss(model, *self.data[self.step])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), self.clip)
            opt.step()
            self.losses.append(loss.item())
            self.step += 1


def check_fit(kind: str, size: dict[str, int], steps: int) -> bool:
    """True when Trainer and loop.fit give bit-identical losses and weights over `steps` steps."""
    data = batches(size, steps)
    a = build(kind, size)
    b = copy.deepcopy(a)
    losses_fit = fit(
        a, lambda step: batch_loss(a, *data[step]), steps, INDUCTION_LR, weight_decay=WEIGHT_DECAY
    )
    trainer = Trainer(b, data, steps)
    trainer.run(steps)
    same_weights = all(
        torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values())
    )
    return losses_fit == trainer.losses and same_weights


def causal(model: nn.Module, size: dict[str, int]) -> bool:
    """Changing the last token leaves every earlier position's logits unchanged (and changes the
    last position's), in training mode with grad and in eval mode without (the encoder's inference
    fast path)."""
    x = torch.from_numpy(batches(size, 1)[0][0])
    y = x.clone()
    y[:, -1] = (y[:, -1] + 1) % ALPHABET
    ok = True
    was_training = model.training
    for training in (True, False):
        model.train(training)
        with torch.set_grad_enabled(training):
            lx, ly = model(x), model(y)
        ok &= torch.allclose(lx[:, :-1], ly[:, :-1], atol=1e-5) and not torch.allclose(
            lx[:, -1], ly[:, -1]
        )
    model.train(was_training)
    return bool(ok)


def train_timing(size: dict[str, int], warmup: int, block: int, rounds: int) -> dict[str, Any]:
    """Fresh models of every kind trained on the same batches: `warmup` untimed steps each, then
    `rounds` rounds of one timed `block`-step block per model (interleaved); steps/s from the best
    block."""
    total = warmup + rounds * block
    data = batches(size, total)
    trainers = {kind: Trainer(build(kind, size), data, total) for kind in MODELS}
    for t in trainers.values():
        t.run(warmup)
    seconds = {kind: [] for kind in MODELS}
    for _ in range(rounds):
        for kind, t in trainers.items():
            s, _ = best_time(lambda t=t: t.run(block), 1)
            seconds[kind].append(s)
    out: dict[str, Any] = {
        "warmup_steps": warmup,
        "block_steps": block,
        "rounds": rounds,
        "threads": torch.get_num_threads(),
    }
    for kind, t in trainers.items():
        timed = t.losses[warmup:]
        first, last = float(np.mean(timed[:block])), float(np.mean(timed[-block:]))
        out[kind] = {
            "steps_per_s": block / min(seconds[kind]),
            "block_seconds": seconds[kind],
            "first_loss": t.losses[0],
            "loss_first_timed_block": first,
            "loss_last_timed_block": last,
            "loss_decreased": last < first,
        }
    out["models"] = {kind: t.model for kind, t in trainers.items()}  # dropped before JSON
    return out


def forward_timing(
    models: dict[str, nn.Module], size: dict[str, int], calls: int, rounds: int
) -> dict[str, Any]:
    """Forward-only batches/s (eval mode, no grad) on one batch, best of `rounds` interleaved
    blocks."""
    x = torch.from_numpy(batches(size, 1)[0][0])
    seconds = {kind: [] for kind in models}
    for m in models.values():
        m.eval()

    def forwards(m: nn.Module) -> None:
        with torch.no_grad():
            for _ in range(calls):
                m(x)

    for m in models.values():
        forwards(m)  # warm-up
    for _ in range(rounds):
        for kind, m in models.items():
            seconds[kind].append(best_time(lambda m=m: forwards(m), 1)[0])
    return {
        "calls": calls,
        "rounds": rounds,
        **{
            kind: {"batches_per_s": calls / min(s), "block_seconds": s}
            for kind, s in seconds.items()
        },
    }


def data_timing(size: dict[str, int], calls: int, repeats: int) -> float:
    """Seconds per induction_batch call (the per-step data cost train_induction pays), best of
    `repeats`."""
    rng = np.random.default_rng(SEED)
    s, _ = best_time(
        lambda: [
            induction_batch(rng, BATCH, size["n"], ALPHABET, 1, False, "uniform")
            for _ in range(calls)
        ],
        repeats,
    )
    return s / calls


# ------------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------------


def size_tag(size: dict[str, int]) -> str:
    return (
        f"n={size['n']} d={size['dim']} L={size['layers']} H={size['heads']} S={ALPHABET} "
        f"batch {BATCH}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smaller run (< 30 s): the first size only, fewer steps",
    )
    ap.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (the table goes to stderr)",
    )
    ap.add_argument(
        "--two-threads",
        action="store_true",
        help="add 2-thread training rows (fresh models, fewer steps; ~30-50 s more, "
        "noisy on a shared machine)",
    )
    args = ap.parse_args(argv)
    quick = args.quick
    two_threads = args.two_threads

    threads_at_start = torch.get_num_threads()
    machine = common_machine_info(
        numpy_blas_threads(),
        versions={"torch": torch.__version__},
        threads={"torch_threads": 1, "torch_threads_default": threads_at_start},
    )
    log(
        f"machine: {machine['cpu']}, {machine['cpus_usable']} cpus, torch {torch.__version__} "
        f"(default {threads_at_start} threads; timed with 1{' and 2' if two_threads else ''})"
    )
    sizes = [{"n": 16, "dim": 32, "layers": 2, "heads": 1}]
    if not quick:
        sizes.append({"n": 64, "dim": 64, "layers": 2, "heads": 4})
    # (warm-up steps, timed block steps, rounds) for training; (calls, rounds) for forward-only
    plan = {
        16: ((20, 25, 5), (50, 5)) if quick else ((20, 40, 7), (100, 7)),
        64: ((10, 15, 7), (20, 7)),
    }
    plan_two = {16: (10, 20, 3), 64: (5, 10, 2)}
    results: dict[str, Any] = {
        "machine": machine,
        "mode": "quick" if quick else "default",
        "settings": {
            "alphabet": ALPHABET,
            "batch": BATCH,
            "lr": INDUCTION_LR,
            "weight_decay": WEIGHT_DECAY,
            "betas": [0.9, 0.98],
            "clip": 1.0,
            "seed": SEED,
            "generator": "uniform",
            "encoder": "pre-LN (norm_first) nn.TransformerEncoderLayer, ReLU, dim_feedforward 4d, "
            "dropout 0, "
            "final LayerNorm, is_causal=True",
        },
        "sizes": [],
    }
    figures: list[dict[str, Any]] = []
    ok = True

    with one_thread():
        log(
            "check: the benchmark's training step reproduces loop.fit (15 steps per model, first "
            "size)"
        )
        fit_same = {kind: check_fit(kind, sizes[0], 15) for kind in MODELS}
        results["reproduces_fit"] = fit_same
        ok &= all(fit_same.values())

        for size in sizes:
            tag = size_tag(size)
            (warmup, block, rounds), (calls, frounds) = plan[size["n"]]
            row: dict[str, Any] = {"size": {**size, "alphabet": ALPHABET, "batch": BATCH}}
            log(
                f"{tag}: training, 1 thread ({warmup} warm-up + {rounds} × {block} timed steps "
                "per model)"
            )
            tr = train_timing(size, warmup, block, rounds)
            models = tr.pop("models")
            row["params"] = {kind: parameter_count(m) for kind, m in models.items()}
            row["causal"] = {kind: causal(m, size) for kind, m in models.items()}
            row["train_1thread"] = tr
            log(
                "  steps/s: "
                + ", ".join(f"{kind} {tr[kind]['steps_per_s']:.1f}" for kind in MODELS)
            )
            log(f"{tag}: forward only (eval, no grad), 1 thread")
            fw = forward_timing(models, size, calls, frounds)
            row["forward_1thread"] = fw
            row["data_seconds_per_batch"] = data_timing(size, 20, 3)
            results["sizes"].append(row)

            p, enc = row["params"], tr["encoder"]
            figures.append(
                figure(
                    f"{tag} — parameters (a) SequenceModel mlp+LN, d_mlp=4d",
                    p["ours_full"],
                    "",
                    "nn.TransformerEncoder model",
                    p["encoder"],
                )
            )
            figures.append(
                figure(
                    f"{tag} — parameters (b) SequenceModel attention-only",
                    p["ours_attn"],
                    "",
                    "nn.TransformerEncoder model",
                    p["encoder"],
                )
            )
            figures.append(
                figure(
                    f"{tag} — training steps/s, 1 thread, (a) SequenceModel mlp+LN vs encoder "
                    "(same size)",
                    tr["ours_full"]["steps_per_s"],
                    "steps/s",
                    "nn.TransformerEncoder",
                    enc["steps_per_s"],
                )
            )
            figures.append(
                figure(
                    f"{tag} — training steps/s, 1 thread, (b) SequenceModel attention-only vs "
                    "encoder",
                    tr["ours_attn"]["steps_per_s"],
                    "steps/s",
                    "nn.TransformerEncoder",
                    enc["steps_per_s"],
                )
            )
            decreased = all(tr[kind]["loss_decreased"] for kind in MODELS)
            ok &= decreased
            figures.append(
                figure(
                    f"{tag} — check: every model's loss falls over the timed steps (mean of first "
                    "→ last "
                    "timed block: "
                    + ", ".join(
                        f"{kind} {tr[kind]['loss_first_timed_block']:.3f} → "
                        f"{tr[kind]['loss_last_timed_block']:.3f}"
                        for kind in MODELS
                    )
                    + ")",
                    decreased,
                )
            )
            is_causal = all(row["causal"].values())
            ok &= is_causal
            figures.append(
                figure(f"{tag} — check: every model is causal (train and eval forward)", is_causal)
            )
            figures.append(
                figure(
                    f"{tag} — forward-only batches/s (eval, no grad), 1 thread, (a) SequenceModel "
                    "mlp+LN",
                    fw["ours_full"]["batches_per_s"],
                    "batches/s",
                    "nn.TransformerEncoder",
                    fw["encoder"]["batches_per_s"],
                )
            )
            figures.append(
                figure(
                    f"{tag} — forward-only batches/s (eval, no grad), 1 thread, "
                    "(b) SequenceModel attention-only",
                    fw["ours_attn"]["batches_per_s"],
                    "batches/s",
                    "nn.TransformerEncoder",
                    fw["encoder"]["batches_per_s"],
                )
            )
            figures.append(
                figure(
                    f"{tag} — induction_batch ms per batch (data; not in the step times, "
                    "train_induction "
                    "pays it every step)",
                    1e3 * row["data_seconds_per_batch"],
                    "ms",
                    "attention-only step",
                    1e3 / tr["ours_attn"]["steps_per_s"],
                )
            )

    figures.insert(
        0,
        figure(
            "check: the benchmark's training step reproduces loop.fit bit for bit (losses and "
            "weights, 15 steps, every model)",
            all(fit_same.values()),
        ),
    )

    if two_threads:
        torch.set_num_threads(2)
        try:
            for size, row in zip(sizes, results["sizes"]):
                tag = size_tag(size)
                warmup, block, rounds = plan_two[size["n"]]
                log(
                    f"{tag}: training, 2 threads "
                    f"({warmup} warm-up + {rounds} × {block} timed steps per model)"
                )
                tr = train_timing(size, warmup, block, rounds)
                tr.pop("models")
                row["train_2threads"] = tr
                enc = tr["encoder"]["steps_per_s"]
                figures.append(
                    figure(
                        f"{tag} — training steps/s, 2 threads, (a) SequenceModel mlp+LN vs encoder",
                        tr["ours_full"]["steps_per_s"],
                        "steps/s",
                        "nn.TransformerEncoder",
                        enc,
                    )
                )
                figures.append(
                    figure(
                        f"{tag} — training steps/s, 2 threads, (b) SequenceModel attention-only "
                        "vs encoder",
                        tr["ours_attn"]["steps_per_s"],
                        "steps/s",
                        "nn.TransformerEncoder",
                        enc,
                    )
                )
        finally:
            torch.set_num_threads(threads_at_start)

    table = finish_table(
        results,
        figures,
        f"headcount learn benchmark ({results['mode']}), {machine['cpu']}, "
        f"{machine['cpus_usable']} cpus, torch {torch.__version__} "
        f"(1 thread unless a line says 2)",
        args.json,
    )
    print(f"  total time: {results['seconds_total']} s", file=table)
    if args.json:
        print(json.dumps(results, default=float))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
