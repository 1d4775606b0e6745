"""What the client, the scheduler and the workers agree on: the plugin's name, the fits'
leases, the capability that proves a call belongs to a fit, the reply envelope of every
handler (its result encoded by :mod:`~dpxgb_dask.cluster.codec`: never a pickle), and the
errors that cross the wire.
"""
import hashlib

from .codec import decode, encode, register_error

#: The name of dpxgb's scheduler and worker plugins.
PLUGIN_NAME = "dpxgb"

#: A fit's state is dropped when no call has touched it for this long: a client that died
#: before its coordinator started, or a coordinator that died with its scheduler, cannot
#: say so. Both keep their fits alive with a ``touch`` every ``KEEPALIVE_SECONDS``.
LEASE_SECONDS = 4.0
KEEPALIVE_SECONDS = 1.0


@register_error
class ClientLeftError(RuntimeError):
    """The client of a fit left the scheduler: the fit stopped and dropped its state."""


@register_error
class SchedulerLostError(ConnectionError):
    """The scheduler went away during a fit (the fit ended)."""


def capability_digest(capability):
    """SHA-256 of a fit's capability (a 256-bit secret of the client and its coordinator):
    what workers store to check calls, and what a task's arguments may carry.

    Parameters
    ----------
    capability : bytes

    Returns
    -------
    str
        Hexadecimal.
    """
    return hashlib.sha256(capability).hexdigest()


def reply(result, **extra):
    """The envelope of a handler's result: ``{"payload": encoded result, **extra}``."""
    return {"payload": encode(result), **extra}


def error_reply(exc):
    """The envelope of a handler's exception (returned, not raised: the comm would lose its
    type). Errors may name arguments, never data values."""
    return {"error": encode(exc)}


def unpack_reply(answer):
    """The result of a handler's reply, or its exception raised here with its own type.

    Parameters
    ----------
    answer : dict
        :func:`reply` or :func:`error_reply`.

    Raises
    ------
    ConnectionError
        The answer is no dpxgb reply (the connection closed, or the worker is starting
        and has no dpxgb handler yet).
    """
    if not isinstance(answer, dict) or not ({"error", "payload"} & set(answer)):
        raise ConnectionError(f"no dpxgb reply (got {type(answer).__name__}): the connection "
                              "closed, or the worker is starting and has no dpxgb handler yet")
    if "error" in answer:
        raise decode(answer["error"])
    return decode(answer["payload"])
