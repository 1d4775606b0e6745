"""The split method's noise of a tree's levels, drawn ahead while the workers build the
level's histograms (:class:`~dpxgb_dask.boosting.level_noise.LevelNoise`, used by the coordinator)."""
import asyncio
import time


class LevelNoise:
    """The split method's noise of one tree's levels, drawn ahead, one level at a time.

    Level ``d + 1``'s noise is drawn while level ``d`` runs, for the most nodes it can have
    (two per node of level ``d``); a level with ``n`` nodes takes the first values of it, which are
    the values a draw for ``n`` nodes gives (a release's noise is a prefix-stable function
    of its stream: :mod:`~dpxgb_dask.privacy.samplers`; the method's noise is node-major),
    so the model is the one of a draw per level. The noise depends only on the streams and
    public sizes, and what a level does not use is dropped unreleased.

    Parameters
    ----------
    splitter : SplitMethod
        The fit's split method, whose ``draw_noise`` and ``noise_size`` it calls.
    tree : int
    max_depth : int
        The tree's levels of splits: no noise is drawn beyond them.
    run_release : callable
        ``await run_release(fn, *args, n_values=)`` runs a release of ``n_values`` noisy
        values where the fit runs its releases (the coordinator's: on its event loop or in
        a thread).
    timings : dict of str -> float
        The fit's timings, whose ``"noise"`` (drawing) and ``"noise_wait"`` (waiting for a
        draw) seconds it adds to.
    """

    def __init__(self, splitter, tree, *, max_depth, run_release, timings):
        self.splitter, self.tree, self.depth = splitter, tree, max_depth
        self._run_release, self._timings = run_release, timings
        self._tasks = {}

    def start(self, depth, n_nodes):
        """Start drawing level ``depth``'s noise for ``n_nodes`` nodes, after the level
        before it (no-op if it is under way, beyond the tree, or the method draws no noise
        ahead)."""
        if depth in self._tasks or depth >= self.depth or self.splitter.noise_size(1) == 0:
            return
        self._tasks[depth] = asyncio.ensure_future(
            self._draw(depth, n_nodes, self._tasks.get(depth - 1)))

    async def _draw(self, depth, n_nodes, previous):
        if previous is not None:
            await asyncio.wait([previous])  # one level's noise at a time
        start = time.perf_counter()
        try:
            return await self._run_release(
                self.splitter.draw_noise, self.tree, depth, n_nodes,
                n_values=2 * self.splitter.noise_size(n_nodes))
        finally:
            self._timings["noise"] += time.perf_counter() - start

    async def take(self, depth, n_nodes):
        """Level ``depth``'s noise for ``n_nodes`` nodes (None if the method draws none)."""
        task = self._tasks.pop(depth, None)
        if task is None:
            return None
        start = time.perf_counter()
        full = await task
        self._timings["noise_wait"] += time.perf_counter() - start
        size = self.splitter.noise_size(n_nodes)
        return tuple(values[:size] for values in full)

    def cancel(self):
        """Stop the draws still under way (the tree ended, failed or was cancelled)."""
        for task in self._tasks.values():
            if task.done():
                if not task.cancelled():
                    task.exception()  # retrieved: an unused level's failure is moot
            else:
                task.cancel()
        self._tasks.clear()
