"""The plain encoding of every dpxgb message between processes: msgpack bytes, never a
pickle, so that decoding a message runs no code its sender chose.

A message holds ``None``, booleans, integers (of any size), floats, strings, bytes, lists,
tuples, dicts, NumPy arrays of numbers (dtype, shape and raw bytes), CSR matrices, and the
protocol's own types from a fixed list (:data:`TYPES`: a worker's actions, the round
messages, the objective, the Rényi filter, a model), which are rebuilt field by field
through their constructors.
Exceptions travel as their type's name (from a fixed list, :data:`ERRORS`; any other
arrives as a ``RuntimeError`` naming it) and their plain arguments.

The fit request that a client sends to the scheduler is not encoded here: it is plain
keyword arguments, checked field by field
(:func:`~dpxgb_dask.cluster.fit_request.check_fit_request`).
"""
import asyncio
import dataclasses
import functools
import importlib
import sys

import msgpack
import numpy as np

#: The protocol's types a message may hold, by name -> module, imported when a message
#: holds one (a worker loads the Rényi filter's accountants, or SciPy, only for a fit
#: that uses them).
TYPES = {
    "Prepare": "dpxgb_dask.partition.messages",
    "Round": "dpxgb_dask.partition.messages",
    "TreeEnd": "dpxgb_dask.partition.messages",
    "TreeStart": "dpxgb_dask.partition.messages",
    "SiloRelease": "dpxgb_dask.partition.messages",
    "FieldNoise": "dpxgb_dask.partition.messages",
    "SignedKey": "dpxgb_dask.privacy.silo_identity",
    "Objective": "dpxgb_dask.objective",
    "FilterTerm": "dpxgb_dask.privacy.filter",
    "RowFilter": "dpxgb_dask.privacy.filter",
    **{name: "dpxgb_dask.cluster.actions" for name in (
        "LoadRows", "LoadSiloRows", "Aggregate", "PrepareRows", "RunRound", "RestoreRows",
        "SiloKey", "SiloPeers", "Touch", "Drop")},
}
_BOOSTER_MODULE = "dpxgb_dask.model.booster"


def _protocol_type(name):
    """The class named ``name`` in :data:`TYPES` (None for any other name)."""
    module = TYPES.get(name) if isinstance(name, str) else None
    return None if module is None else _imported_type(module, name)


@functools.lru_cache(maxsize=None)
def _imported_type(module, name):
    """The class ``name`` of ``module`` (of :data:`TYPES`: looked up once)."""
    return getattr(importlib.import_module(module), name)


@functools.lru_cache(maxsize=None)
def _field_names(cls):
    """The names of the dataclass ``cls``'s fields (a protocol type: read once)."""
    return tuple(f.name for f in dataclasses.fields(cls))


#: NumPy dtype kinds an array (or each field of a record array) may have: booleans,
#: integers, floats, complex numbers.
ARRAY_KINDS = frozenset("biufc")

#: The reserved key of a tagged map: ``{_TAG: [kind, ...]}`` holds a tuple, an array, a CSR
#: matrix, a model, an exception or a protocol type.
_TAG = "\x00dpxgb"
#: The extension code of an integer beyond 64 bits (its decimal digits).
_BIGINT = 1

class MessageError(ValueError):
    """Bytes that are not a dpxgb message, or that hold a type it may not hold."""


_BUILTIN_ERRORS = (ArithmeticError, AssertionError, ConnectionError, FloatingPointError,
                   IndexError, KeyError, LookupError, MemoryError, NotImplementedError,
                   OSError, OverflowError, PermissionError, RuntimeError, TimeoutError,
                   TypeError, ValueError, ZeroDivisionError, asyncio.CancelledError)
#: Exception types that keep their type across the wire, by name; more register
#: themselves with :func:`register_error`.
ERRORS = {cls.__name__: cls for cls in _BUILTIN_ERRORS + (MessageError,)}


def register_error(cls):
    """Let exceptions of type ``cls`` keep their type across the wire (a class decorator).
    Their ``address`` attribute, if any, travels too."""
    ERRORS[cls.__name__] = cls
    return cls


