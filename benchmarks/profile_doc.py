"""Writes docs/profile.md, where a compile's time goes, from a recorded run of ``bench_compile.py``'s steps.

Run: ``python benchmarks/profile_doc.py --write [--repeats R]`` measures (about a minute), records the
run in ``benchmarks/profile.json`` (machine and date included) and writes the doc from it;
``python benchmarks/profile_doc.py`` prints the doc the record gives. Wall-clock figures differ from
run to run, so the doc is the record's rendering: ``tests/test_docs_from_scripts.py`` checks that the
committed doc is exactly what :func:`generate` makes of the committed record.

What is timed: see ``bench_compile.py`` (every repeat a new plan of the case's shape; warm: the shape
compiled before; cold: every memo and cached function cleared before the repeat), processes as
``bench_speed.py`` runs them (start to exit, bytecode cached, launched from a small interpreter), and the
own time of warm compiles under ``cProfile``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
from pathlib import Path
import pstats
import re
import statistics
import sys

from bench_compile import CASES, VERIFY, measure
from bench_import import _cli
from bench_speed import run_once
from common import run_record, stamp, stamp_of

from v41graph import load_model
from v41graph.passes import compile

HERE = Path(__file__).resolve().parent
RECORD, DOC = HERE / "profile.json", HERE.parent / "docs" / "profile.md"
SCRIPT = "benchmarks/profile_doc.py"
#: what each step does now (the table's last column)
WHAT = {
    "lower": "the shape's template filled with the plan's rows (`ir/lower/template.py`)",
    "precision": "the shape's table",
    "replay": "the policies once per shared rows tuple",
    "kv_dedup": "the shape's merges; each owner's bytes summed in one sweep",
    "fusion": "the shape's plan if its token-set guards hold; nodes over the new rows",
    "schedule": "distinct (signature, rows) costs, token-only costs from earlier compiles, one path in floats",
    "compile": "the sum of the steps above",
    VERIFY: "the lowered graph and each pass's output: the skeleton's checks once per shape "
            "(`ir/verify.py`), the token flow over the rows every time",
}
PROCESSES = {"import v41graph": [sys.executable, "-c", "import v41graph"],
             "v41graph cost --prefill 8192": [*_cli(), "cost", "--prefill", "8192"]}


def own_time(repeats: int, top: int = 10) -> list[list]:
    """The functions with the most own time over ``repeats`` warm compiles of a prefill (new lengths),
    as [``path:line(function)``, share of the profiled total]."""
    model, make = load_model("deepseek-v4.1-flash"), CASES["prefill 4K-16K"]
    compile(model, make(-3))
    profile = cProfile.Profile()
    profile.enable()
    for i in range(repeats):
        compile(model, make(1000 + i))
    profile.disable()
    stats = pstats.Stats(profile).stats
    total = sum(v[2] for v in stats.values())
    rows = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
    return [[_short(f, line, name), round(v[2] / total, 4)] for (f, line, name), v in rows]


def _short(path: str, line: int, name: str) -> str:
    """``ir/graph.py:72(node_of)``; a built-in by its name alone (no address)."""
    if path == "~":
        return re.sub(r" at 0x[0-9a-f]+", "", name)
    marker = "/v41graph/"
    return f"{path.rsplit(marker, 1)[1] if marker in path else Path(path).name}:{line}({name})"


def processes(repeats: int) -> dict:
    """Median wall seconds and max RSS (MiB) of each process of :data:`PROCESSES` (one warm-up run first)."""
    out = {}
    for name, argv in PROCESSES.items():
        run_once(argv)
        runs = [run_once(argv) for _ in range(repeats)]
        out[name] = {"wall_s": statistics.median(w for w, _ in runs), "rss_mib": statistics.median(r for _, r in runs)}
    return out


def record(repeats: int) -> dict:
    load = os.getloadavg()[0]
    rec = {"run": run_record(), "repeats": repeats, "cases": measure(repeats), "own_time": own_time(repeats),
           "processes": processes(repeats)}
    rec["run"]["load"] = [round(load, 2), round(os.getloadavg()[0], 2)]  # the 1-minute load average before, after
    return rec


def _ms(s: float) -> str:
    return f"{s * 1e3:.2f}"


def _load(run: dict) -> str:
    """A sentence on the machine's load during the run (a shared machine's wall clock counts others' work)."""
    if "load" not in run:
        return ""
    before, after = run["load"]
    return (f" The machine's 1-minute load average was {before:.2f} before the run and {after:.2f} after it, on "
            f"{run['machine'].split(', ')[1]}: wall-clock figures include the time other processes took.")


