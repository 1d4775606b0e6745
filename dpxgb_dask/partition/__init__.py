"""The worker side of a fit: a partition's state (binned rows, margins, the current tree's
rows and gradients), the exact sums it answers (histograms, leaf sums, fit-level
aggregates), a silo's release of its own sums, and the messages it applies. Nothing here
knows of Dask or of the coordinator that sends the messages.
"""
