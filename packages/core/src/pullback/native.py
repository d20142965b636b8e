"""Native C kernels for the CPU backend, compiled on first use with the system C compiler.

Why: a fused operation written as NumPy passes (GELU and its derivative, a layer norm, a row
softmax) reads and writes its arrays once per pass, and each pass runs on one core. A C loop does
the whole computation in one pass per row block; the row blocks are shared by the CPU threads
(ctypes releases the GIL during the call). PyTorch ships such loops prebuilt; pullback compiles
them the first time they are needed, with ``$CC`` (default ``cc``) and
``-O3 -march=native`` (no fast-math), and keeps the shared library in ``$PULLBACK_CACHE_DIR`` (default
``~/.cache/pullback/native``), named by a hash of the source, the flags, the compiler's version
and the CPU, so that a changed kernel or another machine gets its own build.

A shared library is code this process runs, so the cache must be out of other users' reach (as
ssh demands of its keys' folders): each folder of the cache must be owned by this user (or
root) and writable by nobody else, every folder above it owned by this user or root and not
writable by others unless sticky (as ``/tmp``), and each library a regular file owned by this
user or root and writable by nobody else. A cache that fails this (a ``PULLBACK_CACHE_DIR`` on a
shared scratch folder where another user made ``native/`` first) is not used: the process
builds its libraries in a private temporary folder of its own instead, warns once with the
reason, and :func:`status` says so. See docs/security.md.

Native kernels are an accelerator, never a requirement: without a compiler, when a build fails,
or with ``PULLBACK_NATIVE=0`` in the environment, every op runs its NumPy kernel, whose results
agree with the native one to float32 rounding. :func:`status` says which libraries were built
and, for the others, why not.

``PULLBACK_NATIVE_SANITIZE=address,undefined`` builds with those sanitizers (``-fsanitize=``,
every report fatal) into libraries of their own; the process must then load the sanitizer's
runtime first (``LD_PRELOAD=$(cc -print-file-name=libasan.so)``), as the sanitizer tests do.

Conventions for kernel sources: every exported function takes a row range ``(int64 lo,
int64 hi)`` first, then its pointers and sizes, and handles rows ``lo`` to ``hi`` only, so that
:func:`run_rows` can hand each thread its own share. Callers pass pointers as addresses
(:func:`address`), or, through :func:`run_rows_of_arrays`, as the NumPy arrays themselves.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import platform
import shutil
import stat
import subprocess
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import _native_pool
from ._cpu_parallel import MIN_PARALLEL_ELEMENTS, run_split, get_num_threads

# No -ffast-math: NaN and infinities keep their meaning. Without trapping math and errno, gcc
# if-converts the clamps of pullback_math.h and vectorizes the kernels' loops.
FLAGS = ("-O3", "-march=native", "-std=c99", "-fno-trapping-math", "-fno-math-errno", "-fPIC",
         "-shared", "-pthread")
# On x86-64, gcc's -march=native vectorizes with 256-bit registers even where the CPU has
# AVX-512 (against the frequency drop of older Xeons, which MKL's AVX-512 products cause in a
# training step anyway). With 512-bit ones the compiled GPT's GELU-and-slope loop took 0.84-0.90
# ms per 2^20 float32 elements on one thread of an Ice Lake Xeon, against 1.18-1.20 (a C
# benchmark, three runs each). Elementwise loops compute each lane alone, so the width changes
# no result; where the CPU has no AVX-512 the option changes nothing. Not on other machines:
# their compilers do not know it.
if platform.machine().lower() in ("x86_64", "amd64"):
    FLAGS += ("-mprefer-vector-width=512",)
# Headers every kernel source may include (pullback_math.h: vectorizable exp and erf).
INCLUDE_DIR = Path(__file__).parent / "_csrc"
# Below this many elements a C call's setup (pointer look-ups, argument conversion: ~2 us) is
# about what NumPy spends, so small arrays keep their NumPy kernel.
MIN_NATIVE_ELEMENTS = 1024
# Below this much work (elements, or multiply-adds of a product) a kernel stays on one thread
# even on the C pool, whose hand-off costs about a microsecond.
MIN_POOL_ELEMENTS = 1 << 15

_lock = threading.Lock()
_libraries: dict[str, ctypes.CDLL | None] = {}
_status: dict[str, str] = {}
_private: list[Path] = []  # this process's own cache, made when the shared one is unsafe


def enabled() -> bool:
    """Whether native kernels may be used (``PULLBACK_NATIVE=0`` turns them off)."""
    return os.environ.get("PULLBACK_NATIVE", "1") != "0"


def cache_dir() -> Path:
    """Where compiled libraries are kept."""
    explicit = os.environ.get("PULLBACK_CACHE_DIR")
    if explicit:
        return Path(explicit) / "native"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pullback" / "native"


def status() -> dict[str, str]:
    """Each library asked for so far: ``"built <path>"``, or why it is not used."""
    with _lock:
        return dict(_status)


def load(name: str, source: str | os.PathLike[str],
         include_dirs: tuple[str | os.PathLike[str], ...] = ()) -> ctypes.CDLL | None:
    """The shared library built from the C file ``source``, or ``None`` where native kernels are
    off or cannot be built (the reason is in :func:`status`; a failed build also warns once).
    ``include_dirs`` are searched for headers too (their paths are part of the build's cache
    key).

    The first call in a process compiles unless a cached build exists; later calls return the
    loaded library.
    """
    with _lock:
        if name in _libraries:
            return _libraries[name]
        library, why = _build_and_load(name, Path(source), tuple(str(d) for d in include_dirs))
        _libraries[name] = library
        _status[name] = why
    return library


def load_generated(name: str, text: str, folder: str,
                   include_dirs: tuple[str | os.PathLike[str], ...] = ()) -> ctypes.CDLL | None:
    """:func:`load` of C source generated at run time: ``text`` is written to
    ``<cache>/<folder>/<name>.c`` (atomically: processes starting together may write the same
    file) unless that file already holds it, then built and loaded as ``name``. ``None`` also
    when the cache folder cannot be written."""
    if not enabled():
        return None
    with _lock:
        if name in _libraries:  # loaded before: the file on disk need not be read again
            return _libraries[name]
    try:
        sources, _ = _safe_folder(cache_dir().parent / folder)
    except OSError:
        return None
    source = sources / f"{name}.c"
    partial = None
    try:
        if not source.exists() or source.read_text() != text:
            fd, partial = tempfile.mkstemp(suffix=".c", dir=source.parent)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(partial, source)
    except OSError:
        if partial is not None:  # a half-written copy is not left in the cache
            Path(partial).unlink(missing_ok=True)
        return None
    return load(name, source, include_dirs)


def flags() -> tuple[str, ...]:
    """The compiler flags of this process's builds: :data:`FLAGS`, plus the sanitizers named in
    ``PULLBACK_NATIVE_SANITIZE`` (e.g. ``address,undefined``) with every report fatal."""
    sanitizers = os.environ.get("PULLBACK_NATIVE_SANITIZE", "").strip()
    if not sanitizers:
        return FLAGS
    return FLAGS + (f"-fsanitize={sanitizers}", "-fno-sanitize-recover=all",
                    "-fno-omit-frame-pointer", "-g")


def _build_and_load(name: str, source: Path, include_dirs: tuple[str, ...]
                    ) -> tuple[ctypes.CDLL | None, str]:
    if not enabled():
        return None, "off (PULLBACK_NATIVE=0)"
    compiler = os.environ.get("CC", "cc")
    version = _compiler_version(compiler)
    if version is None:
        return None, f"no C compiler ({compiler!r} not found): NumPy kernels are used"
    code = source.read_bytes() + b"".join(h.read_bytes() for h in sorted(INCLUDE_DIR.glob("*.h")))
    build_flags = flags() + tuple(f"-I{d}" for d in include_dirs)
    key = hashlib.sha256(b"\0".join([code, " ".join(build_flags).encode(), version.encode(),
                                     _cpu_identity().encode()])).hexdigest()[:16]
    try:
        folder, private = _safe_folder(cache_dir())
    except OSError as exc:
        error = f"cannot use the cache folder {cache_dir()}: {exc}"
        warnings.warn(f"pullback: native kernels '{name}' did not build, NumPy kernels are "
                      f"used instead: {error}", RuntimeWarning, stacklevel=4)
        return None, f"build failed: {error}"
    target = folder / f"{name}-{key}.so"
    unsafe = _unsafe_library(target)
    if unsafe is not None:  # a file another user could have written: never loaded
        folder, private = _private_folder(unsafe)
        target = folder / target.name
    if not target.exists():
        error = _compile(compiler, source, target, build_flags)
        if error is not None:
            warnings.warn(f"pullback: native kernels '{name}' did not build, NumPy kernels are "
                          f"used instead: {error}", RuntimeWarning, stacklevel=4)
            return None, f"build failed: {error}"
    where = f" (privately: {private})" if private else ""
    try:
        return ctypes.CDLL(str(target)), f"built {target}{where}"
    except OSError as exc:
        return None, f"cannot load {target}: {exc}"


def _safe_folder(folder: Path) -> tuple[Path, str | None]:
    """``folder`` (made if missing) when libraries may be built and loaded there, with None;
    else this process's private folder (the same subfolder of it), with the reason. OSError
    when ``folder`` cannot be made."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    why = _unsafe_folder(folder)
    if why is None:
        return folder, None
    private, why = _private_folder(why)
    sub = private / folder.name
    sub.mkdir(exist_ok=True, mode=0o700)
    return sub, why


