"""Naive twin of the weighted quantile sketch kernel (``dpxgb_dask._core.sketch``).

Plain NumPy, written from the definitions: exact weighted rank functions and quantiles by
brute-force sums, and slow references for make / merge / prune / query that evaluate the
rank bounds of a summary at every point directly. See the kernel's module docstring for the
definitions of r-, r+, w, summaries and their error.
"""
import numpy as np

SUMMARY_DTYPE = np.dtype(
    [("value", np.float64), ("rmin", np.float64), ("rmax", np.float64), ("wmin", np.float64)]
)


def _points(values, weights):
    """The points that count: non-NaN value, positive weight."""
    values = np.asarray(values, dtype=np.float64).ravel()
    weights = np.asarray(weights, dtype=np.float64).ravel()
    keep = ~np.isnan(values) & (weights > 0)
    return values[keep], weights[keep]


def rank_functions(values, weights, y):
    """Exact ``(r-(y), r+(y), w(y))`` for each ``y``: weight of the points ``< y``, ``<= y``,
    ``== y``. NaN values and zero weights do not count."""
    v, w = _points(values, weights)
    y = np.atleast_1d(np.asarray(y, dtype=np.float64))
    r_minus = np.array([w[v < yi].sum() for yi in y])
    r_plus = np.array([w[v <= yi].sum() for yi in y])
    at = np.array([w[v == yi].sum() for yi in y])
    return r_minus, r_plus, at


def total_weight(values, weights):
    return float(_points(values, weights)[1].sum())


def weighted_quantile(values, weights, t):
    """Exact weighted quantile ``min{x in D : r+(x) >= t}`` (the largest point when no point
    reaches ``t``); NaN for an empty ``D``."""
    v, w = _points(values, weights)
    if v.size == 0:
        return np.nan
    xs = np.unique(v)
    _, r_plus, _ = rank_functions(v, w, xs)
    hit = np.nonzero(r_plus >= t)[0]
    return float(xs[hit[0]]) if hit.size else float(xs[-1])


def make_summary(values, weights):
    """Exact summary by brute force: each distinct value with its exact rank functions."""
    v, w = _points(values, weights)
    xs = np.unique(v)
    out = np.empty(xs.size, dtype=SUMMARY_DTYPE)
    out["value"] = xs
    out["rmin"], out["rmax"], out["wmin"] = rank_functions(v, w, xs)
    return out


def summary_bounds(summary, y):
    """Rank bounds a summary gives at each ``y``: ``(lower r-, upper r+, lower w)``.

    At a value of the summary: its ``rmin``, ``rmax``, ``wmin``. Between entries ``p`` and
    ``q = p + 1``: ``rmin[p] + wmin[p]``, ``rmax[q] - wmin[q]``, 0. Below the first value:
    0, 0, 0. Above the last: W, W, 0.
    """
    s = summary
    y = np.atleast_1d(np.asarray(y, dtype=np.float64))
    lo, hi, wl = np.zeros(y.size), np.zeros(y.size), np.zeros(y.size)
    if s.shape[0] == 0:
        return lo, hi, wl
    W = s["rmax"][-1]
    for k, yk in enumerate(y):
        same = np.nonzero(s["value"] == yk)[0]
        below = np.nonzero(s["value"] < yk)[0]
        above = np.nonzero(s["value"] > yk)[0]
        if same.size:
            e = s[same[0]]
            lo[k], hi[k], wl[k] = e["rmin"], e["rmax"], e["wmin"]
        elif below.size == 0:
            lo[k], hi[k] = 0.0, 0.0
        elif above.size == 0:
            lo[k], hi[k] = W, W
        else:
            p, q = below[-1], above[0]
            lo[k] = s["rmin"][p] + s["wmin"][p]
            hi[k] = s["rmax"][q] - s["wmin"][q]
    return lo, hi, wl


def merge_summaries(a, b):
    """At every value of either summary, the sums of the bounds each one gives there."""
    xs = np.union1d(a["value"], b["value"])
    lo_a, hi_a, w_a = summary_bounds(a, xs)
    lo_b, hi_b, w_b = summary_bounds(b, xs)
    out = np.empty(xs.size, dtype=SUMMARY_DTYPE)
    out["value"] = xs
    out["rmin"] = lo_a + lo_b
    out["rmax"] = hi_a + hi_b
    out["wmin"] = w_a + w_b
    return out


