"""Rewrite the golden files of tests/test_golden_plans.py and tests/test_dot.py.

The tests only ever read their goldens, so a test cannot pass by rewriting what it compares
with; regenerating is this separate, explicit step, run by hand after a change meant to alter
output. The cases and the output come from the test modules themselves (one definition of each).

Run: ``python tools/regen_golden.py`` (``--check`` lists what would change and exits 1 if any),
then read ``git diff tests/golden`` and say in the commit why each difference is right.
"""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import test_dot  # noqa: E402
import test_golden_plans  # noqa: E402


def expected() -> dict[Path, bytes]:
    """Every golden file and the bytes the code produces for it now."""
    out = {test_dot.GOLDEN: test_dot.golden_text().encode("utf-8")}
    for plan in sorted(test_golden_plans.PLANS):
        for suffix in sorted(test_golden_plans.COMMANDS):
            out[test_golden_plans.GOLDEN / f"{plan}.{suffix}"] = \
                test_golden_plans.produce(plan, suffix).encode("utf-8")
    return out


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    now = expected()
    changed = [path for path, data in now.items() if not path.is_file() or path.read_bytes() != data]
    for path in changed:
        print(f"{'differs' if check else 'wrote'}: {path.relative_to(TESTS.parent)}")
    if not check:
        for path in changed:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(now[path])
    print(f"{len(changed)} golden file(s) {'differ' if check else 'rewritten'}")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
