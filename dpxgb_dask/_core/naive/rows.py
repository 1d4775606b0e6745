"""Naive twin of ``rows.select_tree_rows``: NumPy, one step at a time."""
import numpy as np


def select_tree_rows(gradients_in, hessians_in, labels, uniforms, low, high, g_max, h_max,
                     grid, drop_outside, g_bound, *, leaves=None):
    """(positions, gradients, hessians) of a tree's rows; see ``rows.select_tree_rows``
    (``leaves``: each row's leaf when the tree was routed ahead, else None: the root)."""
    in_tree = ~np.isnan(labels)
    if len(uniforms):
        in_tree &= (uniforms >= low) & (uniforms < high)
    if drop_outside:
        in_tree &= np.abs(gradients_in) <= g_bound
    g = np.clip(np.round(gradients_in / grid) * grid, -g_max, g_max)
    h = np.clip(np.round(hessians_in / grid) * grid, 0.0, h_max)
    node = np.zeros(len(labels), dtype=np.int32) if leaves is None else leaves
    return (np.where(in_tree, node, ~node).astype(np.int32),
            np.where(in_tree, g, 0.0).astype(np.float32),
            np.where(in_tree, h, 0.0).astype(np.float32))


def add_leaf_values(positions, values, margins, clip, low, high):
    """New margins (a copy); see ``rows.add_leaf_values``."""
    out = margins + values[np.where(positions >= 0, positions, ~positions)]
    return np.clip(out, low, high) if clip else out
