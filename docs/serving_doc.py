"""Write the figures of docs/serving.md: pages, prefix restore, the V4.1 / V4 ratios, the simulation.

    python docs/serving_doc.py            # print the generated blocks
    python docs/serving_doc.py --write    # rerun the simulations, record them, rewrite the blocks
    python docs/serving_doc.py --write --recorded   # rewrite the blocks from the recorded simulations

Each block of docs/serving.md between ``<!-- serving_doc NAME begin -->`` and ``<!-- serving_doc NAME end -->``
is written here from the commands the doc quotes (``memory``, ``restore``, ``ratios``, ``simulate``, run
in-process through the CLI with ``--json``) and the functions behind them; the rest is written by hand.
The two simulations (about 6 s of CPU each) are recorded in docs/serving_runs.json with the machine, date
and CPU time of the run. tests/test_docs_from_scripts.py regenerates the blocks (the simulations from the
record, then the record's figures rerun) and fails on drift.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path

from v41graph import load_model
from v41graph.cli.main import main as cli
from v41graph.costs.hardware import load_hardware
from v41graph.costs.requests.restore import persisted
from v41graph.model.memory import kv_layouts
from v41graph.model.paging import PAGE_TOKENS, owner_pages, paged_cache

ROOT = Path(__file__).resolve().parents[1]
DOC, RECORD = ROOT / "docs" / "serving.md", ROOT / "docs" / "serving_runs.json"
SCRIPT = "docs/serving_doc.py"
sys.path.insert(0, str(ROOT / "benchmarks"))
from common import block_of, replace_block, run_record, stamp, stamp_of  # noqa: E402

V41, V4 = "deepseek-v4.1-flash", "deepseek-v4-flash"
RESTORE = ["restore", "--prefix", "65536", "--suffix", "1024", "--tier", "host_dram", "--swa", "lost", "--tp", "8",
           "--ep", "8"]
RATIO_CONTEXTS = (2048, 4096, 32768, 1048576)
SIMULATE = ["simulate", "--rate", "2,4,8", "--prompt", "4096", "--output", "256", "--duration", "600", "--seed", "1",
            "--hardware", "h200_sxm", "--tp", "8", "--ep", "8", "--cost", "sol"]
DISAGG_PROMPT = 4096


def begin(name: str) -> str:
    return f"<!-- serving_doc {name} begin -->"


def end(name: str) -> str:
    return f"<!-- serving_doc {name} end -->"


def run_json(*argv: str) -> dict:
    """What ``v41graph ARGV --json`` prints, parsed (in-process)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli([*argv, "--json"])
    if status:
        raise RuntimeError(f"v41graph {' '.join(argv)}: exit {status}")
    return json.loads(out.getvalue())


def _owner_sum(model) -> str:
    """Σ over owners of (main page + index pages), like owners grouped: ``3 × (36,864 + 8,704) + …``."""
    groups: dict[tuple[int, int, int], int] = {}
    for o in owner_pages(model):
        key = (o.main_page_bytes, o.index_pages, o.index_page_bytes)
        groups[key] = groups.get(key, 0) + 1
    terms = []
    for (main, pages, index), count in groups.items():
        inner = f"{main:,}" if not pages else f"({main:,} + {'' if pages == 1 else f'{pages} × '}{index:,})"
        terms.append(inner if count == 1 else f"{count} × {inner}")
    return " + ".join(terms)


def pages_block() -> str:
    cells = {}
    for name in (V41, V4):
        model = load_model(name)
        page = paged_cache(model, PAGE_TOKENS)
        paged = page.global_page_bytes / PAGE_TOKENS
        exact = run_json("memory", "--model", name, "--context", str(2**20))["kv"]["global_bytes"] / 2**20
        per_token = f"{paged:,.2f} B/token".replace(".00 B", " B")
        per_token += ", as exact" if paged == exact else f"; exact {exact:,.2f}".replace(".00", "")
        swa = kv_layouts(model).swa.bytes
        raw = PAGE_TOKENS * swa
        cells[name] = (f"{_owner_sum(model)} = **{page.global_page_bytes:,} B** ({per_token})",
                       f"{PAGE_TOKENS} × {swa} = {raw:,} B" if raw == page.swa_page_bytes else
                       f"{PAGE_TOKENS} × {swa} → {page.swa_page_bytes:,} B")
    a, b = (run_json("memory", "--context", str(n))["pages"] for n in (4096, 4097))
    return "\n".join([
        "| per FULL page | V4.1-Flash | V4-Flash |", "|---|---|---|",
        f"| global KV (every owner) | {cells[V41][0]} | {cells[V4][0]} |",
        f"| SWA, per layer | {cells[V41][1]} | {cells[V4][1]} |", "",
        f"`v41graph memory --context 4096` shows {a['full_pages']} pages and `--context 4097` shows "
        f"{b['full_pages']} pages, {b['global_bytes'] - a['global_bytes']:,} B more"
        f"{', one whole page' if b['global_bytes'] - a['global_bytes'] == a['global_page_bytes'] else ''}. "
        "`tests/test_serving.py` checks both by hand."])


