"""Sphinx configuration of the hiercvx documentation site.

MathJax is served from the site itself (no CDN): ``make docs`` installs npm's ``mathjax@3``
into ``docs/_vendor`` and the ``build-finished`` hook below copies the parts the pages load
into ``_static/mathjax``.  Set ``HIERCVX_MATHJAX_DIR`` to another MathJax 3 ``es5`` folder to
use that one instead.  ``-D plot_gallery=0`` builds the gallery without running the examples.
"""

import os
import pkgutil
import re
import shutil
import sys
from pathlib import Path

import hiercvx

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "hiercvx"
author = "the hiercvx developers"
copyright = "the hiercvx developers"
release = version = hiercvx.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "hiercvx_xref",  # an unresolved Python reference (guide, front page, API) fails the build (-W)
]
if os.environ.get("HIERCVX_DOCS_VIEWCODE", "1") != "0":  # highlighted sources; the tests skip them
    extensions.append("sphinx.ext.viewcode")
# A name documented where it is re-exported links no source: viewcode keeps one anchor per
# module, so following it to the defining module would link that module's source back to the
# wrong page.  The defining module's page has the source link.
viewcode_follow_imported_members = False
# HIERCVX_DOCS_API=0 leaves out the API reference (hundreds of generated pages): the quick
# build of the tests; `make docs` builds everything.
WITH_API = os.environ.get("HIERCVX_DOCS_API", "1") != "0"

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_vendor", "_screenshots", "**/README.md"]
if not WITH_API:
    exclude_patterns += ["api.rst", "generated"]
templates_path = ["_templates"]

# Markdown: $...$ and $$...$$ (with (label) equation numbers) become MathJax math.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_dmath_double_inline = True
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]  # sheets start with one title, then level-2 sections
if not WITH_API:
    suppress_warnings.append("toc.excluded")

# API reference: one page per public object, numpydoc sections.  A module's page lists the
# names of its ``__all__``, also those it imports from elsewhere, and documents each at that
# public path (``hiercvx.estimators.HierarchicalSVC``); a class's page there records the
# defining name as its canonical name, so both names resolve.
autosummary_generate = WITH_API
autosummary_imported_members = False
autosummary_ignore_module_all = False
# The module template tells the submodules among the ``__all__`` names by this list.
autosummary_context = {
    "public_modules": ["hiercvx"] + [
        m.name for m in pkgutil.walk_packages(hiercvx.__path__, "hiercvx.")
        if not any(part.startswith("_") for part in m.name.split("."))],
}
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# docs/_ext/hiercvx_xref.py: a Python reference on a guide page, the front page or an API page
# (a docstring) that does not resolve is a warning (an error under -W); the quick build without
# the API has no targets.
hiercvx_check_guide_references = WITH_API

# Math served locally.
MATHJAX_ES5 = Path(os.environ.get("HIERCVX_MATHJAX_DIR",
                                  DOCS / "_vendor" / "node_modules" / "mathjax" / "es5"))
MATHJAX_PARTS = ("tex-chtml.js", "output/chtml/fonts/woff-v2", "input/tex/extensions", "ui", "a11y")
mathjax_path = "mathjax/tex-chtml.js"
mathjax3_config = {"chtml": {"displayAlign": "center"}}

# The gallery: the scripts of examples/ (not the pytest example test_my_solver.py).
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py",
    "ignore_pattern": r"(test_my_solver|__init__)\.py",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "show_signature": False,
    "abort_on_example_error": True,
}

html_theme = "furo"
html_title = f"hiercvx {release}"
html_static_path = ["_static"]
html_css_files = ["hiercvx.css"]
html_show_sourcelink = False


def _copy_mathjax(app, exception):
    """Copy the MathJax files the pages load into ``<outdir>/_static/mathjax``."""
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    for part in MATHJAX_PARTS:
        src = MATHJAX_ES5 / part
        if src.is_dir():
            shutil.copytree(src, target / part, dirs_exist_ok=True)
        elif src.is_file():
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target / part)


def _require_mathjax(app, config):
    if not (MATHJAX_ES5 / "tex-chtml.js").is_file():
        raise RuntimeError(
            f"MathJax 3 not found at {MATHJAX_ES5}: run `npm install --prefix docs/_vendor "
            "mathjax@3` (what `make docs` does) or set HIERCVX_MATHJAX_DIR to a MathJax 3 es5 folder")


def _skip_foreign(app, what, name, obj, skip, options):
    """Leave out members that scikit-learn generates (``set_fit_request`` and the like)."""
    module = getattr(obj, "__module__", None) or ""
    if module.startswith("sklearn."):
        return True
    return None


_LITERAL = re.compile(r"(``.*?``|`[^`]*`)")
_TRAILING_UNDERSCORE = re.compile(r"(?<![\w\\])([A-Za-z][A-Za-z0-9_]*?)_(?![\w`])")


def _escape_trailing_underscores(app, what, name, obj, options, lines):
    """Docstrings name fitted attributes (``coef_``) in plain text; in reST ``coef_`` is a
    link to a target ``coef``.  Escape the underscore outside literals and literal blocks."""
    literal_indent = None
    for k, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if line.strip() and indent <= literal_indent:
                literal_indent = None
            else:
                continue
        if line.lstrip().startswith((">>>", "...")):
            continue
        parts = _LITERAL.split(line)
        parts[::2] = [_TRAILING_UNDERSCORE.sub(r"\1\\_", p) for p in parts[::2]]
        lines[k] = "".join(parts)
        if line.rstrip().endswith("::"):
            literal_indent = indent


def setup(app):
    app.connect("autodoc-process-docstring", _escape_trailing_underscores, priority=400)
    app.connect("config-inited", _require_mathjax)
    app.connect("autodoc-skip-member", _skip_foreign)
    app.connect("build-finished", _copy_mathjax)
