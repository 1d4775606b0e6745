"""Public names of a package imported on first use (PEP 562), for ``__init__`` modules."""
import importlib


def lazy_exports(package, exports, namespace):
    """``__getattr__`` and ``__dir__`` for a package whose names load on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : dict of str to str
        Public name -> relative module that defines it (e.g. ``".sklearn"``).
    namespace : dict
        The package's ``globals()``: a loaded name is cached there.

    Returns
    -------
    __getattr__, __dir__ : callables
        Any other name is looked up as a submodule, as an eager import would have bound it.
    """
    def __getattr__(name):
        module = exports.get(name)
        if module is None:
            try:
                return importlib.import_module(f".{name}", package)
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