def encode(obj):
    """``obj`` as msgpack bytes (see the module's notes for what it may hold).

    Raises
    ------
    TypeError
        Naming the first value of another type.
    """
    try:
        return msgpack.packb(obj, default=_default, strict_types=True, use_bin_type=True)
    except OverflowError:
        # msgpack's integers have 64 bits, and it raises on a larger one without asking
        # _default: only then is the message walked for them (a seed of more than 64
        # bits, say), so that the messages of the rounds pack without a walk in Python
        return msgpack.packb(_big_ints(obj), default=_default_big_ints, strict_types=True,
                             use_bin_type=True)


def _default_big_ints(obj):
    """:func:`_default`, with the integers beyond 64 bits of what it returns as
    extensions."""
    return _big_ints(_default(obj))


def _big_ints(obj):
    """``obj`` with its integers beyond 64 bits (in lists, tuples and dicts) as
    extensions."""
    if type(obj) is int and not -2**63 <= obj < 2**64:
        return msgpack.ExtType(_BIGINT, str(obj).encode())
    if type(obj) in (list, tuple):
        return type(obj)(_big_ints(v) for v in obj)
    if type(obj) is dict:
        return {_big_ints(k): _big_ints(v) for k, v in obj.items()}
    return obj


def decode(data):
    """The object of :func:`encode`'s bytes, rebuilt without running any code of the
    sender's choosing.

    Parameters
    ----------
    data : bytes

    Raises
    ------
    MessageError
        The bytes are not such a message (a pickle, for one), or name a type outside
        :data:`TYPES`.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise MessageError(f"a dpxgb message must be bytes, got {type(data).__name__}")
    try:
        return msgpack.unpackb(data, ext_hook=_ext, object_hook=_tagged,
                               strict_map_key=False, raw=False)
    except MessageError:
        raise
    except Exception as exc:  # malformed bytes: msgpack's own errors, or a constructor's
        raise MessageError(f"not a dpxgb message ({type(exc).__name__}: {exc})") from None


def _tag(kind, *payload):
    # A map of one reserved key, packed in line with the rest of the message (an array's
    # bytes are copied once, straight into the message, unlike an extension's).
    return {_TAG: [kind, *payload]}


def _default(obj):
    if type(obj) is np.ndarray:  # (the most frequent, first)
        return _array(obj)
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return _tag("tuple", list(obj))
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, int):  # a subclass of int
        return int(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, np.ndarray):
        return _array(obj)
    sparse = sys.modules.get("scipy.sparse")  # (sparse rows exist only if it is loaded)
    if sparse is not None and sparse.issparse(obj):
        csr = sparse.csr_matrix(obj)
        return _tag("csr", csr.data, csr.indices, csr.indptr, list(csr.shape))
    name = type(obj).__name__
    if name == "Booster" and type(obj).__module__ == _BOOSTER_MODULE:
        return _tag("booster", obj.to_dict(arrays=True))
    if isinstance(obj, BaseException):
        return _tag("error", *_error_fields(obj))
    if dataclasses.is_dataclass(obj) and TYPES.get(name) == type(obj).__module__:
        return _tag("dataclass", name,
                    {field: getattr(obj, field) for field in _field_names(type(obj))})
    raise TypeError(f"cannot send a {type(obj).__module__}.{name} in a dpxgb message")


def _array(obj):
    array = np.ascontiguousarray(obj)
    # (a view of the array's memory, not a copy, unless it has no elements)
    raw = memoryview(array).cast("B") if array.ndim and array.size else array.tobytes()
    return _tag("array", _dtype_fields(array.dtype), list(array.shape), raw)


@functools.lru_cache(maxsize=256)
def _dtype_fields(dtype):
    """A dtype of numbers, or a record of numbers (the histograms' (G, H, count)), as
    plain data: its type string, or its fields' names, types and offsets and its size."""
    if dtype.fields is None:
        if dtype.kind not in ARRAY_KINDS:
            raise TypeError(f"cannot send an array of dtype {dtype} (numbers only)")
        return dtype.str
    fields = [(name, dtype.fields[name][0], dtype.fields[name][1]) for name in dtype.names]
    for name, field, _ in fields:
        if field.fields is not None or field.kind not in ARRAY_KINDS or field.shape:
            raise TypeError(f"cannot send an array of dtype {dtype} (numbers only)")
    return [[name for name, _, _ in fields], [field.str for _, field, _ in fields],
            [offset for _, _, offset in fields], dtype.itemsize]


def _dtype_of(fields):
    """The dtype of :func:`_dtype_fields`' plain data, refused unless made of numbers."""
    if isinstance(fields, str):
        return _plain_dtype(fields)
    return _checked_dtype(fields)


@functools.lru_cache(maxsize=256)
def _plain_dtype(text):
    """:func:`_dtype_of` of a type string (the arrays' usual case: checked once per
    string)."""
    return _checked_dtype(text)


def _checked_dtype(fields):
    """:func:`_dtype_of`, uncached."""
    if isinstance(fields, str):
        dtype = np.dtype(fields)
    else:
        names, formats, offsets, itemsize = fields
        if not all(isinstance(n, str) for n in names) or \
                not all(isinstance(f, str) for f in formats):
            raise MessageError("a dpxgb message holds a record dtype with bad fields")
        dtype = np.dtype({"names": list(names), "formats": list(formats),
                          "offsets": list(offsets), "itemsize": int(itemsize)})
    parts = [dtype] if dtype.fields is None else [dtype.fields[n][0] for n in dtype.names]
    if any(p.kind not in ARRAY_KINDS or p.fields is not None or p.shape for p in parts):
        raise MessageError(f"a dpxgb message may not hold an array of dtype {dtype}")
    return dtype


def _error_fields(exc):
    plain = (str, int, float, bool, type(None))
    args = list(exc.args) if all(isinstance(a, plain) for a in exc.args) else [str(exc)]
    name = type(exc).__name__
    if ERRORS.get(name) is not type(exc):
        name, args = "RuntimeError", [f"{type(exc).__name__}: {exc}"]
    return [name, args, getattr(exc, "address", None)]


def _ext(code, data):
    if code == _BIGINT:
        return int(bytes(data).decode("ascii"))
    raise MessageError(f"not a dpxgb message: unknown extension {code}")


def _tagged(obj):
    """A map of the message: a tagged value (:func:`_tag`) rebuilt, any other map kept."""
    if len(obj) != 1 or _TAG not in obj:
        return obj
    kind, *payload = obj[_TAG]
    if kind == "tuple":
        return tuple(payload[0])
    if kind == "array":
        dtype, shape, raw = payload
        # a writable array over a copy of the bytes (one memcpy: ndarray.copy() copies a
        # structured array, the histograms, record by record, 8x slower)
        return np.frombuffer(bytearray(raw), dtype=_dtype_of(dtype)).reshape(shape)
    if kind == "csr":
        import scipy.sparse

        data, indices, indptr, shape = payload
        return scipy.sparse.csr_matrix((data, indices, indptr), shape=tuple(shape))
    if kind == "booster":
        return importlib.import_module(_BOOSTER_MODULE).Booster.from_dict(payload[0])
    if kind == "dataclass":
        name, fields = payload
        cls = _protocol_type(name)
        if cls is None:
            raise MessageError(f"a dpxgb message may not hold a {name!r}; allowed types: "
                               f"{sorted(TYPES)}")
        if not isinstance(fields, dict) or not set(fields) <= set(_field_names(cls)):
            raise MessageError(f"a {name} message has unknown fields")
        return cls(**fields)
    if kind == "error":
        name, args, address = payload
        cls = ERRORS.get(name)
        if cls is None:
            cls, args = RuntimeError, [f"{name}: {args}"]
        exc = cls.__new__(cls, *args)  # (its __init__ may take other arguments)
        exc.args = tuple(args)
        if address is not None:
            exc.address = address
        return exc
    raise MessageError(f"not a dpxgb message: unknown kind {kind!r}")
