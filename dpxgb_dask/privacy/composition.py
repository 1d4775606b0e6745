"""How a ledger composes: the terms every accountant reads (``accountants.py``).

All accountants read the ledger the same way (:func:`composition_terms`):

* an event on the full data is one term;
* the events on one Poisson subsample (same ``subsample`` id, rate γ) form one term: they
  are composed first and the subsampling amplification is applied to the composite. The
  subsample ids are indexed over the whole ledger, and one subsample must lie in one place
  (all its events free, or all in one part of one disjoint group): amplifying pieces of one
  sample separately would under-count, so anything else raises ``ValueError``;
* a ``disjoint_group`` forms one term whose parts compose in parallel;
* the terms compose sequentially; identical terms are counted, not repeated;
* a private selection's events (``selection``) and entries are no terms: only the RDP
  accountant composes them (:func:`selections`).
"""

from __future__ import annotations

import collections
import dataclasses
import math

from .ledger import Ledger

__all__ = ["Parallel", "Sampled", "Single", "amplified_epsilon", "composition_terms"]

Single = collections.namedtuple("Single", "event")
Sampled = collections.namedtuple("Sampled", "rate events")
Parallel = collections.namedtuple("Parallel", "parts")


def amplified_epsilon(epsilon, sampling_rate):
    """Pure ε of an ε-DP mechanism run on a Poisson subsample: log(1 + γ(e^ε - 1)).

    DP-XGBoost §4.4 (after Balle, Barthe & Gaboardi 2018); exact for add/remove of one row.

    Parameters
    ----------
    epsilon : float
        ε >= 0 of the mechanism on its input.
    sampling_rate : float
        γ in (0, 1].

    Returns
    -------
    float
    """
    if epsilon == 0.0:
        return 0.0
    return math.log1p(sampling_rate * math.expm1(epsilon))


def _sequential_terms(events):
    terms = []
    samples = collections.OrderedDict()
    for event in events:
        if event.subsample is None:
            terms.append(Single(event))
        else:
            samples.setdefault(event.subsample, []).append(event)
    for sid, members in samples.items():
        rates = {e.sampling_rate for e in members}
        if len(rates) != 1:
            raise ValueError(f"events of subsample {sid!r} disagree on sampling_rate: {sorted(rates)}")
        terms.append(Sampled(rates.pop(), tuple(members)))
    return terms


def _check_subsample_places(events):
    """Index subsample -> places over the whole ledger; refuse a subsample in several places."""
    places = collections.OrderedDict()
    for e in events:
        if e.subsample is not None:
            places.setdefault(e.subsample, collections.OrderedDict())[(e.disjoint_group, e.disjoint_part)] = None
    for sid, where in places.items():
        if len(where) == 1:
            continue
        groups = sorted({g for g, _ in where if g is not None})
        if (None, None) in where:
            what = f"free events and events of disjoint_group {groups}"
        elif len(groups) > 1:
            what = f"several disjoint groups {groups}"
        else:
            what = f"several parts {sorted(p for _, p in where)} of disjoint_group {groups[0]!r}"
        raise ValueError(
            f"subsample {sid!r} spans {what}: the releases on one Poisson subsample are amplified "
            "together, so they must all be free events or all lie in one part of one disjoint group; "
            "give releases on different samples different subsample ids"
        )


def composition_terms(ledger):
    """Split a ledger into sequentially composed terms.

    Parameters
    ----------
    ledger : Ledger or iterable of PrivacyEvent

    Returns
    -------
    list of Single, Sampled or Parallel
        ``Single(event)``: a release on the full data. ``Sampled(rate, events)``: the
        releases sharing one Poisson subsample. ``Parallel(parts)``: a disjoint group,
        each part a list of terms.

    Raises
    ------
    ValueError
        If the events of one subsample disagree on ``sampling_rate``, or one subsample id
        spans free and grouped events, several disjoint groups, or several parts of one
        group. All releases on one Poisson sample must be amplified together (Balle,
        Barthe & Gaboardi 2018 amplify the composite mechanism run on the sample), which is
        impossible if they are split between places that compose differently.
    """
    # filters and selection entries are no releases; a selection's events are accounted
    # as one repeat-and-select (see the module docstring)
    events = [e for e in ledger if not e.is_filter and e.selection is None]
    _check_subsample_places(events)
    free = [e for e in events if e.disjoint_group is None]
    terms = _sequential_terms(free)
    groups = collections.OrderedDict()
    for e in events:
        if e.disjoint_group is not None:
            groups.setdefault(e.disjoint_group, collections.OrderedDict()).setdefault(e.disjoint_part, []).append(e)
    for parts in groups.values():
        terms.append(Parallel(tuple(tuple(_sequential_terms(p)) for p in parts.values())))
    return terms


def _term_profile(term):
    if isinstance(term, Single):
        return ("single", term.event.profile)
    if isinstance(term, Sampled):
        return ("sampled", term.rate, tuple(sorted(e.profile for e in term.events)))
    return ("parallel", tuple(sorted(part_profile(p) for p in term.parts)))


