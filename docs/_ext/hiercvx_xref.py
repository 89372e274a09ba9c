"""Cross-reference checks of the hiercvx documentation site.

- A ``py:`` reference that does not resolve on a hand-written page (the user guide under
  ``guide/`` and the front page ``index``) or in the API reference (``api`` and the pages
  autosummary generates under ``generated/``, that is, the docstrings) is reported as a
  Sphinx warning; ``make docs`` builds with ``-W``, so such a reference fails the build.  A
  docstring names an object without an API page (a private helper) as a ``literal``, not as
  a reference.  The check is on when ``hiercvx_check_guide_references`` is true (``conf.py``:
  whenever the API reference is built, since the references point into it).
- A class exported under several public names is documented at each of them, and autodoc
  records each of those pages as an alias of the defining name (``:canonical:``).  Two alias
  records of one name are the same object, not a duplicate description: the first is kept
  without a warning.
- autosummary's one-line summary ends at the first period followed by a space, also inside an
  inline literal (``W_n . x``, a dot product), and docutils then reports the literal as
  unclosed.  Such a period inside ``...`` gets a word joiner (U+2060, invisible) after it.
- The docstrings write set sizes as ``|anc(y) xor anc(y')|``; outside a literal reST reads
  ``|...|`` as a substitution, which the site does not define.  Those bars are escaped
  (not on grid-table rows, which start with a bar).
"""

from __future__ import annotations

import re

from sphinx.domains.python import PythonDomain, builtin_resolver
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: Documents whose ``py:`` references must resolve: names equal to or under these.
CHECKED_DOCUMENTS = ("index", "guide/", "api", "generated/")


def _checked(docname: str) -> bool:
    return any(docname == prefix or (prefix.endswith("/") and docname.startswith(prefix))
               for prefix in CHECKED_DOCUMENTS)


def _report_missing(app, env, node, contnode):
    """Warn about an unresolved ``py:`` reference on a checked page (resolves nothing)."""
    if node.get("refdomain") != "py" or not app.config.hiercvx_check_guide_references:
        return None
    docname = node.get("refdoc") or env.docname
    if not _checked(docname):
        return None
    # Sphinx calls every missing-reference listener, also after one has resolved the
    # reference: a built-in (``ValueError``, ``None``) is left to Sphinx's own resolver.
    if builtin_resolver(app, env, node, contnode) is not None:
        return None
    logger.warning("unresolved Python reference %s:`%s` on %s",
                   node.get("reftype"), node.get("reftarget"), docname,
                   location=node, type="hiercvx", subtype="unresolved-reference")
    return None


_LITERAL = re.compile(r"``.+?``")


def _join_literal_periods(app, what, name, obj, options, lines):
    """Keep a period inside an inline literal from ending autosummary's summary sentence."""
    for k, line in enumerate(lines):
        if "``" in line and ". " in line:
            lines[k] = _LITERAL.sub(lambda m: m.group(0).replace(". ", ".\u2060 "), line)


_BARS = re.compile(r"(?<![\\|`])\|([^|\s`][^|`]*?[^|\s`\\]|[^|\s`\\])\|(?![|`])")
_SPLIT_LITERALS = re.compile(r"(``.*?``|`[^`]*`)")


def _escape_bars(app, what, name, obj, options, lines):
    """``|x|`` outside literals is an absolute value or a set size, not a substitution."""
    for k, line in enumerate(lines):
        if "|" not in line or line.lstrip().startswith(("|", "+", ">>>", "...")):
            continue
        parts = _SPLIT_LITERALS.split(line)
        parts[::2] = [_BARS.sub(r"\\|\1\\|", part) for part in parts[::2]]
        lines[k] = "".join(parts)


_note_object = PythonDomain.note_object


def _note_object_alias_once(self, name, objtype, node_id, aliased=False, location=None):
    if aliased and name in self.objects and self.objects[name].aliased:
        return None
    return _note_object(self, name, objtype, node_id, aliased=aliased, location=location)


def setup(app):
    app.add_config_value("hiercvx_check_guide_references", True, "env", bool)
    PythonDomain.note_object = _note_object_alias_once
    app.connect("autodoc-process-docstring", _join_literal_periods)
    app.connect("autodoc-process-docstring", _escape_bars)
    # after Sphinx's resolver of built-ins (priority 900), whose answer the check repeats
    app.connect("missing-reference", _report_missing, priority=999)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
