"""Row-range C kernels run over the C thread pool of ``_csrc/pool.c``, with no Python thread
in the hand-off.

:func:`pullback.native.run_rows` hands a kernel's rows to the other CPU threads. Through
Python's thread pool that costs 0.1-0.2 ms per call on the project's 2-vCPU machines; through
the C pool it costs about a microsecond while its workers spin (they do for 0.2 ms after each
job), so far smaller kernels pay for their split.

The pool runs ``task(ctx, lo, hi)`` callbacks. A kernel of the native convention,
``kernel(int64 lo, int64 hi, args...)``, is called from one through a *trampoline*: a few
lines of C, generated for the kernel's argument types (its ctypes ``argtypes``: int64,
pointer, float, double), that pack the arguments in a struct and unpack them in the callback
with the kernel's exact C type. Each signature's trampoline is built once, through
:func:`pullback.native.load` (so it is cached on disk like every kernel), and shared by all
kernels of that signature.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from pathlib import Path
from typing import Any, Callable

_SOURCE = Path(__file__).parent / "_csrc" / "pool.c"
# ctypes argument types of the native convention and their C spellings.
_CODES = {ctypes.c_int64: "i", ctypes.c_void_p: "p", ctypes.c_float: "f", ctypes.c_double: "d"}
_C_TYPES = {"i": "int64_t", "p": "void *", "f": "float", "d": "double"}
_RUNNER = "_pullback_pool_runner"  # the attribute a kernel's runner is kept in

_lock = threading.Lock()
_trampolines: dict[str, Any] = {}


@functools.lru_cache(maxsize=1)
def _parallel_for() -> int | None:
    """The address of ``pb_parallel_for``, or ``None`` where native kernels are unavailable."""
    from . import native

    library = native.load("pool", _SOURCE)
    if library is None:
        return None
    return ctypes.cast(library.pb_parallel_for, ctypes.c_void_p).value


def trampoline_source(signature: str, data_field: int | None = None) -> str:
    """The C of the trampoline for kernels ``kernel(lo, hi, args...)`` whose arguments after the
    row range have the types of ``signature`` (one letter each: i, p, f, d; and ``a``, a pointer
    that ``run`` receives as the NumPy array object itself and reads at ``data_field`` bytes
    into it, where NumPy keeps the data address)."""
    types = [_C_TYPES["p" if c == "a" else c] for c in signature]
    fields = "".join(f"    {t} a{j};\n" for j, t in enumerate(types))
    params = "".join(f", {t} a{j}" for j, t in enumerate(types))
    kernel_params = "".join(f", {t}" for t in types)
    values = "".join(f", *(void **)((char *)a{j} + {data_field})" if c == "a" else f", a{j}"
                     for j, c in enumerate(signature))
    unpacked = "".join(f", job->a{j}" for j in range(len(types)))
    return f"""#include <stdint.h>
typedef void (*task_t)(void *, int64_t, int64_t);
typedef void (*parallel_for_t)(task_t, void *, int64_t, int64_t);
typedef void (*kernel_t)(int64_t, int64_t{kernel_params});
struct job {{
    kernel_t kernel;
{fields}}};
static void task(void *ctx, int64_t lo, int64_t hi) {{
    struct job *job = ctx;
    job->kernel(lo, hi{unpacked});
}}
void run(void *parallel_for, void *kernel, int64_t rows, int64_t threads{params}) {{
    struct job job = {{(kernel_t)kernel{values}}};
    ((parallel_for_t)parallel_for)(task, &job, rows, threads);
}}
"""


def _trampoline(signature: str) -> Any:
    """The loaded ``run`` of ``signature``'s trampoline, or ``None`` if it cannot be built."""
    from . import native

    with _lock:
        if signature in _trampolines:
            return _trampolines[signature]
    data_field = native.data_field() if "a" in signature else None
    library = None
    if data_field is not None or "a" not in signature:
        library = native.load_generated(f"pool_{signature}",
                                        trampoline_source(signature, data_field), "pool")
    run = None
    if library is not None:
        run = library.run
        run.restype = None
        run.argtypes = ([ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
                        + [ctypes.py_object if c == "a" else _type_of(c) for c in signature])
    with _lock:
        _trampolines[signature] = run
    return run


def _type_of(code: str) -> Any:
    return next(t for t, c in _CODES.items() if c == code)


def runner(kernel: Any, arrays: tuple[int, ...] = ()) -> Callable[..., None] | None:
    """``run(rows, threads, *args)``: ``kernel`` over rows ``0..rows`` in ``threads`` shares on
    the C pool (one share: in this thread); ``None`` when ``kernel`` is not a ctypes function of
    the native convention or the pool cannot be built. Kept on the kernel, so the look-up is
    paid once.

    ``arrays``: positions in ``args`` of pointer arguments given as NumPy arrays (``np.ndarray``
    itself, never a subclass or ``None``), whose data addresses C reads: in a
    compiled step, after kernels that pushed Python out of the caches, the first
    ``native.address`` of a call cost about 8 us, most of a small kernel's hand-off."""
    runners = getattr(kernel, _RUNNER, None)
    if runners is None:
        runners = {}
        setattr(kernel, _RUNNER, runners)
    found = runners.get(arrays, False)
    if found is not False:
        return found
    result = None
    argtypes = getattr(kernel, "argtypes", None)
    if isinstance(kernel, ctypes._CFuncPtr) and argtypes and len(argtypes) >= 2:
        codes = [_CODES.get(t) for t in argtypes]
        for position in arrays:
            codes[2 + position] = "a" if codes[2 + position] == "p" else None
        if codes[:2] == ["i", "i"] and None not in codes:
            parallel_for = _parallel_for()
            run = _trampoline("".join(codes[2:])) if parallel_for is not None else None
            if run is not None:
                address = ctypes.cast(kernel, ctypes.c_void_p).value
                result = functools.partial(run, parallel_for, address)
    runners[arrays] = result
    return result
