"""A model's privacy certificate: what its ledger of releases spends, stated in the model
(``Booster.ledger``), recomputed on reading, and reported.

Everything here is computed from public values (the releases' mechanisms, sensitivities,
noise and sampling rates), so a certificate can be shared wherever the model can. A model
file whose stated totals disagree with its ledger is refused (:func:`check_privacy_claims`).
"""
from dataclasses import replace
from decimal import ROUND_CEILING, Context, Decimal
import math

from ..privacy.accountants import get_accountant, privacy_report
from ..privacy.ledger import Ledger

#: The neighbouring relation of every fit (the README's privacy model).
NEIGHBOURING_RELATION = "add/remove one row"


def not_dp_choices(params):
    """The choices of a fit that are not differentially private (public parameters only:
    a ``TrainParams`` or a model's ``params`` dict).

    Returns
    -------
    list of dict
        ``{"purpose", "parameter", "reveals"}`` per choice; empty for a fully DP fit.
    """
    get = params.get if isinstance(params, dict) else lambda name: getattr(params, name)
    bounds = get("feature_bounds")
    found = []
    if isinstance(bounds, str) and bounds == "data":
        found.append({"purpose": "feature_bounds", "parameter": "feature_bounds='data'",
                      "reveals": "the exact minimum and maximum of every feature, stored "
                                 "in the model"})
    if get("reproducible_noise"):
        found.append({"purpose": "noise", "parameter": "reproducible_noise=True",
                      "reveals": "nothing by itself, but the noise and row subsamples are "
                                 "keyed by random_state: whoever holds the seed can subtract "
                                 "the noise, and two such fits on neighbouring data share it"})
    return found


#: The non-DP choices every model file has stated since the first format: a file that hides
#: one was edited and is refused. Later ones (reproducible noise) are added to an older
#: file's report from its parameters instead (:func:`model_privacy_report`).
ALWAYS_STATED = frozenset({"feature_bounds"})


def privacy_summary(ledger, params, budget_scale):
    """The privacy part of a model (``Booster.ledger``, JSON-ready): the fit's ledger, its
    δ, the accountant that calibrated it and the ε it reports, and every accountant's ε.

    Parameters
    ----------
    ledger : Ledger
        The releases the fit made.
    params : TrainParams
    budget_scale : float
        The plan's calibrated budget scale
        (:func:`~dpxgb_dask.boosting.calibration.calibrate_budget_scale`).

    Returns
    -------
    dict
        ``{"events", "delta", "accountant", "epsilon", "epsilon_by_accountant", "budget_scale",
        "neighbouring_relation", "not_dp"}``; an infinite ε (pure accounting of a
        Gaussian release at δ = 0) is written as the string ``"inf"``. ``not_dp`` lists
        the fit's non-DP choices (:func:`not_dp_choices`): the ε values account for the DP
        releases only, and a model with such entries is not differentially private.
    """
    report = privacy_report(ledger, params.delta)
    epsilon = (report[params.accountant] if params.accountant in report
               else get_accountant(params.accountant).get_epsilon(ledger, params.delta))
    return {
        "events": ledger.to_dict(),
        "delta": params.delta,
        "accountant": params.accountant,
        "epsilon": stated_total(epsilon),
        "epsilon_by_accountant": {k: _finite_or_text(stated_total(v))
                                  for k, v in report.items()},
        "budget_scale": budget_scale,
        "neighbouring_relation": NEIGHBOURING_RELATION,
        "not_dp": not_dp_choices(params),
    }


def continued_summary(earlier, earlier_trees, new_ledger, params, budget_scale):
    """The privacy summary of a model that continued another: one ledger of both parts'
    releases whose totals compose the two (the continuing fit numbers its trees after the
    first part's, so its samples and events are its own).

    Parameters
    ----------
    earlier : dict
        The first part's privacy summary (its ``Booster.ledger``).
    earlier_trees : int
        The first part's number of trees.
    new_ledger : Ledger
        The continuing fit's releases (trees numbered from ``earlier_trees``).
    params : TrainParams
        The continuing fit's parameters: its accountant and δ account the whole model.
    budget_scale : float
        The continuing fit's calibrated budget scale.

    Returns
    -------
    dict
        :func:`privacy_summary` of both parts, which keeps the first part's non-DP choices
        and gains ``continued`` (the first part's trees, ε, δ and budget).
    """
    events = list(Ledger.from_dict(earlier["events"]).events)
    first_trees = {e.tree for e in events if e.tree is not None}
    if any(e.tree in first_trees for e in new_ledger.events if e.tree is not None):
        raise AssertionError("the continuing fit's trees overlap the model's in the ledger")
    # each part's individual filter covers its own trees only: distinct names
    new_events = [e if e.individual_filter is None else
                  replace(e, individual_filter=f"{e.individual_filter}@{earlier_trees}")
                  for e in new_ledger.events]
    summary = privacy_summary(Ledger(events + new_events), params, budget_scale)
    earlier_not_dp = list(earlier.get("not_dp", []))
    summary["not_dp"] = earlier_not_dp + [c for c in summary["not_dp"]
                                          if c not in earlier_not_dp]
    summary["continued"] = {"from_trees": earlier_trees,
                            "earlier_epsilon": earlier["epsilon"],
                            "earlier_delta": earlier["delta"],
                            "earlier_budget": earlier.get("budget")}
    return summary


