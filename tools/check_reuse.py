"""An independent check of reuse: plans compiled in one process, in shuffled order with repeats,
against the same plans compiled in another process started with ``V41GRAPH_NO_CACHE=1``.

Run: ``python tools/check_reuse.py [--plans 300] [--seed 22]``. This process compiles the plans of
``tests/reuse_plans.py``'s random sequence one after another (shapes seen, plans repeated, every
memo on); a child process started with ``V41GRAPH_NO_CACHE=1`` compiles each plan from nothing.
Every figure of every schedule (``cost --json``: times, breakdowns, per-GPU memory; each node's
time and finish; or the refusal) is compared as JSON text. Prints the counts; exits 1 on any
difference, naming the plans.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path
import random
import subprocess
import sys

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from reuse_plans import describe, figures, sequence  # noqa: E402


def _digests(seed: int, plans: int) -> list[str]:
    return [hashlib.sha256(figures(item).encode()).hexdigest() for item in sequence(random.Random(seed), plans)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=300, help="plans in the sequence (default 300)")
    parser.add_argument("--seed", type=int, default=22, help="the sequence's seed (default 22)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_digests(args.seed, args.plans)))
        return
    env = {**os.environ, "V41GRAPH_NO_CACHE": "1"}
    child = subprocess.Popen([sys.executable, __file__, "--child", "--plans", str(args.plans), "--seed",
                              str(args.seed)], stdout=subprocess.PIPE, text=True, env=env)
    items = sequence(random.Random(args.seed), args.plans)
    warm = [hashlib.sha256(figures(item).encode()).hexdigest() for item in items]
    out, _ = child.communicate()
    if child.returncode:
        raise SystemExit(f"the uncached process failed (exit {child.returncode})")
    cold = json.loads(out)
    distinct = len({id(item) for item in items})
    bad = [describe(item) for item, a, b in zip(items, warm, cold) if a != b]
    print(f"{len(items)} compiles ({distinct} distinct plans, {len(items) - distinct} repeats, "
          f"{len({i['model'] for i in items})} models, {len({i['hardware'] for i in items})} GPUs, "
          f"cost modes {sorted({i['cost'] for i in items})}) in one process vs each from nothing in a "
          f"V41GRAPH_NO_CACHE=1 process: {len(items) - len(bad)} equal, {len(bad)} differ")
    for line in bad:
        print("  differs:", line)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
