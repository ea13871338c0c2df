"""Learning: real models trained on the theory's tasks, evaluated exactly, in resumable sweeps.

    constants.py      TASKS, SCALES, DEFAULT_DB — each defined once, shared with the CLI and the
                      report
    models/           PyTorch models that load and export the theory's exact models (sequence,
                      table, min/max, Boolean)
    loop.py           the one training loop (fit: AdamW, warm-up + cosine) on one torch thread
    train.py          one training run per task on that loop; run_config (the sweep runner) and
                      train (the CLI's)
    evaluate.py       exact metrics on fixed held-out sets (induction, k-hop, min/max)
    results.py        typed training results; to_json() is the JSON a sweep stores
    store.py          the SQLite results database: one row per finished run, the leases of runs
                      in training
    store_schema.py   what makes a file a results database: its tables, the checks on opening
    sweep/            grids of runs: spec, schedulers (local workers or Ray), run, tables
    experiments.py    the five experiments (spec/learning.md; k-hop also with GPT-2, Llama and
                      NeoX blocks): specs, summaries
    certified_runs.py the k-hop runner that certifies what it trained (a built-in sweep runner)
    summaries.py      each experiment's typed summary, read from the database only (figures and
                      claims are report/learning/claims.py's)

learn/ imports core and the scenarios, never report/ or cli/.
"""
