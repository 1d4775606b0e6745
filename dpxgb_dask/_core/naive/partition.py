"""Naive twins of the partition kernels."""
import numpy as np


def _in_set(words, code):
    """Bit ``code`` of a node's 4-word category set, read one word at a time."""
    return (int(words[code // 64]) >> (code % 64)) & 1 == 1


def apply_splits(X_binned, positions, is_split, split_feature, split_bin, missing_left,
                 category_set, missing_bin):
    """New positions (a copy) after the splits; see ``partition.apply_splits``."""
    new = np.array(positions, dtype=np.int32, copy=True)
    for i, position in enumerate(positions):
        outside = position < 0  # a row outside the tree sits at ~p and stays outside
        node = -position - 1 if outside else position
        if node >= len(is_split) or not is_split[node]:
            continue
        b = X_binned[i, split_feature[node]]
        if b == missing_bin:
            go_left = bool(missing_left[node])
        elif is_split[node] == 2:  # categorical: the categories of the node's set go left
            go_left = _in_set(category_set[node], int(b))
        else:
            go_left = b <= split_bin[node]
        child = 2 * node + 1 if go_left else 2 * node + 2
        new[i] = -child - 1 if outside else child
    return new


def rows_of_nodes(positions, slot_of_node):
    """Rows in selected nodes and their slots; see ``partition.rows_of_nodes``."""
    rows, slots = [], []
    for i, node in enumerate(positions):
        if 0 <= node < len(slot_of_node) and slot_of_node[node] >= 0:
            rows.append(i)
            slots.append(slot_of_node[node])
    return np.array(rows, dtype=np.int32), np.array(slots, dtype=np.int32)


def route_to_leaves(X_binned, positions, is_split, split_feature, split_bin, missing_left,
                    category_set, missing_bin):
    """``apply_splits`` repeated until no row moves; see ``partition.route_to_leaves``."""
    current = np.array(positions, dtype=np.int32, copy=True)
    while True:
        moved = apply_splits(X_binned, current, is_split, split_feature, split_bin,
                             missing_left, category_set, missing_bin)
        if np.array_equal(moved, current):
            return current
        current = moved


def node_sums(positions, gradients, hessians, slot_of_node):
    """(G, H, count) per selected slot, row by row; see ``partition.node_sums``."""
    n_slots = int(max(slot_of_node.max(initial=-1) + 1, 0))
    out = np.zeros((n_slots, 3))
    for i, node in enumerate(positions):
        if 0 <= node < len(slot_of_node) and slot_of_node[node] >= 0:
            out[slot_of_node[node]] += (float(gradients[i]), float(hessians[i]), 1.0)
    return out
