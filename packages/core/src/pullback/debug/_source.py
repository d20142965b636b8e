"""Where in user code an op was created: a cheap stack capture, formatted only when needed.

Capturing walks the interpreter's frames and keeps ``(code object, line number)`` pairs: no
source is read and no frame (with its locals) is kept alive. Formatting reads the source lines
with :mod:`linecache` and leaves out pullback's own frames, so that the line shown is the user's.
"""

from __future__ import annotations

import linecache
import os
import sys
from types import CodeType, FrameType

Frames = tuple[tuple[CodeType, int], ...]

# Frames of user code kept per op: the creation line and the callers shown under it.
USER_FRAMES = 6
# A bound on the walk through pullback's own frames (nested modules, composite ops).
STACK_LIMIT = 64

_inside_pullback: dict[CodeType, bool] = {}  # per code object: is it pullback's own code?
_dirs: tuple[str, ...] = ()
_dirs_from: list[str] = []


def _pullback_dirs() -> tuple[str, ...]:
    """The folders of the pullback package (plugins may extend ``pullback.__path__`` after
    import: the answer is rebuilt when it changes)."""
    global _dirs, _dirs_from
    import pullback

    paths = list(pullback.__path__)
    if paths != _dirs_from:
        _dirs_from = paths
        _dirs = tuple(os.path.join(os.path.abspath(p), "") for p in paths)
        _inside_pullback.clear()
    return _dirs


def _is_pullback(code: CodeType) -> bool:
    inside = _inside_pullback.get(code)
    if inside is None:
        inside = _inside_pullback[code] = os.path.abspath(code.co_filename).startswith(
            _pullback_dirs())
    return inside


def capture_stack(skip: int = 1) -> Frames:
    """The calling stack, innermost first, without the ``skip`` innermost frames.

    The walk stops after :data:`USER_FRAMES` frames of user code: that is all an error shows.
    """
    frame: FrameType | None = sys._getframe(skip + 1)
    frames: list[tuple[CodeType, int]] = []
    append = frames.append
    users = USER_FRAMES
    known = _inside_pullback
    while frame is not None and len(frames) < STACK_LIMIT:
        code = frame.f_code
        append((code, frame.f_lineno))
        inside = known.get(code)  # inlined cache look-up: this loop runs for every op
        if inside is None:
            inside = _is_pullback(code)
        if not inside:
            users -= 1
            if users == 0:
                break
        frame = frame.f_back
    return tuple(frames)


def user_frames(frames: Frames) -> list[tuple[str, int, str]]:
    """``(file, line, function)`` of the frames outside pullback, innermost first."""
    return [(code.co_filename, line, code.co_name) for code, line in frames
            if not _is_pullback(code)]


def source_line(filename: str, line: int) -> str:
    """The stripped source text of one line ('' when the file cannot be read)."""
    return linecache.getline(filename, line).strip()


def describe_origin(frames: Frames, indent: str = "  ", depth: int = USER_FRAMES) -> str:
    """"created at FILE:LINE in FUNC" with the source line and the user frames above it."""
    mine = user_frames(frames)
    if not mine:
        return f"{indent}created inside pullback (no user frame in the recorded stack)"
    filename, line, func = mine[0]
    lines = [f"{indent}created at {filename}:{line} in {func}"]
    text = source_line(filename, line)
    if text:
        lines.append(f"{indent}    {text}")
    if len(mine) > 1:
        lines.append(f"{indent}called from (most recent call last):")
        for filename, line, func in reversed(mine[1:depth]):
            lines.append(f"{indent}  {filename}:{line} in {func}")
    return "\n".join(lines)
