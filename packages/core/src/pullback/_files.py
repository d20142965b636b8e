"""Reading and writing files in folders that someone else may have prepared.

Every file pullback writes goes through :func:`write_atomic` (or :func:`open_append` for a log
it has just written that way), every folder it makes inside the folder a user named through
:func:`make_folder`, so that nothing is ever written through a link planted in such a folder:

* a new file is created under a fresh temporary name with ``O_CREAT | O_EXCL`` (which never
  follows a link) and renamed over its target, after checking that the target is absent or a
  regular file: a symbolic link, a FIFO or a folder in its place is refused with
  :class:`~pullback.errors.UnsafePathError` naming it;
* a folder that exists already must be a real folder, not a link to one;
* a log is appended to with ``O_NOFOLLOW``.

Loaders read through :func:`open_regular`: regular files only (a FIFO, a device such as
``/dev/zero`` or a folder is refused before a byte is read, and opening never blocks), and,
where the file lies inside a folder the user named, never through a link
(``follow_links=False``).

A temporary file's name holds its writer's host and process id
(``.tmp-<name>.<host>.<pid>.<random>``): the next write to that target removes those a killed
process left behind.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import stat
import tempfile
from pathlib import Path
from typing import IO, Any

from .errors import PullbackError, UnsafePathError

PathLike = str | os.PathLike[str]


def kind_of(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words ("a symbolic link", "a FIFO"...)."""
    for test, words in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"),
                        (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


# -- reading ---------------------------------------------------------------------------------

def open_regular(path: PathLike, error: type[PullbackError], what: str,
                 follow_links: bool = True) -> IO[bytes]:
    """``path`` open for reading in binary mode, refused with ``error(f"{what}: ...")`` unless
    it is a regular file (with ``follow_links=False``, unless it is one itself, not a link to
    one). Opening never blocks (a FIFO is refused, not waited on). A missing file raises
    FileNotFoundError, as ``open`` does."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_links and os.path.islink(path):
            raise error(f"{what}: {os.fspath(path)} is a symbolic link; pullback reads the files "
                        "of a folder it was given only, never through a link") from None
        raise exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise error(f"{what}: {os.fspath(path)} is {kind_of(mode)}, not a regular file")
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return os.fdopen(fd, "rb")


def read_regular(path: PathLike, error: type[PullbackError], what: str, limit: int,
                 follow_links: bool = True) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular`), refused before
    reading when it holds more than ``limit`` bytes."""
    with open_regular(path, error, what, follow_links) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise error(f"{what}: {os.fspath(path)} holds {size} bytes, more than the {limit} "
                        "such a file can hold")
        return f.read(size)


# -- writing ---------------------------------------------------------------------------------

def make_folder(path: PathLike, parents: bool = False) -> Path:
    """Make the folder ``path`` (and, with ``parents``, the folders above it); one that exists
    already must be a real folder, not a link to one or anything else."""
    folder = Path(path)
    try:
        folder.mkdir(parents=parents)
    except FileExistsError:
        mode = os.lstat(folder).st_mode
        if not stat.S_ISDIR(mode):
            raise UnsafePathError(f"refusing to use {folder} as a folder: it is {kind_of(mode)}"
                                  + _LINK_REASON) from None
    return folder


_LINK_REASON = (" (pullback writes only inside the folder it was given, never through a link "
                "it did not create)")


def check_replaceable(path: PathLike) -> None:
    """Raise :class:`UnsafePathError` when ``path`` exists and is not a regular file (a
    symbolic link, a FIFO, a folder): what pullback is about to replace must be a file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise UnsafePathError(f"refusing to replace {os.fspath(path)}: it is {kind_of(mode)}"
                              + _LINK_REASON)


def remove_entry(path: PathLike) -> None:
    """Remove ``path``: a file or a link (never what it points to), or a folder and what it
    holds (links inside it are removed, not followed). A missing entry is no error."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def write_atomic(path: PathLike, data: bytes | str, sync: bool = True) -> None:
    """Write ``data`` to ``path`` atomically: into a new temporary file in the same folder
    (created with ``O_EXCL``, so never through a link), then renamed over ``path`` once
    :func:`check_replaceable` allows it. A crash leaves the old file or the new one, never a
    mix; ``sync`` flushes the data to disk before the rename. The file gets the mode a plain
    ``open()`` would give it."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    target = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(target))
    check_replaceable(target)
    remove_abandoned_partials(folder, name)
    fd, tmp = tempfile.mkstemp(prefix=partial_prefix(name) + f"{os.getpid()}.", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        # mkstemp makes the file private (0600); give it the mode a plain open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        check_replaceable(target)
        os.replace(tmp, target)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def open_append(path: PathLike) -> IO[str]:
    """``path``, a regular file, open for appending text (``newline=""``, as :mod:`csv` wants),
    never through a link."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UnsafePathError(f"refusing to append to {os.fspath(path)}: it is {kind_of(mode)}")
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return os.fdopen(fd, "a", newline="", encoding="utf-8")


def move_into_place(built: PathLike, target: PathLike) -> None:
    """Rename the file ``built`` (made by a tool in a private temporary folder) to ``target``,
    once :func:`check_replaceable` allows it."""
    check_replaceable(target)
    os.replace(built, target)


# -- what killed writers leave behind --------------------------------------------------------

def partial_prefix(target: str) -> str:
    """The start of the temporary files' names of writes to ``target`` from this host."""
    return f".tmp-{target}.{socket.gethostname()}."


def remove_abandoned_partials(folder: str, target: str) -> None:
    """Delete temporary files of writes to ``target`` whose writer, a process on this host, is
    gone (killed mid-write: nothing else would ever remove them). Files of live writers, and of
    other hosts sharing the folder, stay."""
    prefix = partial_prefix(target)
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):].split(".", 1)[0]
        if not pid.isdigit() or _process_alive(int(pid)):
            continue
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass  # another write removed it first, or the folder is read-only: not our error


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process (PermissionError), or cannot tell: keep the file
        return True
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def describe_owner(st: Any) -> str:
    """``uid N`` of a stat result, with the user's name where the system knows it."""
    try:
        import pwd

        return f"{pwd.getpwuid(st.st_uid).pw_name} (uid {st.st_uid})"
    except (ImportError, KeyError):
        return f"uid {st.st_uid}"
