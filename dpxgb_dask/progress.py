"""A fit's progress as its coordinator reports it, and the displays that show it.

The coordinator publishes a few public events per fit (``coordinator.Coordinator.fit``):

- ``{"event": "start", "n_trees", "epsilon", "accountant", "delta", "objective"}``;
- ``{"event": "bounds", "epsilon"}`` after a DP estimate of the feature bounds;
- ``{"event": "level", "tree", "depth", "n_nodes"}`` after each level of a grown tree;
- ``{"event": "tree", "tree", "n_trees", "n_leaves"}`` after each tree;
- ``{"event": "done", "epsilon", "accountant", "delta"}``: ``epsilon`` is the total the
  model reports (``Booster.ledger["epsilon"]``).

Every event also carries ``releases``: the ledger events (``PrivacyEvent.to_dict``)
recorded since the previous event, i.e. each release's mechanism, sensitivity and noise
parameters (never its values), all public.

:class:`FitProgress` folds these events into one public record. It is the one place that
says how much ε a fit has spent so far: the fit's own accountant applied to the releases
made so far (:meth:`FitProgress.epsilon_spent`). The scheduler's dashboard page
(``dashboard.py``) and the user's progress bar (:class:`ProgressDisplay`) both read it.

The estimators' ``verbose`` (:func:`check_verbose`) shows that progress bar during a fit
and, with an ``eval_set``, XGBoost's evaluation log after it (:func:`evaluation_log`): the
scores of ``evals_result_``, public or DP releases, printed round by round.
"""
import numbers
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .privacy.accountants import get_accountant
from .privacy.ledger import Ledger, PrivacyEvent

#: About this many points on a fit's ε curve (:meth:`FitProgress.epsilon_curve`).
CURVE_POINTS = 40

#: Lines a text display writes during a fit when its stream is not a terminal (a log file,
#: a pipe): one per tenth of the trees, then the last.
PLAIN_LINES = 10

#: Shortest interval between two recomputations of the ε spent by a running fit (each is
#: one accountant call: tens of milliseconds under PLD).
EPSILON_REFRESH_SECONDS = 0.5