def part_profile(part):
    """A hashable description of one part of a disjoint group: its terms' profiles,
    counted (identical parts compose as one)."""
    return tuple(sorted(collections.Counter(_term_profile(t) for t in part).items()))


def distinct_terms(terms):
    """[(term, multiplicity)] with identical terms merged, in first-seen order."""
    seen = collections.OrderedDict()
    for term in terms:
        key = _term_profile(term)
        if key in seen:
            seen[key][1] += 1
        else:
            seen[key] = [term, 1]
    return [(t, m) for t, m in seen.values()]


def effective_multiplier(events):
    """z of the composition of Gaussian events: 1/z² = Σ count/z_i²."""
    return 1.0 / math.sqrt(sum(e.count / e.noise_multiplier**2 for e in events))


def pure_sum(events):
    """Σ count·ε of pure-ε events (their basic composition)."""
    return sum(e.count * e.epsilon for e in events)


def as_ledger(ledger):
    """``ledger`` as a :class:`~dpxgb_dask.privacy.ledger.Ledger` (an iterable of events
    is wrapped)."""
    if isinstance(ledger, Ledger):
        return ledger
    return Ledger(ledger)


def check_filters(events, filters):
    """Refuse a ledger whose filters the RDP accountant could misread: two entries of one
    name (each budget would seem to cover the other's releases), or a Poisson subsample
    whose releases lie under different filters or partly under none (amplifying the parts
    separately would under-count, as in :func:`composition_terms`)."""
    names = [f.individual_filter for f in filters]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"individual filters {repeated} have several renyi_filter entries: "
                         "give each filter one entry (one fit's releases)")
    under = collections.defaultdict(set)
    for e in events:
        if e.subsample is not None and not e.is_filter:
            under[e.subsample].add(e.individual_filter if e.individual_filter in names else None)
    split = sorted(s for s, where in under.items() if len(where) > 1)
    if split:
        raise ValueError(f"subsample {split[0]!r} has releases under different individual "
                         "filters (or partly under none): the releases on one Poisson sample "
                         "are amplified together, so they must all pass the same filter")


def rdp_only(ledger):
    """Whether only the RDP accountant describes the ledger: it holds a private selection
    or a release with distributed noise (``noise_shares``, whose published guarantee is
    concentrated DP only); the basic and PLD accountants then certify no finite ε.

    Parameters
    ----------
    ledger : Ledger or iterable of PrivacyEvent

    Returns
    -------
    bool
    """
    ledger = list(as_ledger(ledger))
    return bool(selections(ledger)) or any(e.noise_shares for e in ledger)


def selections(ledger):
    """The private selections of a ledger, checked.

    Parameters
    ----------
    ledger : Ledger or iterable of PrivacyEvent

    Returns
    -------
    list of (entry, parts)
        Each selection's ``repeat_and_select`` entry and its configurations' planned
        releases, ``parts[c]`` a list of events with their ``selection`` fields cleared
        (one configuration's run, composed as any ledger).

    Raises
    ------
    ValueError
        A selection with several entries or none, or a configuration with no release.
    """
    entries, parts = collections.OrderedDict(), collections.defaultdict(dict)
    for e in ledger:
        if e.is_selection_entry:
            if e.selection in entries:
                raise ValueError(f"selection {e.selection!r} has several repeat_and_select "
                                 "entries: give each selection one entry")
            entries[e.selection] = e
        elif e.selection is not None:
            plain = dataclasses.replace(e, selection=None, selection_part=None)
            parts[e.selection].setdefault(e.selection_part, []).append(plain)
    missing = sorted(set(parts) - set(entries))
    if missing:
        raise ValueError(f"releases of selections {missing} have no repeat_and_select entry")
    out = []
    for name, entry in entries.items():
        found = parts.get(name, {})
        if not found or sorted(found) != list(range(len(found))):
            raise ValueError(f"selection {name!r} must have releases for configurations "
                             f"0..n-1, got {sorted(found)}")
        out.append((entry, [found[c] for c in range(len(found))]))
    return out


def gaussian_shares(term):
    """Number of δ shares a term spends in basic composition.

    A Gaussian event or a subsample containing Gaussians spends one share (after
    amplification, δ' = γ·(δ_unit/γ)); a disjoint group spends the maximum over its parts of
    the shares of the part's terms (parallel composition: max of δ; sequential: sum).
    """
    if isinstance(term, Single):
        return 0 if term.event.is_pure else 1
    if isinstance(term, Sampled):
        return 1 if any(not e.is_pure for e in term.events) else 0
    return max(sum(gaussian_shares(t) for t in part) for part in term.parts)


def is_pure_choice(term):
    """A subsample of pure-ε releases (rate < 1): amplified and plain are both valid."""
    return isinstance(term, Sampled) and term.rate < 1.0 and all(e.is_pure for e in term.events)


def has_pure_choice(term):
    """A term holding a subsample of pure-ε releases (:func:`is_pure_choice`), at any depth."""
    if isinstance(term, Parallel):
        return any(has_pure_choice(t) for part in term.parts for t in part)
    return is_pure_choice(term)
