"""Naive twin of ``random_tree.draw_random_tree``: the same draws, node by node, in Python."""
import math

import numpy as np


class _Words:
    """The buffer's words in order; reading past its end marks it short."""

    def __init__(self, words):
        self.words, self.used, self.short = [int(w) for w in words], 0, False

    def next(self):
        if self.used >= len(self.words):
            self.short = True
            return 0
        self.used += 1
        return self.words[self.used - 1]

    def below(self, bound):
        """Lemire's multiply-and-reject: floor(w · bound / 2**64), w drawn again while the
        product's low 64 bits are below 2**64 mod bound."""
        product = self.next() * bound
        while product % 2**64 < 2**64 % bound and not self.short:
            product = self.next() * bound
        return product >> 64


def quantile_weights(mass, width, uniform_share, weight_bits):
    """The integer weights of ``width`` candidate thresholds whose bins hold ``mass``
    (sequence of float, non-negative): ``floor(2**weight_bits · ((1 - u) m_j / Σ m +
    u / width)) + 1``, uniform when Σ m = 0. Returns a list of int."""
    total = 0.0
    for m in mass:
        total += m
    weights = []
    for m in mass:
        share = m / total if total > 0 else 0.0
        uniform = (uniform_share if total > 0 else 1.0) / width
        weights.append(math.floor(((1.0 - uniform_share) * share + uniform)
                                  * 2.0**weight_bits) + 1)
    return weights


def draw_random_tree(n_cuts, categorical, one_feature, max_depth, mass, words, *,
                     uniform_share, weight_bits, keep_ranges):
    """One totally random tree from ``words``; see ``random_tree.draw_random_tree`` (the
    same arguments, the same return value, None when the words ran out)."""
    reader = _Words(words)
    n_features = len(n_cuts)
    use_mass = np.shape(mass)[0] > 0 and one_feature < 0
    splits = {}   # heap id -> (kind, feature, threshold, missing_left, set words)
    leaves, leaf_ranges, size = [], [], 0
    level = [(0, [[0, int(c)] for c in n_cuts])]
    for _ in range(max_depth):
        following = []
        for node, ranges in level:
            size = max(size, node + 1)
            allowed = [one_feature] if one_feature >= 0 else range(n_features)
            splittable = [f for f in allowed if ranges[f][1] > ranges[f][0]]
            if not splittable:
                leaves.append(node)
                leaf_ranges.append(ranges)
                continue
            f = splittable[reader.below(len(splittable))]
            lo, hi = ranges[f]
            if categorical[f]:
                n_codes = int(n_cuts[f]) + 1
                while not reader.short:
                    codes = [c for j in range((n_codes + 63) // 64)
                             for c, bit in enumerate(format(reader.next(), "064b")[::-1],
                                                     start=64 * j)
                             if bit == "1" and c < n_codes]
                    if 0 < len(codes) < n_codes:
                        break
                words_of_set = [0] * 4
                for c in codes:
                    words_of_set[c // 64] |= 1 << (c % 64)
                split = (2, f, min(codes) if codes else 0, words_of_set)
            else:
                width = hi - lo
                if use_mass:
                    weights = quantile_weights([mass[f][lo + j] for j in range(width)], width,
                                               uniform_share, weight_bits)
                    pick = reader.below(sum(weights))
                    cumulative = np.cumsum(weights)
                    threshold = lo + next((j for j in range(width) if cumulative[j] > pick),
                                          width - 1)
                else:
                    threshold = lo + reader.below(width)
                split = (1, f, threshold, [0] * 4)
            missing_left = reader.below(2)
            splits[node] = split[:3] + (missing_left, split[3])
            left = [list(r) for r in ranges]
            right = [list(r) for r in ranges]
            if split[0] == 1:
                left[f][1], right[f][0] = split[2], split[2] + 1
            following += [(2 * node + 1, left), (2 * node + 2, right)]
        level = following
    if reader.short:
        return None
    for node, ranges in level:
        leaves.append(node)
        leaf_ranges.append(ranges)
    heap = (np.zeros(size, np.uint8), np.zeros(size, np.int32), np.zeros(size, np.uint8),
            np.zeros(size, np.uint8), np.zeros((size, 4), np.uint64))
    for node, (kind, f, threshold, missing_left, set_words) in splits.items():
        heap[0][node], heap[1][node], heap[2][node] = kind, f, threshold
        heap[3][node], heap[4][node] = missing_left, set_words
    ranges_out = (np.array(leaf_ranges, dtype=np.int64).reshape(len(leaves), n_features, 2)
                  if keep_ranges else None)
    return reader.used, heap, np.array(leaves, dtype=np.int64), ranges_out
