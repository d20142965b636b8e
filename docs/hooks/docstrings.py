"""Griffe extension of the docs build: pullback's docstring conventions, rendered.

An ``Example:`` heading (pullback's habit) is Google style's ``Examples:``, so that its doctest
lines render as code, not as Markdown, and a reST literal block (a paragraph ending in ``::``)
is a fenced code block. And pullback's docstrings name other objects the Sphinx way
(``:func:`pullback.tensor```, ``:class:`~pullback.nn.Module```), which Markdown would show as
raw markup. Each role becomes an optional mkdocs-autorefs reference: a link to the API page
where the object is documented, and plain code where it is not (an optional reference never
fails the ``--strict`` build). A name without a dot-path is looked up in the documented
object's module.
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
            text = _fence_literal_blocks(text)
            obj.docstring.value = ROLE.sub(lambda m: _reference(m, obj), text)


def _fence_literal_blocks(text: str) -> str:
    """``text`` with each reST literal block (a line ending in ``::``, a blank line, then the
    block up to the next blank line followed by a less indented line) as a fenced code block.
    Griffe's dedent may have left such a block unindented when it ends the docstring."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::") and not line.strip().startswith((">>>", "...")) and \
                i + 2 < len(lines) and not lines[i + 1].strip() and lines[i + 2].strip():
            margin = len(line) - len(line.lstrip())
            block_indent = len(lines[i + 2]) - len(lines[i + 2].lstrip())
            j = i + 2
            while j < len(lines) and (not lines[j].strip() or
                                      len(lines[j]) - len(lines[j].lstrip()) >= block_indent):
                if not lines[j].strip() and block_indent <= margin:
                    break  # an unindented block ends at its first blank line
                j += 1
            while j > i + 2 and not lines[j - 1].strip():
                j -= 1
            # A top-level fence starts at the margin (Markdown takes four spaces for indented
            # code); inside a section item it keeps the block's own indentation.
            pad = " " * (margin if margin == 0 else max(margin, block_indent))
            out += [line.rstrip()[:-1], "", pad + "```"]
            out += [pad + block_line[block_indent:] for block_line in lines[i + 2:j]]
            out += [pad + "```"]
            i = j
        else:
            out.append(line)
            i += 1
    return "\n".join(out)


def _reference(match: re.Match[str], obj: griffe.Object) -> str:
    short, target = match[1] == "~", match[2].strip().removesuffix("()")
    if target.startswith("pullback.") or target == "pullback":
        identifier = target
    else:  # relative to the documented object's module, as Sphinx resolves it
        identifier = f"{obj.module.path}.{target}"
    shown = target.rsplit(".", 1)[-1] if short else target
    return (f'<autoref identifier="{html.escape(identifier)}" optional>'
            f"<code>{html.escape(shown)}</code></autoref>")