def _unsafe_folder(folder: Path) -> str | None:
    """Why another user could change what ``folder`` holds, or None (see the module's
    docstring: ``folder`` owned by this user or root and writable by nobody else; each folder
    above it owned by this user or root and not writable by others unless sticky)."""
    me = os.geteuid()
    real = Path(os.path.realpath(folder))
    info = os.lstat(real)
    if info.st_uid not in (me, 0) or info.st_mode & 0o022:
        return (f"{real} is owned by {_owner(info)} with mode {stat.filemode(info.st_mode)}; "
                "libraries are loaded only from a folder of this user that nobody else can "
                "write to")
    for above in real.parents:
        info = os.lstat(above)
        writable = info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX
        if info.st_uid not in (me, 0) or writable:
            return (f"{above}, above {real}, is owned by {_owner(info)} with mode "
                    f"{stat.filemode(info.st_mode)}: another user could replace the cache")
    return None


def _unsafe_library(path: Path) -> str | None:
    """Why the library ``path`` must not be loaded (not a regular file, or one another user
    owns or may write), or None (also when there is none yet)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_uid not in (os.geteuid(), 0) \
            or info.st_mode & 0o022:
        return (f"{path} is {stat.filemode(info.st_mode)}, owned by {_owner(info)}: not a "
                "library this user built")
    return None


def _owner(info: os.stat_result) -> str:
    from ._files import describe_owner

    return describe_owner(info)


def _private_folder(why: str) -> tuple[Path, str]:
    """This process's private cache (0700, removed at exit), made on first use with a warning
    that says ``why`` the shared cache is not used; returns it and the reason."""
    if not _private:
        folder = Path(tempfile.mkdtemp(prefix="pullback-native-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _private.append(folder)
        warnings.warn(f"pullback: the native-kernel cache is not safe to load libraries from "
                      f"({why}); this process builds its own in {folder}. Use a cache folder "
                      "of your own (PULLBACK_CACHE_DIR) that only you can write to.",
                      RuntimeWarning, stacklevel=5)
    return _private[0], why


def _compiler_version(compiler: str) -> str | None:
    try:
        done = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _cpu_identity() -> str:
    """What ``-march=native`` depends on: the CPU model and its feature flags."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.machine() + platform.processor()
    wanted = [line for line in lines if line.startswith(("model name", "flags", "Features"))]
    return platform.machine() + "\n".join(sorted(set(wanted)))


