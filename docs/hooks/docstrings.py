"""Griffe extension of the docs build: pullback's docstring conventions, rendered.

An ``Example:`` heading (pullback's habit) is Google style's ``Examples:``, so that its doctest
lines render as code, not as Markdown. And pullback's docstrings name other objects the Sphinx way (``:func:`pullback.tensor```,
``:class:`~pullback.nn.Module```), which Markdown would show as raw markup. Each role becomes an
optional mkdocs-autorefs reference: a link to the API page where the object is documented, and
plain code where it is not (an optional reference never fails the ``--strict`` build). A name
without a dot-path is looked up next to the documented object (its module, then its package).
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|type):`(~?)([^`]+)`")
EXAMPLE_HEADING = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)


class DocstringConventions(griffe.Extension):
    """Rewrite every docstring's ``Example:`` headings and Sphinx roles (see the module)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            text = EXAMPLE_HEADING.sub(r"\1Examples:", obj.docstring.value)
            obj.docstring.value = ROLE.sub(lambda m: _reference(m, obj), text)


def _reference(match: re.Match[str], obj: griffe.Object) -> str:
    short, target = match[1] == "~", match[2].strip().removesuffix("()")
    if target.startswith("pullback.") or target == "pullback":
        identifier = target
    else:  # relative to the documented object's module, as Sphinx resolves it
        identifier = f"{obj.module.path}.{target}"
    shown = target.rsplit(".", 1)[-1] if short else target
    return (f'<autoref identifier="{html.escape(identifier)}" optional>'
            f"<code>{html.escape(shown)}</code></autoref>")
