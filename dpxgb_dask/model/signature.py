"""A model file's signature: an HMAC-SHA256 of its canonical JSON under the owner's key
(``Booster.save_model(key=)``), checked on reading (``load_model(key=)``)."""
import hashlib
import hmac
import json


def signature(data, key):
    """HMAC-SHA256 (hex) of a model dict's canonical JSON under ``key``.

    Parameters
    ----------
    data : dict
        The model's JSON-ready dict, without its signature.
    key : bytes or str
        A non-empty secret.

    Returns
    -------
    str
        64 hex digits.
    """
    if isinstance(key, str):
        key = key.encode()
    if not isinstance(key, bytes) or not key:
        raise ValueError("key must be a non-empty bytes or str secret")
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, canonical.encode(), hashlib.sha256).hexdigest()


def check_signature(data, stated, key, path):
    """Refuse a model file whose signature is missing or does not verify under ``key``.

    Parameters
    ----------
    data : dict
        The file's model dict, its signature removed.
    stated : str or None
        The signature the file carried.
    key : bytes or str
    path : str
        The file, for the error.

    Raises
    ------
    ValueError
    """
    if stated is None:
        raise ValueError(f"{path} is not signed, and key= asks for a signed model")
    if not hmac.compare_digest(str(stated).encode(), signature(data, key).encode()):
        raise ValueError(f"the signature of {path} does not verify under this key: the file "
                         "was changed or signed with another key")
