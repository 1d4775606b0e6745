"""Slow, obviously correct NumPy / plain-Python twins of the compiled kernels, used by the tests."""