def model_privacy_report(summary, params=None):
    """What a model's privacy summary certifies, recomputed from its ledger's events.

    Parameters
    ----------
    summary : dict
        A model's ``Booster.ledger`` (:func:`privacy_summary`).
    params : dict, optional
        The model's parameters: their non-DP choices (:func:`not_dp_choices`) are in
        ``not_dp`` whether or not the summary states them (an older file's).

    Returns
    -------
    dict
        ``{"delta", "basic", "rdp", "pld", "best", "n_events", "accountant", "epsilon",
        "neighbouring_relation", "not_dp", "is_dp", "budget", "events": [dict, ...]}``:
        ε under every accountant at the model's δ, the accountant the fit was calibrated
        with and its ε, the non-DP choices (``is_dp`` is False when there is any), the
        budget across fits the fit was charged to (:func:`~dpxgb_dask.privacy.budget.budget_record`; None when
        it named none), and one row per release (:meth:`~dpxgb_dask.privacy.ledger.Ledger.table`).
    """
    ledger = Ledger.from_dict(summary["events"])
    report = privacy_report(ledger, summary["delta"])
    report["accountant"] = summary["accountant"]
    report["epsilon"] = float(summary["epsilon"])
    report["neighbouring_relation"] = summary.get("neighbouring_relation",
                                                  NEIGHBOURING_RELATION)
    report["not_dp"] = list(summary.get("not_dp", []))
    stated = {c["purpose"] for c in report["not_dp"]}
    report["not_dp"] += [c for c in not_dp_choices(params or {}) if c["purpose"] not in stated]
    report["is_dp"] = not report["not_dp"]
    report["budget"] = summary.get("budget")
    report["events"] = ledger.table()
    return report


#: Significant digits of an ε total stated in a model file (:func:`stated_total`).
STATED_DIGITS = 5


def stated_total(value):
    """An accountant's ε total as a model file states it: rounded up to
    :data:`STATED_DIGITS` significant digits.

    dp-accounting's PLD and RDP totals differ between CPUs in their last 7-9 digits (NumPy's
    SIMD ``exp`` and ``log`` and the PLD's discretisation of them), so the unrounded total
    would make a model file's bytes depend on the machine. Rounded up, the stated total is
    still an upper bound of what the ledger spends (``check_privacy_claims`` compares it
    within :data:`CLAIM_RTOL`), and it is the same on every machine unless the total lies
    within ~1e-9 of a rounding step (a chance of about 1e-5 per total).

    Parameters
    ----------
    value : float
        An ε (``inf`` and ``0`` are returned unchanged).

    Returns
    -------
    float
        The float of the smallest decimal of :data:`STATED_DIGITS` significant digits whose
        float is ``>= value`` (so a stated total states itself again).
    """
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        return value
    nearest = Decimal(f"{value:.{STATED_DIGITS - 1}e}")  # (exact: Python's float formatting)
    if float(nearest) >= value:
        return float(nearest)
    return float(nearest.next_plus(Context(prec=STATED_DIGITS, rounding=ROUND_CEILING)))


def _finite_or_text(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


class PrivacyClaimError(ValueError):
    """A model's stated privacy totals disagree with what its ledger's releases spend."""


#: Relative tolerance of a recomputed total against a model's claim: dp-accounting's PLD
#: and RDP are deterministic, the slack absorbs another machine's floating point or
#: another dp-accounting version's discretisation.
CLAIM_RTOL = 1e-3


def check_privacy_claims(summary, params=None):
    """Recompute every total of a model's privacy summary from its ledger's events and
    refuse a summary whose claims disagree (an edited file, or one written by another
    accounting).

    Parameters
    ----------
    summary : dict
        A model's ``Booster.ledger`` (:func:`privacy_summary`).
    params : dict, optional
        The model's training parameters (``Booster.params``): its non-DP choices must be
        listed in the summary.

    Raises
    ------
    PrivacyClaimError
        Naming the claim, its stated value and the recomputed one.
    """
    if not summary:
        raise PrivacyClaimError("the model has no privacy ledger: nothing certifies it")
    report = model_privacy_report(summary)
    if params is not None:
        missing = not_dp_choices(params)
        stated = {c["purpose"] for c in report["not_dp"]}
        hidden = [c["parameter"] for c in missing
                  if c["purpose"] not in stated and c["purpose"] in ALWAYS_STATED]
        if hidden:
            raise PrivacyClaimError(f"the model was trained with {', '.join(hidden)}, which "
                                    "is not DP, but does not say so (not_dp)")
    claims = dict(summary.get("epsilon_by_accountant", {}))
    claims["epsilon"] = summary.get("epsilon")
    recomputed = {k: report[k] for k in ("basic", "rdp", "pld", "best", "delta", "n_events")}
    recomputed["epsilon"] = report.get(summary.get("accountant"))
    if recomputed["epsilon"] is None:
        recomputed["epsilon"] = get_accountant(summary["accountant"]).get_epsilon(
            Ledger.from_dict(summary["events"]), summary["delta"])
    for name, value in recomputed.items():
        stated = claims.get(name)
        if stated is None:
            raise PrivacyClaimError(f"the model states no {name!r} total")
        if not _same_total(float(stated), float(value)):
            raise PrivacyClaimError(
                f"the model states {name} = {stated} but its ledger's {report['n_events']} "
                f"releases give {value:.10g}: the file was edited or is corrupt")


def _same_total(stated, value):
    if math.isinf(stated) or math.isinf(value):
        return stated == value
    return abs(stated - value) <= CLAIM_RTOL * max(abs(value), 1e-12)
