"""DOT text to files: SVG through a DOT renderer (system Graphviz, or ``graphviz-pure`` installed
with the package), or the text itself (:func:`write_diagram`)."""

from __future__ import annotations

import os
from pathlib import Path
import shutil
import subprocess
import sysconfig

from ..errors import GraphError, OutputError, expect

RENDERERS = ("dot", "graphviz-pure")  # system Graphviz first; `pip install graphviz-pure` installs the second


def find_renderer() -> str | None:
    """Path of the first of :data:`RENDERERS` on PATH or beside this Python's scripts, else ``None``."""
    search = os.pathsep.join(p for p in (os.environ.get("PATH", ""), sysconfig.get_path("scripts")) if p)
    for name in RENDERERS:
        exe = shutil.which(name, path=search)
        if exe:
            return exe
    return None


def render_svg(exe: str, dot_text: str, timeout: float) -> bytes:
    name = Path(exe).name
    try:
        done = subprocess.run([exe, "-Tsvg"], input=dot_text.encode("utf-8"), capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise GraphError(f"write_diagram: {name} did not finish within {timeout:g} s") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GraphError(f"write_diagram: {name} exited {done.returncode}: {lines[0] if lines else '(no stderr)'}")
    return done.stdout


def svg_text(dot_text: str, *, timeout: float = 120.0) -> str | None:
    """``dot_text`` rendered to SVG by the first of :data:`RENDERERS` found; ``None`` with none."""
    exe = find_renderer()
    return None if exe is None else render_svg(exe, dot_text, timeout).decode("utf-8")


def write_diagram(dot_text: str, path: str | os.PathLike[str], *, timeout: float = 120.0) -> str:
    """Write ``dot_text`` to ``path`` (``.dot``/``.gv``) or render it to SVG (``.svg``).

    For ``.svg`` the first renderer of :data:`RENDERERS` found is run with ``-Tsvg``; with none
    found, the DOT text goes to the same name with ``.dot`` and the message says so (no error).
    Returns a one-line message naming what was written.

    Raises
    ------
    GraphError
        Any other suffix, or a renderer that exits non-zero (its first stderr line) or times out.

    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "g.dot"
    >>> write_diagram("digraph { a -> b }", out) == f"wrote DOT text to {out}"
    True
    """
    expect(dot_text, str, "write_diagram dot_text", GraphError, " (DOT text: v41graph.render_dot(graph))")
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix in (".dot", ".gv"):
        _write(target, dot_text.encode("utf-8"))  # bytes: no newline translation on any OS
        return f"wrote DOT text to {target}"
    if suffix != ".svg":
        raise GraphError(f"write_diagram path: unsupported suffix {suffix or '(none)'!r} in {str(target)!r} "
                         "(use .svg or .dot)")
    exe = find_renderer()
    if exe is None:
        fallback = target.with_suffix(".dot")
        _write(fallback, dot_text.encode("utf-8"))
        return (f"wrote DOT text to {fallback}: no DOT renderer found (looked for {', '.join(RENDERERS)}), "
                f"so {target.name} was not rendered; install Graphviz or `pip install graphviz-pure`")
    _write(target, render_svg(exe, dot_text, timeout))
    return f"wrote SVG to {target} (rendered by {Path(exe).name})"


def _write(target: Path, data: bytes) -> None:
    try:
        target.write_bytes(data)
    except OSError as exc:  # a folder that is not there, a read-only file system: named with the path
        raise OutputError.of("write_diagram path", target, exc) from exc
