"""The collector, for a program that owns its process: a compile that kept a new shape may freeze what is
alive (``gc.freeze()``), only inside :func:`frozen_shapes`, which the ``v41graph`` command opts into. A library
call never touches the collector on its caller's behalf (tests/test_reuse.py holds both)."""

from __future__ import annotations

from contextlib import contextmanager

_FREEZE = [False]  # inside frozen_shapes()
_NEW = [False]  # a memo kept a new long-lived value since the last settle()
#: allocations between collections of the youngest generation inside :func:`frozen_shapes` (Python's default: 700)
YOUNG_THRESHOLD = 50_000


def kept_a_new_shape() -> None:
    """A memo kept a new long-lived value (reuse.Memo.put): the next :func:`settle` has something to freeze."""
    _NEW[0] = True


@contextmanager
def frozen_shapes(hand_back: bool = True):
    """For the block, each compile that kept a new shape ends by moving every object alive into the
    collector's permanent generation (``gc.freeze()``), so later collections stop scanning the models and
    the memos' shapes (hundreds of thousands of objects) to free nothing; on exit ``gc.unfreeze()`` hands
    them back. Only a program that owns its process asks for it — the ``v41graph`` command does, for one
    command (a deploy search compiling ~400 shapes spends a third of its CPU in collections without it) —
    never a library call on its caller's behalf: outside the block no compile touches the collector (a
    cycle the caller dropped must be freed by its next ``gc.collect()``, tests/test_reuse.py).

    ``hand_back=False``, for a process that ends with the block (the console script, :func:`v41graph.cli.main.script`):
    on exit everything alive is frozen instead of handed back, because the interpreter's exit runs full collections
    over whatever the collector tracks — after a deploy search, ~1.5 s of CPU scanning memos whose memory the
    process returns anyway. Finalizers still run for what reference counting frees; nothing v41graph keeps
    alive needs one (files are written and closed inside the command).

    For the block the youngest generation is collected every :data:`YOUNG_THRESHOLD` allocations instead of
    Python's 700: a compile allocates tens of thousands of short-lived objects that reference counting frees, and
    7,500 young collections of a deploy search found almost nothing (0.6 → 0.15 s of collections, ~0.7 s of CPU
    with the cache effects). The thresholds are handed back on exit."""
    import gc
    before = _FREEZE[0]
    _FREEZE[0] = True
    thresholds = gc.get_threshold()
    if not before:
        gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        _FREEZE[0] = before
        if not before:
            gc.set_threshold(*thresholds)
            if hand_back:
                gc.unfreeze()
            else:
                gc.freeze()


def settle() -> None:
    """Inside :func:`frozen_shapes`: after a compile that kept a new shape, freeze what is alive; else nothing."""
    if _FREEZE[0] and _NEW[0]:
        import gc
        _NEW[0] = False
        gc.freeze()
