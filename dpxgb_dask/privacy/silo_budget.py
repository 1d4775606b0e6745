"""A silo's own cap on what it releases in one cross-silo fit, whatever its caller asks.

In a cross-silo fit each silo applies the mechanism its caller names to its own sums
(:mod:`~dpxgb_dask.boosting.silos`): the noise scale and the number of releases are the
caller's. A silo whose operator sets a cap keeps its own account instead of trusting
them: it adds up the zero-concentrated DP coefficient ρ of every release it makes in the
fit and refuses the release that would pass the cap (Bun & Steinke, "Concentrated
differential privacy: simplifications, extensions, and lower bounds", TCC 2016; the
numbers are those of its introduction):

* a Gaussian release of noise multiplier z = σ/Δ₂ is ρ = 1/(2z²)-zCDP (Prop. 1.6); the
  grid mechanism's z already covers its rounding margins
  (:class:`~dpxgb_dask.privacy.mechanisms.GaussianMechanism`);
* an ε-DP release (Laplace) is ρ = ε²/2-zCDP (Prop. 1.4);
* ρ adds up over releases (Lemma 1.7), and ρ-zCDP is (ρ + 2√(ρ ln(1/δ)), δ)-DP
  (Prop. 1.3), so a cap of ε at δ allows, in all,
  ρ_max = (√(ln(1/δ) + ε) − √(ln(1/δ)))².

A cross-silo fit samples no rows, so no amplification is lost by this account. With
secure aggregation the release's σ is the sum of every silo's share: the silo counts
the whole σ, trusting the other silos to add their shares (the honest-but-curious silos
of the threat model), and checks that the shares are as many as its peers.
"""
import math

from .mechanisms import GaussianMechanism, LaplaceMechanism
from .validation import check_delta, check_epsilon

__all__ = ["SiloBudget", "release_rho", "zcdp_cap"]


def zcdp_cap(epsilon, delta):
    """The largest ρ whose zCDP guarantee is (``epsilon``, ``delta``)-DP:
    ρ_max = (√(ln(1/δ) + ε) − √(ln(1/δ)))², the root of ε = ρ + 2√(ρ ln(1/δ)).

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In (0, 1).

    Returns
    -------
    float
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if delta <= 0.0:
        raise ValueError("delta must be > 0 for a zCDP cap, got 0")
    log_term = math.log(1.0 / delta)
    return (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2


def release_rho(mechanisms):
    """ρ of one release made of ``mechanisms`` (its parts, composed: their ρ add up).

    Parameters
    ----------
    mechanisms : iterable of GaussianMechanism or LaplaceMechanism

    Returns
    -------
    float
    """
    rho = 0.0
    for mechanism in mechanisms:
        if isinstance(mechanism, GaussianMechanism):
            rho += 1.0 / (2.0 * mechanism.noise_multiplier ** 2)
        elif isinstance(mechanism, LaplaceMechanism):
            rho += mechanism.epsilon ** 2 / 2.0
        else:
            raise TypeError(f"mechanism must be a GaussianMechanism or LaplaceMechanism, "
                            f"got {type(mechanism).__name__}")
    return rho


class SiloBudget:
    """A silo's cap on one fit's releases (public: set by the silo's operator).

    Parameters
    ----------
    epsilon, delta : float
        The cap: the fit's releases of this silo's rows stay (ε, δ)-DP together.

    Attributes
    ----------
    max_rho : float
        :func:`zcdp_cap` of the cap.
    spent : float
        ρ of the releases made so far.
    """

    def __init__(self, epsilon, delta):
        self.epsilon, self.delta = float(epsilon), float(delta)
        self.max_rho = zcdp_cap(epsilon, delta)
        self.spent = 0.0

    def charge(self, mechanisms):
        """Count one release, or refuse it (nothing is counted) if it would pass the cap.

        Parameters
        ----------
        mechanisms : iterable of GaussianMechanism or LaplaceMechanism

        Raises
        ------
        PermissionError
            Naming the cap, ρ spent and ρ asked (public values).
        """
        rho = release_rho(mechanisms)
        if self.spent + rho > self.max_rho:
            raise PermissionError(
                f"this silo caps a fit's releases at epsilon={self.epsilon:g}, "
                f"delta={self.delta:g} (dpxgb.silo.max-epsilon, dpxgb.silo.delta: "
                f"rho {self.max_rho:.6g} in zCDP); the fit has spent rho {self.spent:.6g} "
                f"here, and this release asks {rho:.6g} more")
        self.spent += rho
