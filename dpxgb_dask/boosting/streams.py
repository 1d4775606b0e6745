"""The randomness of one fit: a secret noise source and a public structure source.

The DP noise and the secret row subsamples are keyed by a secret drawn afresh for every fit
(:class:`~dpxgb_dask.privacy.randomness.NoiseSource`), so two fits never share noise unless
the user opts in with ``reproducible_noise`` (which keys them by ``random_state``);
``random_state`` keys the public, data-independent choices (the structure of random trees)
in another domain, so the noise and the structure never share a key. Every stream is keyed by
(purpose, tree, depth, index), so a release replayed after a fault draws the same noise.
"""
import warnings

from ..privacy.randomness import NoiseSource
from ..privacy.validation import PrivacyLeakWarning

#: Said at every fit with ``reproducible_noise=True``.
REPRODUCIBLE_NOISE_WARNING = (
    "reproducible_noise=True keys the DP noise by random_state: two fits with the same "
    "random_state on neighbouring datasets (clone, GridSearchCV, a refit after one row "
    "changed) draw identical noise, and their difference is noise-free. Use it only to "
    "reproduce a fit, keep random_state as secret as the data, and give it to no other "
    "fit.")


class FitStreams:
    """The noise and structure streams of one fit.

    Parameters
    ----------
    noise : NoiseSource
        Keys the DP noise and the row subsamples (secret).
    structure : NoiseSource
        Keys the data-independent choices (public when not seeded with a secret).
    """

    def __init__(self, noise, structure):
        self.noise, self.structure = noise, structure

    @classmethod
    def for_fit(cls, params):
        """The streams of a fit with these parameters.

        Returns
        -------
        streams : FitStreams
        said : list of (warning class, message)
            The warnings of the choice (public facts only), for the user's process.
        """
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if params.reproducible_noise:
                warnings.warn(REPRODUCIBLE_NOISE_WARNING, PrivacyLeakWarning)
                noise = NoiseSource(params.random_state)  # warns about guessable seeds
            else:
                noise = NoiseSource()
            # the structure in a public domain, whatever keys the noise: a published
            # structure reveals no secret stream, even under the same seed
            streams = cls(noise, NoiseSource(params.random_state, secret=False))
        return streams, list(dict.fromkeys((w.category, str(w.message)) for w in caught))

    def noise_stream(self, purpose, tree=None, depth=None, index=0):
        """The secret stream of one release (each key is issued once).

        Returns
        -------
        RandomStream
        """
        return self.noise.stream(purpose=purpose, tree=tree, depth=depth, index=index)

    def structure_stream(self, tree, depth):
        """The stream of the data-independent choices of tree ``tree`` at ``depth``."""
        return self.structure.stream(purpose="split", tree=tree, depth=depth)

    def tree_structure_stream(self, tree, replay=False):
        """The one stream of a totally random tree's whole structure (every node's draws,
        in order, from one cipher context:
        :class:`~dpxgb_dask.privacy.randomness.SequentialStream`); ``replay``: read it
        again from its start (a longer buffer of the same words)."""
        return self.structure.stream(purpose="random_tree", tree=tree, sequential=True,
                                     replay=replay)

    def main_effect_stream(self, boosting_round):
        """The public stream of the feature that round ``boosting_round``'s one-feature
        trees draw (``main_effect_features="by_released_gain"``)."""
        return self.structure.stream(purpose="main_effect_feature", tree=boosting_round)

    def sampling_key(self, purpose, tree=None):
        """A secret 256-bit key of row subsamples
        (:func:`~dpxgb_dask.partition.rows.row_uniforms`).

        Returns
        -------
        int
        """
        words = self.noise_stream(purpose, tree).uint64(4)
        return sum(int(word) << (64 * i) for i, word in enumerate(words))
