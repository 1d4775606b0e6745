"""Sphinx configuration of dpxgb_dask's documentation (``sphinx-build -W docs docs/_build``).

The pages are MyST Markdown; the API reference is generated from the installed package's
numpydoc docstrings. Nothing is fetched from the network: cross-references resolve within
these pages, and a broken one, like a public object without a docstring, is an error under
``-W`` (``tests/integration/test_docs.py`` builds the docs in the default test run).
"""
from jinja2.sandbox import SandboxedEnvironment
from numpydoc import docscrape_sphinx

import dpxgb_dask

project = "dpxgb_dask"
author = "the dpxgb_dask developers"
copyright = "2026, the dpxgb_dask developers"
release = version = dpxgb_dask.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}  # .rst: autosummary's stubs
exclude_patterns = ["_build"]
root_doc = "index"

myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]

autosummary_generate = True
autosummary_imported_members = False
# every public name of every module, whether or not the module's __all__ lists it
autosummary_ignore_module_all = True
autodoc_default_options = {"members": True, "inherited-members": True,
                           "show-inheritance": False, "ignore-module-all": True}
autodoc_typehints = "none"

numpydoc_show_class_members = False
numpydoc_xref_param_type = False
# GL08: a public object without a docstring is an error of the build.
numpydoc_validation_checks = {"GL08"}

nitpicky = True
# Names of other libraries (no intersphinx: the build reads nothing from the network).
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|pandas|pd|dask|distributed|sklearn|dp_accounting|tornado|os|"
               r"warnings|abc|concurrent|sqlalchemy|fastapi|pydantic|starlette|httpx)\..*"),
    # private base classes, named by "Bases:" lines
    (r"py:class", r"dpxgb_dask(\.\w+)*\._\w+"),
]

html_theme = "pydata_sphinx_theme"
html_title = "dpxgb_dask"
html_theme_options = {"navigation_with_keys": False, "header_links_before_dropdown": 6}
html_sidebars = {"**": []}  # the pages are few: the header links them, the content is wider


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document the package's own objects only: a name a module imports from another
    library (``ThreadPoolExecutor``, ``default_client``), or a method another library adds
    to a class (scikit-learn's ``set_fit_request``), is not part of its API."""
    module = getattr(obj, "__module__", None)
    if isinstance(module, str) and not module.startswith("dpxgb_dask"):
        return True
    return None


class _TemplatesCompiledOnce(SandboxedEnvironment):
    """numpydoc's template environment, whose templates are compiled once per build.

    numpydoc makes a new Jinja environment, with a new loader, for every docstring
    (``numpydoc.docscrape_sphinx.get_doc_object``), so Jinja's cache, keyed by the loader,
    never hits: compiling the same template again for each of the API's 4,000 docstrings
    was a quarter of the build's time. Every such environment of one build is made alike
    (the builder's templates, then numpydoc's), so one compiled template serves them all.
    """

    _compiled = {}

    def get_template(self, name, parent=None, globals=None):
        if parent is not None or globals is not None:
            return super().get_template(name, parent, globals)
        if name not in self._compiled:
            self._compiled[name] = super().get_template(name)
        return self._compiled[name]


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
    docscrape_sphinx.SandboxedEnvironment = _TemplatesCompiledOnce