def restore_block() -> str:
    lost, kept = run_json(*RESTORE), run_json(*RESTORE[:-5], "kept", *RESTORE[-4:])
    ssd = run_json(*[a if a != "host_dram" else "ssd" for a in RESTORE])
    hw = load_hardware("h200_sxm")
    pages = lost["fetch_bytes"] // paged_cache(load_model(), 256).global_page_bytes
    page_bytes = paged_cache(load_model(), 256).global_page_bytes
    return "\n".join([
        f"`v41graph {' '.join(RESTORE)}` (H200):", "",
        "| | SWA lost (replay) | SWA kept |", "|---|---|---|",
        f"| fetch: {pages} pages × {page_bytes:,} B = {lost['fetch_bytes']:,} B at "
        f"{lost['tier_bandwidth'] / 1e9:g} GB/s + {lost['tier_latency_ns'] / 1e3:g} µs | "
        f"{lost['fetch_s'] * 1e3:.4f} ms | {kept['fetch_s'] * 1e3:.4f} ms |",
        f"| forward (extend; replayed token-layers) | {lost['forward_s'] * 1e3:.4f} ms "
        f"({lost['replayed_token_layers']:,} = {load_model().window} × {len(load_model().layers)}) | "
        f"{kept['forward_s'] * 1e3:.4f} ms ({kept['replayed_token_layers']:,}) |",
        f"| TTFT (overlapped) | {lost['ttft_s'] * 1e3:.4f} ms | {kept['ttft_s'] * 1e3:.4f} ms |", "",
        f"On H200 with TP8 the fetch is {'hidden' if lost['exposed_fetch_s'] == 0 else 'partly exposed'}: "
        "each owner's pages arrive before its first reader starts. From SSD at "
        f"{ssd['tier_bandwidth'] / 1e9:g} GB/s ({ssd['fetch_s'] * 1e3:.4f} ms with "
        f"{ssd['tier_latency_ns'] / 1e3:g} µs latency), {ssd['exposed_fetch_s'] * 1e3:.4f} ms of it shows: the TTFT "
        f"is {ssd['ttft_s'] * 1e3:.4f} ms with the SWA lost (`--tier ssd`), because the later owners' pages "
        f"arrive after the layers that read them are ready ({hw.name}'s tiers: `data/hardware/*.json`)."])


