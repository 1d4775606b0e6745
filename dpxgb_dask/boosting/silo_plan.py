"""The coordinator's side of a cross-silo fit (:mod:`~dpxgb_dask.boosting.silos`): what
each silo releases with each request, built once per fit, and the fit's ledger, in which
every release is parallel over the disjoint silos."""
from .plan import FitLedger
from .silos import SiloRelease, SiloReleased, field_noise

#: Row ids of a cross-silo fit's partition ``i`` start at ``i << ROW_ID_BITS``: the keys
#: of the per-row randomness stay distinct without any silo telling its row count.
ROW_ID_BITS = 40


class SiloPlan:
    """A cross-silo fit's releases, built once per fit from its release objects: what each
    silo releases with each request (:class:`~dpxgb_dask.boosting.silos.SiloRelease`), and the release objects'
    mechanisms turned into :class:`~dpxgb_dask.boosting.silos.SiloReleased` (the silos add the noise).

    Parameters
    ----------
    n_silos : int
        The workers holding the fit's partitions (public).
    initial_score : InitialScore
    candidates : CandidateReleases
    leaf_method : GaussianLeaves
    hessian_denominators : bool
        The leaves' and the sketch's denominators are hessian sums (else counts).
    """

    def __init__(self, n_silos, initial_score, candidates, leaf_method, hessian_denominators):
        self.n_silos = int(n_silos)
        denominator = 1 if hessian_denominators else 2
        self._init = self._refresh = None
        if hasattr(initial_score, "mechanism"):
            self._init = SiloRelease("init", fields=(field_noise(initial_score.mechanism),))
            initial_score.mechanism = SiloReleased(initial_score.mechanism)
        if hasattr(candidates, "refresh_mechanism"):
            self._refresh = (field_noise(candidates.refresh_mechanism,
                                         "sum_hessians" if hessian_denominators else "count"),)
            candidates.refresh_mechanism = SiloReleased(candidates.refresh_mechanism)
        self._leaf = (field_noise(leaf_method.gradient_mechanism, 0),
                      field_noise(leaf_method.denominator_mechanism, denominator))
        leaf_method.gradient_mechanism = SiloReleased(leaf_method.gradient_mechanism)
        leaf_method.denominator_mechanism = SiloReleased(leaf_method.denominator_mechanism)

    @staticmethod
    def row_offsets(n_partitions):
        """The first row id of each partition (``{index: index << ROW_ID_BITS}``)."""
        return {i: i << ROW_ID_BITS for i in range(n_partitions)}

    @property
    def init(self):
        """SiloRelease: of the initial score's label sum and count (or class counts)."""
        return self._init

    def leaf(self, tree):
        """The :class:`~dpxgb_dask.boosting.silos.SiloRelease` of tree ``tree``'s leaf sums (G, H or count)."""
        return SiloRelease("leaf", tree, fields=self._leaf)

    def refresh(self, tree):
        """The :class:`~dpxgb_dask.boosting.silos.SiloRelease` of tree ``tree``'s iterative-Hessian root histogram."""
        return SiloRelease("sketch", tree, fields=self._refresh)


class SiloFitLedger(FitLedger):
    """The ledger of a cross-silo fit: every release is made at each silo on its own rows,
    so it is recorded parallel over the disjoint silos (axis ``"silos"``: by parallel
    composition it costs what the central release costs).

    Parameters
    ----------
    plan : ReleasePlan
    n_silos : int
    """

    def __init__(self, plan, n_silos):
        super().__init__(plan)
        self.n_silos = int(n_silos)

    def record(self, fields):
        """:meth:`~dpxgb_dask.boosting.plan.FitLedger.record` with the ``"silos"`` axis."""
        fields = dict(fields)
        fields["parallel_over"] = tuple(fields.get("parallel_over", ())) + ("silos",)
        fields["n_parallel"] = fields.get("n_parallel", 1) * self.n_silos
        super().record(fields)
