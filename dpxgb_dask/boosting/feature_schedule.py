"""Which feature each round of random trees splits on: the one feature of a one-feature
round, or None where every node draws its own (``feature_selection``), and for staged
trees how long their main-effect stage lasts.

All of it is public or post-processing: a round's number, the fit's public structure
stream, and for ``main_effect_features="by_released_gain"`` the leaf releases of earlier
rounds (their released gains and their evidence of signal). No budget is spent here.
"""
import statistics

import numpy as np

#: ``main_effect_features="by_released_gain"``: the share of a round's feature draw that is
#: uniform over the features, so that a feature whose first trees released little is still
#: drawn again (a main effect can hide behind the noise of one tree).
FOCUS_UNIFORM_SHARE = 0.2


class FeatureSchedule:
    """The feature of each boosting round of a fit's random trees, built once per fit.

    Parameters
    ----------
    params : TrainParams
        The fit's ``feature_selection``, ``main_effect_features``,
        ``main_effect_test_level`` and ``n_estimators``.
    n_features : int
    trees_per_round : int
        Trees per boosting round (K for a multiclass round, whose trees share the feature).
    streams : FitStreams
        The fit's streams (the public main-effect stream of the draws by released gain).

    Attributes
    ----------
    main_effect_rounds : int
        ``"staged"``: the rounds before this one grow one-feature trees: half of them
        (public), or with ``by_released_gain`` a pass over the features and half of the
        rest (half of them when the rounds cannot complete a pass), unless the pass's
        releases show no main effect (``_end_of_main_effects``).
    released_gain : ndarray of float64, shape (n_features,)
        The gain each feature's latest one-feature round released (post-processing).
    pass_evidence : ndarray of float64, shape (n_features,)
        The evidence of signal of each first-pass round's release (NaN: not released yet;
        -inf: the leaf method tells none), ``by_released_gain`` only.
    """

    def __init__(self, params, n_features, trees_per_round, streams):
        self.feature_selection = params.feature_selection
        self.n_features, self.trees_per_round, self.streams = \
            n_features, trees_per_round, streams
        self.by_released_gain = params.main_effect_features == "by_released_gain"
        self.test_level = params.main_effect_test_level
        m, n_rounds = n_features, params.n_estimators
        self.main_effect_rounds = m + -(-(n_rounds - m) // 2) \
            if self.by_released_gain and n_rounds > m else -(-n_rounds // 2)
        self.released_gain = np.zeros(m)
        self.pass_evidence = np.full(m, np.nan)
        self._pass_decided = False
        #: boosting round -> its one feature (None: a feature per node), fixed when first
        #: asked: a round drawn by released gain reads the releases made before it
        self._round_feature = {}



    def one_feature(self, boosting_round):
        """The one feature every node of the round's trees splits on, or None when each
        node draws its own (public: from the round's number alone).

        ``"cyclic"``: feature ``r mod m`` in round ``r``. ``"mixed"``: the even rounds are
        one-feature trees over the features in turn (feature ``(r/2) mod m``), the odd
        rounds draw a feature per node, so that the ensemble holds both the fine
        one-feature steps of an additive model and trees whose paths combine features
        (interactions). ``"staged"``: one-feature trees over the features in turn in the
        first half of the rounds (the main effects, as an additive model), then a feature per
        node (interactions, fitted on what the main effects leave), the order of GA2M
        (Lou et al. 2013); with ``main_effect_features="by_released_gain"`` the main-effect
        rounds after a first pass over the features draw theirs by released gain
        (``_feature_by_released_gain``). ``"random"``: a feature per node in every
        round.
        """
        if boosting_round in self._round_feature:
            return self._round_feature[boosting_round]
        turn, feature = None, None
        if self.feature_selection == "cyclic":
            turn = boosting_round
        elif self.feature_selection == "staged" and boosting_round < self.main_effect_rounds:
            if self.by_released_gain and boosting_round >= self.n_features:
                if not self._end_of_main_effects(boosting_round):
                    feature = self._feature_by_released_gain(boosting_round)
            else:
                turn = boosting_round
        elif self.feature_selection == "mixed" and boosting_round % 2 == 0:
            turn = boosting_round // 2
        if turn is not None:
            feature = turn % self.n_features
        self._round_feature[boosting_round] = feature
        return feature

    def _end_of_main_effects(self, boosting_round):
        """Whether the main-effect stage ends before ``boosting_round`` (a round after the
        first pass), decided once, at the first such round asked for after every round of
        the pass released its leaves: the stage ends there when the pass shows no main
        effect (:meth:`_pass_shows_main_effects`).

        The rounds asked for before the pass's last release (the coordinator draws tree
        t + 1 before tree t's leaves are released) stay main-effect rounds. A function of DP
        releases and of the order the coordinator draws in (public): post-processing, no
        budget.
        """
        if not self._pass_decided and not np.isnan(self.pass_evidence).any():
            self._pass_decided = True
            if not self._pass_shows_main_effects():
                self.main_effect_rounds = boosting_round
        return boosting_round >= self.main_effect_rounds

    def _pass_shows_main_effects(self):
        """Whether some tree of the first pass released a gain above its noise: its
        :func:`~dpxgb_dask.boosting.leaves.released_gain_evidence`, less the pass's median
        where that is negative, exceeds the normal quantile ``1 - level / m``
        (``main_effect_test_level``: a one-sided Bonferroni test over the m features). True
        without a test (level 0), and where the leaf method tells no evidence (the stage
        stays).

        Without a main effect the m evidences share one centre, 0 for unclipped gradients
        and below 0 where ``gradient_bound`` clips them (the leaves' G̃² fall short of H);
        the median of a pass whose features are mostly without signal estimates it. Only a
        negative median is taken off: a pass whose features all carry signal has a
        positive one, and subtracting it would hide them.
        """
        evidence = self.pass_evidence
        if not self.test_level or np.isinf(evidence).any():  # (-inf: no evidence told)
            return True
        threshold = statistics.NormalDist().inv_cdf(1.0 - self.test_level / self.n_features)
        center = min(0.0, float(np.median(evidence)))
        return bool(evidence.max() - center > threshold)

    def _feature_by_released_gain(self, boosting_round):
        """The feature of a main-effect round after the first pass: feature ``j`` with
        probability ``s/m + (1 - s) · gain_j / Σ gain`` (s = ``FOCUS_UNIFORM_SHARE``;
        uniform while no gain was released), one uniform from the round's public
        stream (``FitStreams.main_effect_stream``).

        ``gain_j`` is what feature ``j``'s latest one-feature round released: the sum over
        its leaves of cover · value², the loss reduction the released leaf values promise
        (with James-Stein leaves a tree no larger than its noise promises about 0). A
        function of DP releases and public randomness: post-processing, no budget.
        """
        n = self.n_features
        total = float(self.released_gain.sum())
        if total > 0.0:
            share = FOCUS_UNIFORM_SHARE / n + (1.0 - FOCUS_UNIFORM_SHARE) * (
                self.released_gain / total)
        else:
            share = np.full(n, 1.0 / n)
        word = int(self.streams.main_effect_stream(boosting_round).uint64(1)[0])
        uniform = (word >> 11) * 2.0**-53  # 53 random bits: a float in [0, 1)
        cumulative = np.cumsum(share)
        return int(min(np.searchsorted(cumulative, uniform * cumulative[-1], side="right"),
                       n - 1))

    def observe(self, tree, released):
        """Tree ``tree``'s leaf release, for the features and the stage of later rounds
        (``by_released_gain``; post-processing).

        Parameters
        ----------
        tree : int
        released : ReleasedLeaves
            The leaves' released values before the learning rate, their covers and the
            release's evidence of signal.

        Returns
        -------
        int or None
            The tree's one feature (None: a feature per node).
        """
        boosting_round = tree // self.trees_per_round
        feature = self.one_feature(boosting_round)
        if feature is None or not self.by_released_gain:
            return feature
        covers, values = released.covers, released.values
        gain = float(np.dot(covers, values * values))
        # (a multiclass round's trees share its feature: their gains add up, and the
        # round's evidence is its strongest tree's)
        first_of_round = tree % self.trees_per_round == 0
        self.released_gain[feature] = gain if first_of_round else \
            self.released_gain[feature] + gain
        if boosting_round < self.n_features and self.feature_selection == "staged":
            evidence = -np.inf if released.evidence is None else released.evidence
            self.pass_evidence[boosting_round] = evidence if first_of_round else \
                max(self.pass_evidence[boosting_round], evidence)
        return feature
