"""Differential-privacy mechanisms, sensitivities, randomness and accounting (no Dask here)."""
