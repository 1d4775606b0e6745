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
import json
import math
import os

from .json_files import locked_file, write_json_atomically
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


#: The format of a silo's ledger file (:class:`SiloBudget` with ``ledger``).
LEDGER_FORMAT, LEDGER_VERSION = "dpxgb-silo-ledger", 1


class SiloBudget:
    """A silo's cap on its releases (public: set by the silo's operator): on one fit's, or,
    with a ``ledger`` file, on every fit's releases of the same rows (a budget).

    Parameters
    ----------
    epsilon, delta : float
        The cap: the releases of this silo's rows stay (ε, δ)-DP together.
    ledger : str, optional
        A JSON file on the silo's own storage that keeps the ρ spent on each of its data
        files across fits (locked while it is read and written: fits at once on one
        machine count each other's releases). Without it the cap is per fit.
    key : str, optional
        The rows' key in the ledger: the resolved path of their file.

    Attributes
    ----------
    max_rho : float
        :func:`zcdp_cap` of the cap.
    spent : float
        ρ of the releases made so far (with a ledger: by every fit, after the last
        charge).
    """

    def __init__(self, epsilon, delta, ledger=None, key=None):
        self.epsilon, self.delta = float(epsilon), float(delta)
        self.max_rho = zcdp_cap(epsilon, delta)
        self.ledger, self.key = ledger, key
        if (ledger is None) != (key is None):
            raise ValueError("a silo ledger needs the key of the rows it counts, and only "
                             "then")
        self.spent = self._read()[1].get(key, 0.0) if ledger is not None else 0.0

    def _read(self):
        """(the ledger's data, its spent ρ by key); an empty ledger if the file is absent."""
        if not os.path.exists(self.ledger):
            data = {"format": LEDGER_FORMAT, "version": LEDGER_VERSION, "spent": {}}
            return data, data["spent"]
        with open(self.ledger, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict) or data.get("format") != LEDGER_FORMAT \
                or data.get("version") != LEDGER_VERSION:
            raise ValueError(f"{self.ledger} is not a dpxgb silo ledger (format "
                             f"{LEDGER_FORMAT!r}, version {LEDGER_VERSION})")
        return data, data["spent"]

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
        if self.ledger is None:
            self._check(rho)
            self.spent += rho
            return
        with locked_file(self.ledger, create=True):
            data, spent = self._read()
            self.spent = spent.get(self.key, 0.0)
            self._check(rho)
            self.spent += rho
            spent[self.key] = self.spent
            write_json_atomically(self.ledger, data)

    def _check(self, rho):
        if self.spent + rho > self.max_rho:
            scope = ("a fit's releases" if self.ledger is None else
                     f"the releases of {self.key} over every fit (ledger {self.ledger})")
            raise PermissionError(
                f"this silo caps {scope} at epsilon={self.epsilon:g}, "
                f"delta={self.delta:g} (dpxgb.silo.max-epsilon, dpxgb.silo.delta: "
                f"rho {self.max_rho:.6g} in zCDP); rho {self.spent:.6g} is spent "
                f"here, and this release asks {rho:.6g} more")