def generate(stamp_line: str, rec: dict) -> str:
    """The doc ``rec`` (a :func:`record`) gives under ``stamp_line``."""
    run, r = rec["run"], rec["repeats"]
    out = ["# Where a compile's time goes", "", stamp_line, "",
           f"Written by `python {SCRIPT} --write` from its recorded run (`benchmarks/profile.json`) on "
           f"{run['machine']}, {run['date']}. Every figure is a median of {r} repeats, wall clock, and every "
           "repeat compiles a new plan of its case's shape (other lengths, the same skeleton): *warm* is a "
           "shape compiled before in the process, *cold* is from nothing — every memo and cached function "
           "cleared before the repeat (`reuse.clear_caches`), only the imports and the loaded model kept. The "
           "steps are `compile`'s on DeepSeek-V4.1-Flash and h200_sxm (SOL), each timed on the graph the step "
           "before produced (`benchmarks/bench_compile.py`)." + _load(run), ""]
    for name, case in rec["cases"].items():
        warm, cold, whole = case["warm"], case["cold"], case["whole"]
        out += [f"## {name} ({case['nodes']:,} nodes lowered)", "", "| step | warm ms | cold ms | what it does |",
                "|---|---|---|---|"]
        for step in warm:
            label = f"**{step}**" if step == "compile" else step
            out.append(f"| {label} | {_ms(warm[step])} | {_ms(cold[step])} | {WHAT.get(step, '')} |")
        ratio = warm[VERIFY] / warm["compile"]
        out += ["", f"`verify()` — what `compile_graph(check=True)`, the default, adds — costs {ratio:.2f}× the warm "
                f"compile ({_ms(warm[VERIFY])} ms beside {_ms(warm['compile'])} ms) and "
                f"{cold[VERIFY] / cold['compile']:.2f}× the cold one. Whole calls, warm, each on a new plan: "
                + "; ".join(f"`{call}` {_ms(s)} ms" for call, s in whole.items()) + ".", ""]
    out += ["## Own time in a warm compile", "",
            f"The functions with the most own time over {r} warm compiles of one prefill under `cProfile` "
            "(its overhead inflates small functions), as shares of the profiled total:", "",
            "| function | share |", "|---|---|"]
    out += [f"| `{name}` | {share:.1%} |" for name, share in rec["own_time"]]
    out += ["", "## Process start", "", "From `python` starting to it exiting, bytecode cached (a user's normal "
            "setting), one warm-up run first (`benchmarks/bench_import.py` has more commands):", "",
            "| process | wall s | max RSS MiB |", "|---|---|---|"]
    out += [f"| `{name}` | {p['wall_s']:.3f} | {p['rss_mib']:.0f} |" for name, p in rec["processes"].items()]
    out += ["", "## Before the speed work (issue 14)", "",
            "Quoted, not regenerated: main at f58db79, on this project's 2-core machine. One 8K prefill took 82–98 ms "
            "(median 94.7 ms); 256 requests 266 ms; 1,024 distinct requests ~750 ms (+0.64 ms per request); "
            "`import v41graph` 0.6 s; `v41graph cost --prefill 8192` 0.80 s and 86 MiB. Lowering built 1,321 "
            "nodes by the block builders (5.1 ms), precision made a record per node (3.3 ms), fusion ran its "
            "finders and legality every compile (26.3 ms) and the schedule priced 435 node costs in `Fraction` "
            "arithmetic (~50 ms). The structural memos (`docs/architecture.md`, \"Shapes\") are what moved "
            "those figures to the warm column above.", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="measure, record and write docs/profile.md")
    parser.add_argument("--repeats", type=int, default=15, help="repeats per figure (at least 3; default 15)")
    args = parser.parse_args(argv)
    if args.repeats < 3:
        parser.error(f"--repeats: at least 3, got {args.repeats}")
    if not args.write:
        print(generate(stamp_of(DOC.read_text(encoding="utf-8")), json.loads(RECORD.read_text(encoding="utf-8"))),
              end="")
        return 0
    rec = record(args.repeats)
    RECORD.write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")
    DOC.write_text(generate(stamp(SCRIPT), rec), encoding="utf-8")
    print(f"wrote {DOC.relative_to(HERE.parent)} and {RECORD.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