def _compile(compiler: str, source: Path, target: Path, build_flags: tuple[str, ...]
             ) -> str | None:
    """Compile ``source`` to ``target`` (atomically: concurrent processes may race); the
    compiler's complaint, or why the cache folder is unusable, on failure."""
    partial = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(suffix=".so", dir=target.parent)
        os.close(fd)
        command = [compiler, *build_flags, f"-I{INCLUDE_DIR}", "-o", partial, str(source), "-lm"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            return (done.stderr.strip() or done.stdout.strip())[-2000:]
        os.replace(partial, target)
        return None
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    finally:
        if partial is not None and os.path.exists(partial):
            os.unlink(partial)


def declare(library: ctypes.CDLL, function: str, n_pointers: int, n_sizes: int = 0,
            n_floats: int = 0) -> Callable[..., None]:
    """``library.function`` typed as ``(int64 lo, int64 hi, pointers..., int64 sizes...,
    float floats...)`` (the convention of kernel sources, see the module's docstring)."""
    fn = getattr(library, function)
    fn.argtypes = ([ctypes.c_int64] * 2 + [ctypes.c_void_p] * n_pointers
                   + [ctypes.c_int64] * n_sizes + [ctypes.c_float] * n_floats)
    fn.restype = None
    return fn


def _data_field_offset() -> int | None:
    """Where a NumPy array object holds its data address (``PyArrayObject_fields.data``, the
    first field after the object header), as a byte offset from ``id(array)``; found by probing
    and checked against ``ndarray.ctypes.data`` on arrays, views and offset views, else
    ``None`` (an interpreter whose ``id`` is not an address, or another layout)."""
    probes = [np.empty(n, np.uint8) for n in (1, 100, 4096)]
    probes += [probes[2][7:], np.empty((3, 5))[:, 1:].T]
    for offset in range(8, 129, 8):
        try:
            if all(ctypes.c_void_p.from_address(id(p) + offset).value == p.ctypes.data
                   for p in probes):
                return offset
        except (ValueError, OSError):  # pragma: no cover - an id that is no address
            return None
    return None  # pragma: no cover - a layout this probe does not know


_DATA_FIELD = _data_field_offset()
_read_address = ctypes.c_void_p.from_address


def address(a: np.ndarray) -> int:
    """The address of ``a``'s first element (``a.ctypes.data``), for a native kernel.

    Read straight from the array object where :func:`_data_field_offset` found where NumPy
    keeps it: 0.2 us against about 1.3-2 us for ``a.ctypes.data``, which builds a ctypes helper
    object on every call. (After kernels that pushed the interpreter out of the caches, as in a
    compiled step, a call's first address costs about 8 us: the hot kernel calls pass their
    arrays themselves, :func:`run_rows_of_arrays`.)"""
    if _DATA_FIELD is None or a.__class__ is not np.ndarray:
        return a.ctypes.data
    return _read_address(id(a) + _DATA_FIELD).value or 0


def data_field() -> int | None:
    """The byte offset of the data address in a NumPy array object (see :func:`address`), or
    ``None`` where it was not found."""
    return _DATA_FIELD


def pointer(a: np.ndarray | None) -> int | None:
    """The data address of a C-contiguous array (``None`` stays ``None``: a NULL argument)."""
    return None if a is None else address(a)


def run_rows(function: Callable[..., None], rows: int, row_size: int, *args: Any) -> None:
    """``function(lo, hi, *args)`` over rows ``0..rows``: one share per CPU thread when there is
    enough work (``rows * row_size`` elements) to pay for the hand-off, else in this thread.

    A C kernel of the convention above (a ctypes function with ``argtypes``) is split on the C
    thread pool (:mod:`pullback._native_pool`), from ``MIN_POOL_ELEMENTS`` elements; any other
    callable through Python's, from ``MIN_PARALLEL_ELEMENTS``."""
    threads = get_num_threads()
    if rows < 2 or threads == 1:
        function(0, rows, *args)
        return
    run = _native_pool.runner(function)
    if run is not None:
        shares = _pool_shares(rows, row_size)
        if shares == 1:
            function(0, rows, *args)
        else:
            run(rows, shares, *args)
        return
    if rows * row_size < MIN_PARALLEL_ELEMENTS:
        function(0, rows, *args)
        return
    run_split(lambda lo, hi: function(lo, hi, *args), rows)


def run_rows_of_arrays(function: Callable[..., None], arrays: tuple[int, ...], rows: int,
                       row_size: int, *args: Any) -> None:
    """:func:`run_rows` of a C kernel whose pointer arguments at positions ``arrays`` (in
    ``args``) are given as the NumPy arrays they point into (``np.ndarray`` itself, never a
    subclass or ``None``: C reads the address of their first element, as :func:`address` does,
    see :func:`pullback._native_pool.runner`); through :func:`address` where the pool cannot
    run it."""
    run = _native_pool.runner(function, arrays)
    if run is None:
        args = tuple(address(a) if i in arrays else a for i, a in enumerate(args))
        run_rows(function, rows, row_size, *args)
        return
    run(rows, _pool_shares(rows, row_size), *args)


def _pool_shares(rows: int, row_size: int) -> int:
    """How many shares the C pool splits ``rows`` rows of ``row_size`` elements into: the
    threads, or one (run in the calling thread) for one row or less than ``MIN_POOL_ELEMENTS``
    of work, which does not pay for the hand-off."""
    if rows < 2 or rows * row_size < MIN_POOL_ELEMENTS:
        return 1
    return get_num_threads()


def float32_inputs(*arrays: Any) -> tuple[Any, ...] | None:
    """The arrays as C-contiguous float32 NumPy arrays for a native kernel (strided or broadcast
    ones copied: one pass, against the several of a NumPy fallback; ``None`` entries, absent
    optional operands, kept), or ``None`` when one is not a float32 NumPy array or all are
    small."""
    big = False
    for a in arrays:
        if a is None:
            continue
        if a.__class__ is not np.ndarray or a.dtype != np.float32:
            return None
        if a.size >= MIN_NATIVE_ELEMENTS:
            big = True
    if not big:
        return None
    return tuple(a if a is None or a.flags.c_contiguous else np.ascontiguousarray(a)
                 for a in arrays)


def native_first(native_kernel: Callable[..., Any],
                 fallback: Callable[..., Any]) -> Callable[..., Any]:
    """A kernel that runs ``native_kernel`` and, where it returns ``NotImplemented`` (inputs it
    does not cover, no compiler), ``fallback``."""

    def kernel(*arrays: Any, **attrs: Any) -> Any:
        out = native_kernel(*arrays, **attrs)
        return fallback(*arrays, **attrs) if out is NotImplemented else out

    kernel.__wrapped__ = fallback  # type: ignore[attr-defined]
    return kernel