class FitProgress:
    """The public record of one fit: trees built, the current level, the releases made,
    and the ε they spend under the fit's accountant.

    Parameters
    ----------
    fit_id : str
        Public identifier of the fit (random, chosen by the client).
    client : str, optional
        Name of the client that started the fit.

    Notes
    -----
    Everything here is public: the plan's sizes, the releases' noise parameters (not
    their values) and the accountant's totals. No wall-clock time is kept, not even when
    the fit started: the time a level takes grows with the rows of its nodes.
    """

    def __init__(self, fit_id, client=None):
        self.fit_id = fit_id
        self.client = client
        self.state = "running"
        self.error = None
        self.n_trees = None
        self.trees_built = 0
        self.tree = None
        self.depth = None
        self.epsilon_target = None
        self.epsilon_final = None
        self.accountant = None
        self.delta = None
        self.objective = None
        self._releases = []  # PrivacyEvents, made from the events' dicts when first read
        self._unread = []  # the events' release dicts not read yet
        self.tree_ends = []  # the number of releases made when each tree ended
        self._lock = threading.Lock()
        self._epsilon = (0, 0.0)  # (number of releases, ε they spend)
        self._curve = {}  # trees built -> ε spent then

    def update(self, event):
        """Fold one coordinator event (a dict, see the module docstring) into the record."""
        kind = event.get("event")
        if kind == "start":
            self.n_trees = event["n_trees"]
            self.epsilon_target = event.get("epsilon")
            self.accountant = event.get("accountant")
            self.delta = event.get("delta")
            self.objective = event.get("objective")
        elif kind == "level":
            self.tree, self.depth = event["tree"], event["depth"]
        elif kind == "tree":
            self.trees_built = event["tree"] + 1
            self.n_trees = event["n_trees"]
            self.tree, self.depth = event["tree"], None
        elif kind == "done":
            self.state = "finished"
            self.epsilon_final = event["epsilon"]
            self.accountant = event.get("accountant", self.accountant)
            self.delta = event.get("delta", self.delta)
        with self._lock:
            self._unread.extend(event.get("releases", ()))
            if kind == "tree":
                self.tree_ends.append(len(self._releases) + len(self._unread))

    @property
    def releases(self):
        """list of PrivacyEvent: the releases made so far. Checked and made from the
        events' dicts when read (the dashboard reads them when a page asks), not as each
        event arrives on the scheduler's event loop."""
        with self._lock:
            if self._unread:
                self._releases.extend(PrivacyEvent.from_dict(r) for r in self._unread)
                self._unread = []
            return self._releases

    def end(self, state, error=None):
        """Mark the fit ended (``"failed"`` or ``"stopped"``) unless it finished."""
        if self.state == "running":
            self.state, self.error = state, error

    def epsilon_spent(self):
        """ε spent so far: the fit's accountant on the releases made so far, at its δ.

        The model's own total once the fit finished. Computed at most once per number of
        releases (an accountant call takes up to tens of milliseconds: call it from a
        thread, not from an event loop).

        Returns
        -------
        float
        """
        if self.epsilon_final is not None:
            return self.epsilon_final
        releases = list(self.releases)
        with self._lock:
            done, value = self._epsilon
            if done == len(releases):
                return value
            value = self._epsilon_of(releases)
            if len(releases) > self._epsilon[0]:
                self._epsilon = (len(releases), value)
            return value

    def _epsilon_of(self, releases):
        return (get_accountant(self.accountant).get_epsilon(Ledger(releases), self.delta)
                if releases and self.accountant else 0.0)

    def epsilon_curve(self):
        """The ε spent against the trees built: ``(trees, ε)`` after every
        ⌈n_trees / CURVE_POINTS⌉-th tree and after the last one built, each computed once
        (an accountant call: call it from a thread, as :meth:`epsilon_spent`).

        Returns
        -------
        list of (int, float)
        """
        ends = list(self.tree_ends)
        releases = self.releases  # (read after the ends: it holds every release they count)
        step = max(1, -(-(self.n_trees or len(ends) or 1) // CURVE_POINTS))
        trees = list(range(step, len(ends) + 1, step))
        if ends and (not trees or trees[-1] != len(ends)):
            trees.append(len(ends))
        with self._lock:
            for k in trees:
                if k not in self._curve:
                    self._curve[k] = self._epsilon_of(releases[:ends[k - 1]])
            return [(k, self._curve[k]) for k in trees]

    def summary(self, epsilon=None):
        """JSON-ready dict of the record (public values only); ``epsilon`` as computed by
        :meth:`epsilon_spent` (None: not computed)."""
        return {
            "fit": self.fit_id, "client": self.client, "state": self.state,
            "error": self.error, "objective": self.objective,
            "n_trees": self.n_trees, "trees_built": self.trees_built,
            "tree": self.tree, "depth": self.depth,
            "accountant": self.accountant, "delta": self.delta,
            "epsilon_target": self.epsilon_target, "epsilon_spent": epsilon,
            "n_releases": len(self.releases),
        }

    def release_table(self, last=None):
        """The releases as rows (purpose, mechanism, tree, depth, sensitivity, ε or noise
        multiplier, noise scale, sampling rate, pieces); the ``last`` ones only if given."""
        events = self.releases if last is None else self.releases[-last:]
        rows = []
        for e in events:
            rows.append({"purpose": e.purpose, "mechanism": e.mechanism, "tree": e.tree,
                         "depth": e.depth, "sensitivity": e.sensitivity,
                         "epsilon": e.epsilon, "noise_multiplier": e.noise_multiplier,
                         "noise_scale": e.noise_scale, "sampling_rate": e.sampling_rate,
                         "n_parallel": e.n_parallel, "count": e.count})
        return rows


def _in_notebook():
    """True inside a Jupyter kernel with ipywidgets available."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ip = shell.get_ipython()
    if ip is None or type(ip).__name__ != "ZMQInteractiveShell":
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


class ProgressDisplay:
    """The user's view of a running fit: a widget in a notebook, a text bar elsewhere.

    It receives the coordinator's events on the client's event loop (a Dask event
    handler), keeps a :class:`FitProgress`, and shows trees built and the ε spent so far
    under the fit's accountant. That ε is recomputed in a background thread at most every
    ``EPSILON_REFRESH_SECONDS`` and shown with the number of trees it covers; the last line
    shows the total the model reports.

    Parameters
    ----------
    n_trees : int
        Trees planned (shown before the first event).
    kind : {"auto", "text", "widget"}
        ``"auto"``: a widget inside a Jupyter kernel with ipywidgets, else text.
    stream : file, optional
        For the text bar; default ``sys.stderr``. A terminal's bar is redrawn in place; a
        stream that is not a terminal (a log, a pipe) gets a plain line per tenth of the
        trees (:data:`PLAIN_LINES`) and the last one.
    """

    def __init__(self, n_trees, kind="auto", stream=None):
        if kind not in ("auto", "text", "widget"):
            raise ValueError(f"kind must be 'auto', 'text' or 'widget', got {kind!r}")
        if kind == "auto":
            kind = "widget" if _in_notebook() else "text"
        self.kind = kind
        self.stream = stream or sys.stderr
        #: a terminal redraws one bar in place; a file or a pipe gets a few plain lines
        self._terminal = kind == "text" and bool(getattr(self.stream, "isatty", bool)())
        self.progress = FitProgress(None)
        self.progress.n_trees = n_trees
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="dpxgb-progress")
        self._pending = None
        self._last_start = 0.0
        self._shown = None  # (trees covered, ε) last computed
        self._closed = False
        self._done = threading.Event()
        if kind == "widget":
            import ipywidgets
            from IPython.display import display

            self._bar = ipywidgets.IntProgress(value=0, min=0, max=max(1, n_trees),
                                               description="dpxgb")
            self._label = ipywidgets.HTML(value=f"0 / {n_trees} trees")
            self.widget = ipywidgets.HBox([self._bar, self._label])
            display(self.widget)

    def __call__(self, msg):
        self.progress.update(msg)
        kind = msg.get("event")
        if kind == "tree":
            self._refresh_epsilon()
            self._render()
        elif kind == "done":
            self._render(final=True)
            self._done.set()

    def wait_done(self, timeout):
        """Wait until the ``done`` event was shown (True), at most ``timeout`` seconds."""
        return self._done.wait(timeout)

    def _refresh_epsilon(self):
        if self._closed or (self._pending is not None and not self._pending.done()):
            return
        if time.monotonic() - self._last_start < EPSILON_REFRESH_SECONDS \
                and self.progress.trees_built < (self.progress.n_trees or 0):
            return
        self._last_start = time.monotonic()
        trees = self.progress.trees_built
        try:
            future = self._pool.submit(self.progress.epsilon_spent)
        except RuntimeError:  # closed meanwhile by the user's thread
            return
        future.add_done_callback(lambda f: self._computed(trees, f))
        self._pending = future

    def _computed(self, trees, future):
        if future.exception() is None:
            self._shown = (trees, future.result())

    def _epsilon_text(self, final):
        p = self.progress
        if final:
            return f"ε = {p.epsilon_final:.4g} ({p.accountant}, δ = {p.delta:g})"
        if self._shown is None:
            return ""
        trees, eps = self._shown
        target = f" of {p.epsilon_target:g}" if p.epsilon_target is not None else ""
        return f"ε {eps:.4g}{target} ({p.accountant}) after {trees} trees"

    def _render(self, final=False):
        p = self.progress
        n = max(1, p.n_trees or 1)
        text = self._epsilon_text(final)
        if self.kind == "widget":
            self._bar.value = p.trees_built
            self._label.value = f"{p.trees_built} / {n} trees &nbsp; {text}"
            if final:
                self._bar.bar_style = "success"
            return
        if final:
            start = "\r" if self._terminal else ""
            self.stream.write(f"{start}dpxgb: done, {p.trees_built} trees, {text}\n")
        elif self._terminal:
            bar = "#" * int(30 * p.trees_built / n)
            self.stream.write(f"\rdpxgb [{bar:<30}] tree {p.trees_built}/{n}  {text:<45}")
        elif p.trees_built % max(1, n // PLAIN_LINES) == 0:  # a log: a line per tenth
            self.stream.write(f"dpxgb: tree {p.trees_built}/{n}  {text}".rstrip() + "\n")
        self.stream.flush()

    def close(self, error=None):
        """Stop the background computation; a widget shows a failed fit in red."""
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        if error is not None:
            if self.kind == "widget":
                self._bar.bar_style = "danger"
                self._label.value += f" &nbsp; stopped: {type(error).__name__}"
            elif self.progress.trees_built and self._terminal:
                self.stream.write("\n")
                self.stream.flush()


def check_verbose(verbose):
    """The evaluation log's period of XGBoost's ``fit(verbose=)``: a bool or an int >= 0.

    Parameters
    ----------
    verbose : bool or int
        False or 0: no log; True or 1: every round; n: every n-th round and the last.

    Returns
    -------
    int
        The period, 0 for no log.

    Raises
    ------
    TypeError
        If ``verbose`` is neither a bool nor an int.
    ValueError
        If it is a negative int.
    """
    if isinstance(verbose, (bool, np.bool_)):
        return int(bool(verbose))
    if not isinstance(verbose, numbers.Integral):
        raise TypeError(f"verbose must be a bool or a non-negative int (True: every round, "
                        f"n: every n-th round), got {verbose!r}")
    if verbose < 0:
        raise ValueError(f"verbose must be a bool or a non-negative int (True: every round, "
                         f"n: every n-th round), got {verbose!r}")
    return int(verbose)


def evaluation_log(evals_result, period, n_rounds=None):
    """XGBoost's evaluation log of a fit's scores (``xgboost.callback.EvaluationMonitor``):
    ``"[r]\\tvalidation_0-logloss:0.61234\\tvalidation_0-error:0.25000..."``, every set's
    metrics on one line per round, scores to 5 decimals.

    Parameters
    ----------
    evals_result : dict
        ``{"validation_i": {metric: [score after each round]}}`` (``evals_result_``).
    period : int
        A line every ``period``-th round (those ``r`` with ``r % period == 0``) and the last
        round's; 0: none (:func:`check_verbose`).
    n_rounds : int, optional
        The model's rounds, when the scores are of its last ones only (a continued fit's
        private sets score its new rounds): the lines number the model's rounds, as
        XGBoost's do. Default: the scores' own count.

    Returns
    -------
    list of str
    """
    series = [(f"{data}-{metric}", scores) for data, metrics in evals_result.items()
              for metric, scores in metrics.items()]
    if not period or not series:
        return []
    n_scores = min(len(scores) for _, scores in series)
    first = (n_scores if n_rounds is None else n_rounds) - n_scores
    rounds = [r for r in range(first, first + n_scores) if r % period == 0]
    if n_scores and rounds[-1:] != [first + n_scores - 1]:
        rounds.append(first + n_scores - 1)
    return [f"[{r}]" + "".join(f"\t{name}:{scores[r - first]:.5f}" for name, scores in series)
            for r in rounds]
