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

# Deep enough to reach the user's line through nn modules and composite ops.
STACK_LIMIT = 32


def capture_stack(skip: int = 1) -> Frames:
    """The calling stack, innermost first, without the ``skip`` innermost frames."""
    frame: FrameType | None = sys._getframe(skip + 1)
    frames: list[tuple[CodeType, int]] = []
    while frame is not None and len(frames) < STACK_LIMIT:
        frames.append((frame.f_code, frame.f_lineno))
        frame = frame.f_back
    return tuple(frames)


def _pullback_dirs() -> tuple[str, ...]:
    # Read on every call (failure paths only): plugins extend pullback.__path__ after import.
    import pullback

    return tuple(os.path.join(os.path.abspath(p), "") for p in pullback.__path__)


def user_frames(frames: Frames) -> list[tuple[str, int, str]]:
    """``(file, line, function)`` of the frames outside pullback, innermost first."""
    inside = _pullback_dirs()
    out = []
    for code, line in frames:
        path = os.path.abspath(code.co_filename)
        if not path.startswith(inside):
            out.append((code.co_filename, line, code.co_name))
    return out


def source_line(filename: str, line: int) -> str:
    """The stripped source text of one line ('' when the file cannot be read)."""
    return linecache.getline(filename, line).strip()


def describe_origin(frames: Frames, indent: str = "  ", depth: int = 6) -> str:
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
