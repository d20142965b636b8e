"""C identifiers made from arbitrary text (module paths, the export's name), and safe comments.

Module names can be anything a Python string holds: quotes, newlines, ``*/``, unicode, C
keywords, names that only differ in characters C does not allow. An identifier keeps the ASCII
letters, digits and underscores of its text, in order; everything else becomes ``_``. It never
starts with a digit or an underscore (names beginning ``_X`` or ``__`` are reserved to the
implementation), never is a C keyword or a name the C library declares, and two texts that
sanitise alike get ``_2``, ``_3``... so that every identifier of an export is distinct.
"""

from __future__ import annotations

import re

from .._export import distinct

# C99 keywords and the names the headers an export includes declare (a static array called
# ``sin`` would clash with math.h's), plus the library's usual entry points.
_RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while _Bool _Complex _Imaginary bool true false main memcpy memset memmove strlen
printf puts malloc free abort exit errno NULL NAN INFINITY
acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2 expm1 fabs
fdim floor fma fmax fmin fmod frexp hypot ilogb ldexp lgamma llrint llround log log10 log1p log2
logb lrint lround modf nan nearbyint nextafter nexttoward pow remainder remquo rint round scalbln
scalbn sin sinh sqrt tan tanh tgamma trunc isnan isinf isfinite signbit fpclassify
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t size_t
""".split())
# the helper functions and macros every export carries (see writer.py)
_OWN_PREFIXES = ("pb_", "pbc_", "PB_", "PULLBACK_", "ERF32_", "INDEPENDENT_ITERATIONS")


def c_identifier(text: str, fallback: str = "x") -> str:
    """A valid, unreserved C identifier from ``text`` (not yet made unique)."""
    name = re.sub(r"[^0-9A-Za-z_]", "_", text)
    name = name.lstrip("_") or fallback
    if name[0].isdigit():
        name = fallback + "_" + name
    if name in _RESERVED or name.startswith(_OWN_PREFIXES):
        name += "_"
    return name


class Namer:
    """Hands out distinct C identifiers (within one export)."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def reserve(self, name: str) -> None:
        self.used.add(name)

    def fresh(self, text: str, fallback: str = "x") -> str:
        """A new identifier made from ``text``, distinct from every one handed out before."""
        return distinct(c_identifier(text, fallback), self.used)


def c_comment(text: str) -> str:
    """``text`` as the inside of a ``/* ... */`` comment: one line of printable ASCII (other
    characters as ``\\u`` escapes), with no ``*/`` that would end it early and no trigraph."""
    text = text.encode("ascii", "backslashreplace").decode("ascii")
    text = "".join(c if " " <= c <= "~" else " " for c in text)
    return text.replace("*/", "* /").replace("/*", "/ *").replace("??", "? ?")