def choice_errors(summary, t):
    """For every entry i, the worst-case distance from rank ``t`` to ``[r-(x_i), r+(x_i)]``
    given its bounds: ``max(t - (rmin + wmin), (rmax - wmin) - t, 0)``, using that the first
    value has ``r- = 0`` and the last ``r+ = W`` exactly."""
    s = summary
    lower_rplus = s["rmin"] + s["wmin"]
    upper_rminus = s["rmax"] - s["wmin"]
    lower_rplus[-1] = s["rmax"][-1]
    upper_rminus[0] = 0.0
    return np.maximum(np.maximum(t - lower_rplus, upper_rminus - t), 0.0)


def select_entry(summary, t):
    """The rank query: the leftmost entry with the smallest ``choice_errors``."""
    return int(np.argmin(choice_errors(summary, t)))


def prune_summary(summary, size):
    """Keep the first, the last and the entries selected for ``m W / (size - 1)``."""
    n = summary.shape[0]
    if n <= size:
        return summary.copy()
    W = summary["rmax"][-1]
    keep = {0, n - 1}
    for m in range(1, size - 1):
        keep.add(select_entry(summary, W * float(m) / float(size - 1)))
    return summary[np.array(sorted(keep))].copy()


def merge_and_prune(summaries, size):
    """Level by level, merge neighbours (0 and 1, 2 and 3, ...) and prune each merge to
    ``size``; an odd one out moves up unchanged. One summary is pruned, none gives empty."""
    level = list(summaries)
    if not level:
        return np.empty(0, dtype=SUMMARY_DTYPE)
    if len(level) == 1:
        return prune_summary(level[0], size)
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level), 2):
            if i + 1 < len(level):
                nxt.append(prune_summary(merge_summaries(level[i], level[i + 1]), size))
            else:
                nxt.append(level[i])
        level = nxt
    return level[0]


def cut_targets(total, n_cuts):
    return np.array([total * float(k) / float(n_cuts + 1) for k in range(1, n_cuts + 1)])


def query_cuts(summary, n_cuts):
    """The values selected for the targets ``k W / (n_cuts + 1)``, each once, sorted."""
    if summary.shape[0] == 0 or n_cuts == 0:
        return np.empty(0)
    W = summary["rmax"][-1]
    chosen = {select_entry(summary, t) for t in cut_targets(W, n_cuts)}
    return summary["value"][np.array(sorted(chosen))].astype(np.float64)


def validity_violation(summary, values, weights):
    """How far a summary is from being valid for the data (0 when valid): the largest of
    ``rmin - r-``, ``r+ - rmax``, ``wmin - w`` over its entries, ``|rmax[-1] - W|``, and
    ``inf`` when its first/last values are not the data's min/max, a value is not a data
    point, or it is empty for non-empty data (or the reverse)."""
    v, w = _points(values, weights)
    n = summary.shape[0]
    if n == 0 or v.size == 0:
        return 0.0 if n == v.size == 0 else np.inf
    xs = summary["value"]
    if xs[0] != v.min() or xs[-1] != v.max() or not np.all(np.isin(xs, v)):
        return np.inf
    r_minus, r_plus, at = rank_functions(v, w, xs)
    return float(max(
        np.max(summary["rmin"] - r_minus),
        np.max(r_plus - summary["rmax"]),
        np.max(summary["wmin"] - at),
        abs(summary["rmax"][-1] - w.sum()),
        0.0,
    ))


def cut_rank_errors(cuts, values, weights, n_cuts):
    """For each target ``t_k = k W / (n_cuts + 1)``: the distance from ``t_k`` to
    ``[r-(c), r+(c)]`` for the best cut ``c`` in ``cuts`` (exact ranks from the data)."""
    total = total_weight(values, weights)
    targets = cut_targets(total, n_cuts)
    cuts = np.asarray(cuts, dtype=np.float64)
    if cuts.size == 0:
        return np.full(targets.size, np.inf)
    r_minus, r_plus, _ = rank_functions(values, weights, cuts)
    dist = np.maximum(np.maximum(r_minus[None, :] - targets[:, None],
                                 targets[:, None] - r_plus[None, :]), 0.0)
    return dist.min(axis=1)
