"""Output folders written whole (issue 38): ``report --out`` and ``deploy -o``.

A command builds its folder in a temporary sibling (``.NAME.tmp-PID``, same parent, so the rename
stays on one file system) and renames it into place in one step. A reader never sees a
half-written folder, nor files of an earlier run beside this one's; a failed or interrupted run
removes the sibling and leaves the earlier folder as it was.

An existing folder is replaced when it is empty or holds only names the command writes (an
earlier run's output); anything else is refused in one line unless ``--force``, so that
``--out ~/notes`` never deletes notes. The working directory and its parents are always refused.

>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp()) / "R"
>>> with output_folder(out, ("a.txt",)) as tmp:
...     _ = (tmp / "a.txt").write_text("one")
>>> sorted(p.name for p in out.parent.iterdir()), (out / "a.txt").read_text()
(['R'], 'one')
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import threading
from pathlib import Path
from typing import Iterable, Iterator

from .shared import CliError


def check_folder(path: str | os.PathLike[str], names: Iterable[str], *, force: bool = False,
                 option: str = "--out") -> Path:
    """The real path the folder will take; a :class:`CliError` for one it must not replace.

    Cheap: commands call it before their work, so a refusal costs nothing."""
    target = Path(os.path.realpath(path))  # a link to a folder: the folder it names is replaced
    here = Path.cwd().resolve()
    if target == here or target in here.parents:
        raise CliError(f"{option} {os.fspath(path)!r}: is the working folder or holds it; name a folder of its own")
    if target.exists() and not target.is_dir():
        raise CliError(f"{option} {os.fspath(path)!r}: is a file, not a folder")
    if target.is_dir() and not force:
        foreign = sorted(set(os.listdir(target)) - set(names))
        if foreign:
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            raise CliError(f"{option} {os.fspath(path)!r}: holds {foreign[0]!r}{more}, not written by v41graph; "
                           "name another folder, or pass --force to replace it whole")
    return target


@contextlib.contextmanager
def output_folder(path: str | os.PathLike[str], names: Iterable[str], *, force: bool = False,
                  option: str = "--out") -> Iterator[Path]:
    """Yield an empty temporary sibling of ``path``; when the block ends it replaces ``path``.

    ``names``: what the command writes (an existing folder holding only these is replaced without
    ``--force``). On any exception, ``KeyboardInterrupt`` included, the sibling is removed and
    ``path`` is left untouched."""
    names = tuple(names)
    target = check_folder(path, names, force=force, option=option)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)  # a pid is unique among live processes: this one is stale
    try:
        tmp.mkdir()
        yield tmp
        check_folder(path, names, force=force, option=option)  # again: it may have changed meanwhile
        with _sigint_deferred():  # between the two renames `path` is briefly absent: finish them
            _swap(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone after a swap; else this run's partial output


def _swap(tmp: Path, target: Path) -> None:
    """Rename ``target`` aside, ``tmp`` into its place, remove the old one."""
    asides: list[Path] = []
    try:
        for attempt in range(5):  # another run into the same folder may swap its own in between
            if os.path.lexists(target):
                aside = target.with_name(f".{target.name}.old-{os.getpid()}-{attempt}")
                shutil.rmtree(aside, ignore_errors=True)
                with contextlib.suppress(FileNotFoundError):
                    os.rename(target, aside)
                    asides.append(aside)
            try:
                os.rename(tmp, target)
                return
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    if asides and not os.path.lexists(target):
                        os.rename(asides.pop(), target)  # put the earlier folder back
                    raise
        raise OSError(errno.EBUSY, "other runs keep replacing this folder", os.fspath(target))
    finally:
        for aside in asides:
            shutil.rmtree(aside, ignore_errors=True)


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold a Ctrl-C until the block ends, then raise it (only the main thread handles signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)
    if caught:
        raise KeyboardInterrupt