def ratios_block() -> str:
    r = {n: run_json("ratios", "--context", str(n)) for n in RATIO_CONTEXTS}
    top = r[RATIO_CONTEXTS[-1]]
    v41, v4 = load_model(V41), load_model(V4)
    exact41 = run_json("memory", "--context", str(2**20))["kv"]["global_bytes"] / 2**20
    exact4 = run_json("memory", "--model", V4, "--context", str(2**20))["kv"]["global_bytes"] / 2**20
    p41, p4 = (paged_cache(m, PAGE_TOKENS).global_page_bytes for m in (v41, v4))
    swa4 = paged_cache(v4, PAGE_TOKENS).swa_page_bytes
    layers4 = len(v4.layers)
    swa_bytes4 = kv_layouts(v4).swa.bytes
    # where V4-Flash's window pages equal its global KV: layers × page = tokens × exact bytes per token
    crossing = layers4 * swa4 / exact4
    every_token = exact41 / (exact4 + layers4 * swa_bytes4)
    owners41, owners4 = len(owner_pages(v41)), owner_pages(v4)
    indexed4 = sum(1 for o in owners4 if o.index_pages)
    ratios4 = sorted({o.ratio for o in owners4})

    def row(label, key, bold_last=False):
        cells = [f"{r[n][key]:.4f}" for n in RATIO_CONTEXTS]
        if bold_last:
            cells[-1] = f"**{cells[-1]}**"
        return cells

    def fmt(x: float) -> str:
        return f"{x:,.2f}".replace(".00", "")
    head = "| ratio V4.1 / V4-Flash | " + " | ".join(f"{n:,}" for n in RATIO_CONTEXTS) + " | paper |"
    return "\n".join([
        "`v41graph ratios` (default 1,048,576 tokens; the other columns `--context N`):", "",
        head, "|---|" + "---|" * (len(RATIO_CONTEXTS) + 1),
        f"| global KV per token (exact entries: {fmt(exact41)} / {fmt(exact4)}) | "
        + " | ".join(row("", "global_kv_ratio_exact_entries", True)) + f" | ≈ {top['paper']['global_kv']} |",
        f"| global KV, paged ({p41:,} / {p4:,} per page) | " + " | ".join(row("", "global_kv_ratio_paged")) + " | |",
        "| persisted: V4.1 without SWA / V4-Flash with its SWA window pages | "
        + " | ".join(row("", "persisted_ratio_v41_no_swa_vs_v4_with_swa", True))
        + f" | ≈ {top['paper']['persisted_without_swa']} |", "",
        "**What they include.** The global KV is main KV plus index K over every owner. V4.1 has "
        f"{owners41} owners that share their KV across layers; V4-Flash has {len(owners4)} ({indexed4} of ratio "
        f"{ratios4[0]} with index K, {len(owners4) - indexed4} of ratio {ratios4[-1]}). The ratio combines "
        "cross-layer sharing with the FP4 latent. Persisted caches exclude the compressor state: it is "
        "request-scoped, a few KB.", "",
        f"**The global-KV ratio matches the paper:** {top['global_kv_ratio_exact_entries']:.4f} is \"roughly 1/4\".",
        "",
        "**The persisted ratio matches only at short contexts.** The paper derives 1/8 as \"1/2 from dropping SWA "
        "× 1/4\". That assumes V4's persisted SWA is about as large as its global KV. In a paged prefix cache, "
        f"V4-Flash persists only the pages holding each layer's last window: {layers4} × {swa4:,} B = "
        f"{layers4 * swa4 / 1e6:.1f} MB per request, whatever its length. That equals V4-Flash's global KV near "
        f"{crossing:,.0f} tokens, which is where 1/8 holds "
        f"({r[2048]['persisted_ratio_v41_no_swa_vs_v4_with_swa']:.3f} at 2,048). At 1M tokens the SWA is "
        f"negligible and the ratio stays near 1/4 ({top['persisted_ratio_v41_no_swa_vs_v4_with_swa']:.4f}).", "",
        f"A V4 that persisted SWA for every token ({layers4} × {swa_bytes4} = {layers4 * swa_bytes4:,} B/token) "
        f"would give {fmt(exact41)} / ({fmt(exact4)} + {layers4 * swa_bytes4:,}) = {every_token:.3f} instead. "
        "The paper's 1/8 sits between these two readings. Its exact retention policy for V4 (checkpoints? TTL?) "
        "is not in the references."])


def _simulate(extra: list[str]) -> dict:
    cpu, wall = time.process_time(), time.perf_counter()
    d = run_json(*SIMULATE, *extra)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    rows = [{k: r[k] for k in ("rate_per_s", "requests", "ttft_s", "itl_s", "throughput_tok_s")} for r in d["rates"]]
    return {"argv": [*SIMULATE, *extra], "emission": d["emission"], "step_shapes_costed": d["step_shapes_costed"],
            "kv_pages": d["scheduler"]["kv_pages"], "rates": rows, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}


def simulations() -> dict:
    """Both simulations the doc quotes, with where, when and how long (CPU) they ran."""
    return {"run": run_record(), "overlap": _simulate([]), "step_end": _simulate(["--disable-overlap-schedule"])}


def deterministic(runs: dict) -> dict:
    """The part of :func:`simulations` a rerun must reproduce exactly (not the machine, date or times)."""
    return {k: {f: v for f, v in runs[k].items() if f not in ("cpu_s", "wall_s")} for k in ("overlap", "step_end")}


