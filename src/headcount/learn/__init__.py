"""Learning experiments: PyTorch models that load and export the theory's exact models (models.py),
plain training loops with exact task metrics (train.py), sweeps over grids of runs (sweep.py, store.py)."""
