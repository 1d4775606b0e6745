"""Privacy budgets across fits, from the user's process: create one on the scheduler, read
what its fits have spent.

A budget lives on the scheduler (:class:`~dpxgb_dask.cluster.scheduler.DPXGBSchedulerPlugin`),
in the file of Dask's config key ``dpxgb.budget-file`` (default ``~/.dpxgb/budgets.json`` where
the scheduler runs), so it survives a scheduler restart. Its accounting is
:class:`~dpxgb_dask.privacy.budget.PrivacyBudget`. A fit names it with ``budget=``: it is
checked before it reads a row, refused with :class:`~dpxgb_dask.privacy.validation.BudgetError`
if its releases would exceed the budget, and charged with the releases it made when it ends.

Examples
--------
>>> create_budget("adult", epsilon=3.0, delta=1e-6)          # doctest: +SKIP
>>> DPXGBClassifier(epsilon=1.0, budget="adult", ...).fit(X, y)   # doctest: +SKIP
>>> budget_status("adult")["spent"]                            # doctest: +SKIP
1.0
"""
from .cluster.client import ask_budgets

__all__ = ["budget_status", "create_budget", "list_budgets"]


def create_budget(name, epsilon, delta=1e-6, accountant="pld", client=None):
    """Create a privacy budget on the scheduler.

    Parameters
    ----------
    name : str
        The name fits give as ``budget=``; a name in use is refused (a budget is never
        reset by creating it again).
    epsilon : float
        Total ε the fits naming it may spend together (> 0).
    delta : float, default 1e-6
        δ at which the total is accounted, in [0, 1).
    accountant : {"pld", "rdp", "basic", "best"}, default "pld"
        Composes the releases of all its fits.
    client : distributed.Client or str, optional
        A client, or a scheduler's address. Default: the current default client, else an
        embedded LocalCluster (whose scheduler, in this process, keeps the budget in this
        machine's budget file).

    Returns
    -------
    dict
        The budget's status (:func:`budget_status`).
    """
    return ask_budgets(client, action="create", name=name, epsilon=epsilon, delta=delta,
                accountant=accountant)


def budget_status(name, client=None):
    """What a budget's fits have spent.

    Returns
    -------
    dict
        ``{"name", "epsilon", "delta", "accountant", "spent", "remaining", "n_fits",
        "created", "fits": [{"fit", "state", "time", "n_releases", "epsilon"}]}``:
        ``spent`` is ε of all the fits' releases composed by the budget's accountant at
        its δ; a running fit counts with all its planned releases ("reserved").
    """
    return ask_budgets(client, action="status", name=name)


def list_budgets(client=None):
    """The status of every budget on the scheduler, by name (list of dict)."""
    return ask_budgets(client, action="list")