def simulate_block(runs: dict) -> str:
    o, s = runs["overlap"], runs["step_end"]

    def ms(x: float, places: int) -> str:
        return f"{x * 1e3:,.{places}f}"
    rows = ["| rate/s | requests | TTFT p50 | p90 | p99 | ITL p50 | p90 | p99 | tok/s |", "|---" * 9 + "|"]
    for r in o["rates"]:
        t, i = r["ttft_s"], r["itl_s"]
        rows.append(f"| {r['rate_per_s']:g} | {r['requests']:,} | {ms(t['p50'], 2)} ms | {ms(t['p90'], 2)} | "
                    f"{ms(t['p99'], 2)} | {ms(i['p50'], 3)} ms | {ms(i['p90'], 3)} | {ms(i['p99'], 3)} | "
                    f"{r['throughput_tok_s']:,.1f} |")
    same_itl = all(a["itl_s"]["p50"] == b["itl_s"]["p50"] and a["itl_s"]["p90"] == b["itl_s"]["p90"]
                   for a, b in zip(o["rates"], s["rates"]))
    same_tput = all(f"{a['throughput_tok_s']:,.1f}" == f"{b['throughput_tok_s']:,.1f}"  # as the table prints them
                    for a, b in zip(o["rates"], s["rates"]))
    ttfts = [" / ".join(ms(r["ttft_s"][q], 2) for q in ("p50", "p90", "p99")) for r in s["rates"]]
    moved = [(b["rate_per_s"], b["itl_s"]["p99"]) for a, b in zip(o["rates"], s["rates"])
             if a["itl_s"]["p99"] != b["itl_s"]["p99"]]
    run = runs["run"]
    return "\n".join([
        f"`v41graph {' '.join(o['argv'])}`", "(tokens one step late, the default):", "", *rows, "",
        "With `--disable-overlap-schedule` the same run gives TTFT p50 / p90 / p99 of "
        + ", ".join(ttfts[:-1]) + " and " + ttfts[-1] + " ms"
        + (", the same ITL p50 and p90" if same_itl else "")
        + "".join(f", an ITL p99 of {ms(p99, 3)} ms at {rate:g}/s" for rate, p99 in moved)
        + (", and the same throughput" if same_tput else "") + ".", "",
        f"The run costs {o['step_shapes_costed']} step shapes, with a KV pool of {o['kv_pages']:,} pages; it took "
        f"{o['cpu_s']:.1f} s of CPU ({o['wall_s']:.1f} s wall) on {run['machine']} on {run['date']} "
        "(docs/serving_runs.json)."])


def disagg_block() -> str:
    model, hw = load_model(), load_hardware("h200_sxm")
    page = paged_cache(model, DISAGG_PROMPT)
    nbytes = persisted(model, DISAGG_PROMPT).with_swa
    assert nbytes == page.global_bytes + page.swa_bytes  # the sum the sentence spells out
    return (f"The KV is its global pages plus the SWA window page of every layer: {page.full_pages} × "
            f"{page.global_page_bytes:,} + {page.swa_pages} × {page.swa_page_bytes:,} = {nbytes:,} B for a "
            f"{DISAGG_PROMPT:,}-token prompt, {nbytes / hw.scaleout_bandwidth * 1e3:.3f} ms at "
            f"{hw.scaleout_bandwidth / 1e9:g} GB/s.")


def blocks(runs: dict, stamp_line: str | None = None) -> dict[str, str]:
    """Every generated block by name; the first holds the stamp."""
    return {"pages": (stamp_line or stamp(SCRIPT)) + "\n\n" + pages_block(), "restore": restore_block(),
            "ratios": ratios_block(), "simulate": simulate_block(runs), "disagg": disagg_block()}


def committed() -> tuple[str, dict[str, str]]:
    """The committed doc's stamp line and blocks."""
    text = DOC.read_text(encoding="utf-8")
    found = {name: block_of(text, begin(name), end(name)) for name in ("pages", "restore", "ratios", "simulate",
                                                                        "disagg")}
    return stamp_of(found["pages"]), found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the blocks of docs/serving.md")
    parser.add_argument("--recorded", action="store_true", help="take the simulations from docs/serving_runs.json")
    args = parser.parse_args(argv)
    if args.recorded:
        runs = json.loads(RECORD.read_text(encoding="utf-8"))
    else:
        runs = simulations()
    out = blocks(runs)
    if not args.write:
        print("\n\n".join(out.values()))
        return 0
    if not args.recorded:
        RECORD.write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    text = DOC.read_text(encoding="utf-8")
    for name, block in out.items():
        text = replace_block(text, begin(name), end(name), block)
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}" + ("" if args.recorded else f" and {RECORD.relative_to(ROOT)}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
