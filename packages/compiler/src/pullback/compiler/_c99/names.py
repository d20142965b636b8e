"""C identifiers made from arbitrary text (module paths, the export's name), and safe comments.

Module names can be anything a Python string holds: quotes, newlines, ``*/``, unicode, C
keywords, names that only differ in characters C does not allow. An identifier keeps the ASCII
letters, digits and underscores of its text, in order; everything else becomes ``_``. It never
starts with a digit or an underscore (names beginning ``_X`` or ``__`` are reserved to the
implementation), never is a C keyword, a name or macro the headers of an export or of its
programs declare, a name C99 or POSIX reserve by pattern (``is``/``to``/``str``/``mem`` and a
lower-case letter, ``E`` and a capital, ``*_t``, ``INT*_MAX``...), or one of the names the
standalone programs use (all ``pb_``...): such a name gets a trailing ``_``. Two texts that
sanitise alike get ``_2``, ``_3``... so that every identifier of an export is distinct.
"""

from __future__ import annotations

import re

from .._export import distinct

# C99 keywords, what the headers an export and its programs include declare (math.h, stdint.h,
# string.h, stdio.h, stdlib.h, time.h: functions, types and macros; a static array called
# ``sin`` would clash with math.h's, one called ``EOF`` would be rewritten by stdio.h's macro),
# the standalone program's ``main`` and the Cortex-M startup's external names.
_MATH = """
acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2 expm1 fabs
fdim floor fma fmax fmin fmod frexp hypot ilogb ldexp lgamma llrint llround log log10 log1p log2
logb lrint lround modf nan nearbyint nextafter nexttoward pow remainder remquo rint round scalbln
scalbn sin sinh sqrt tan tanh tgamma trunc""".split()
_RESERVED = frozenset([*_MATH, *(f + "f" for f in _MATH), *(f + "l" for f in _MATH)] + """
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while _Bool _Complex _Imaginary bool true false main
isnan isinf isfinite isnormal signbit fpclassify isgreater isgreaterequal isless islessequal
islessgreater isunordered float_t double_t HUGE_VAL HUGE_VALF HUGE_VALL INFINITY NAN
FP_INFINITE FP_NAN FP_NORMAL FP_SUBNORMAL FP_ZERO FP_FAST_FMA FP_FAST_FMAF FP_FAST_FMAL
FP_ILOGB0 FP_ILOGBNAN MATH_ERRNO MATH_ERREXCEPT math_errhandling
memcpy memset memmove memcmp memchr strlen strcpy strncpy strcat strncat strcmp strncmp strchr
strrchr strstr strtok strerror strcoll strxfrm strspn strcspn strpbrk
printf fprintf sprintf snprintf vprintf vfprintf vsprintf vsnprintf scanf fscanf sscanf puts
fputs putchar fputc putc getchar fgetc getc gets fgets ungetc fopen freopen fclose fflush fread
fwrite fseek ftell rewind fgetpos fsetpos clearerr feof ferror perror remove rename tmpfile
tmpnam setbuf setvbuf FILE fpos_t stdin stdout stderr EOF BUFSIZ FILENAME_MAX FOPEN_MAX
L_tmpnam TMP_MAX SEEK_SET SEEK_CUR SEEK_END _IOFBF _IOLBF _IONBF
malloc calloc realloc free abort exit atexit _Exit getenv system abs labs llabs div ldiv lldiv
atoi atol atoll atof strtol strtoll strtoul strtoull strtod strtof strtold rand srand bsearch
qsort mblen mbtowc wctomb mbstowcs wcstombs div_t ldiv_t lldiv_t EXIT_SUCCESS EXIT_FAILURE
RAND_MAX MB_CUR_MAX NULL size_t wchar_t ptrdiff_t errno EDOM ERANGE EILSEQ
time clock difftime mktime asctime ctime gmtime localtime strftime clock_gettime timespec
time_t clock_t tm CLOCKS_PER_SEC CLOCK_MONOTONIC CLOCK_REALTIME CLOCK_PROCESS_CPUTIME_ID
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t intmax_t
uintmax_t SIZE_MAX PTRDIFF_MIN PTRDIFF_MAX SIG_ATOMIC_MIN SIG_ATOMIC_MAX WCHAR_MIN WCHAR_MAX
WINT_MIN WINT_MAX
Reset_Handler Fault_Handler initialise_monitor_handles
""".split())
# Names C99 (7.26, future library directions) or POSIX reserve by pattern: is*/to*/str*/mem*
# followed by a lower-case letter, E followed by a digit or capital (errno), *_t (POSIX types),
# the stdint.h families (int_least8_t, INT_FAST16_MAX, UINT64_C...) and macro prefixes.
_RESERVED_PATTERN = re.compile(
    r"(?:is|to|str|mem|wcs)[a-z]|E[0-9A-Z]|.*_t$|U?INT\w*_(?:MAX|MIN|C)$|"
    r"(?:LC|SIG|PRI|SCN|FP|FE|FLT|DBL|LDBL|HUGE)_")
# the helper functions and macros every export carries (see writer.py), and the standalone
# program's own names (see program.py)
_OWN_PREFIXES = ("pb_", "pbc_", "PB_", "PULLBACK_", "ERF32_", "INDEPENDENT_ITERATIONS")


def c_identifier(text: str, fallback: str = "x") -> str:
    """A valid, unreserved C identifier from ``text`` (not yet made unique)."""
    name = re.sub(r"[^0-9A-Za-z_]", "_", text)
    name = name.lstrip("_") or fallback
    if name[0].isdigit():
        name = fallback + "_" + name
    if name in _RESERVED or _RESERVED_PATTERN.match(name) or name.startswith(_OWN_PREFIXES):
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
