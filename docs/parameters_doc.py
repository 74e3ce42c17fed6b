"""Write docs/parameters.md from ``v41graph.parameters`` (issue 37, item 9: docs from scripts).

    python docs/parameters_doc.py            # print the doc as it would be written
    python docs/parameters_doc.py --write    # write docs/parameters.md

Every count is computed here from the module inventory (``model/parameters.py``); the model cards'
figures are quotes (:data:`CARDS`), marked so in the doc. tests/test_docs_from_scripts.py regenerates the
doc and fails on drift, the stamp line (machine and date) aside. Under a second.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from v41graph import load_model, parameters

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "parameters.md"
SCRIPT = "docs/parameters_doc.py"
sys.path.insert(0, str(ROOT / "benchmarks"))
from common import stamp  # noqa: E402

#: what DeepSeek's model cards state, in billions (quoted, not computed): total; active per token by phase
CARDS = {"deepseek-v4-flash": {"total": 284, "decode": 13},
         "deepseek-v4.1-flash": {"decode": 16, "prefill_bounded": 8}}
NAMES = {"deepseek-v4-flash": "DeepSeek-V4-Flash", "deepseek-v4.1-flash": "DeepSeek-V4.1-Flash"}
SHORT = {"deepseek-v4-flash": "V4-Flash", "deepseek-v4.1-flash": "V4.1-Flash"}
#: the paper's cut of bounded replay (L/2), beside SGLang's
PAPER_CUT = 20


def _b(n: int, places: int = 2) -> str:
    return f"{n / 1e9:.{places}f}B"


def _diff(n: int, card: int | None, places: int = 1) -> str:
    return "–" if card is None else f"{(n / (card * 1e9) - 1) * 100:+.{places}f} %"


def _card(c: int | None) -> str:
    return "–" if c is None else f"{c}B"


def generate(stamp_line: str | None = None) -> str:
    models = {name: load_model(name) for name in NAMES}
    params = {name: parameters(m) for name, m in models.items()}
    v4, v41 = params["deepseek-v4-flash"], params["deepseek-v4.1-flash"]
    m41 = models["deepseek-v4.1-flash"]
    fmt = v41.formats

    def bpp(f: str) -> str:
        return f"{fmt[f]['bytes_per_parameter']:.5f}".rstrip("0").rstrip(".")

    totals = ["| model | total | draft | model card (quoted) | difference |", "|---|---:|---:|---:|---:|"]
    for name, p in params.items():
        card = CARDS[name].get("total")
        totals.append(f"| {NAMES[name]} | {_b(p.total)} | {_b(p.draft)} | {_card(card)} | {_diff(p.total, card, 2)} |")
    rows_per_table = [n // 1_000_000 for n in m41.engram_num_embeddings]
    engram_rows = (m41.engram_max_ngram_size - 1) * m41.engram_n_heads
    active = ["| model, phase | computed | model card (quoted) | difference |", "|---|---:|---:|---:|"]
    labels = {"decode": "decode", "prefill": "prefill, replay off", "prefill_bounded": "prefill, bounded replay"}
    for name, p in params.items():
        for phase, a in p.active.items():
            if a is None:
                continue
            if name == "deepseek-v4-flash" and phase == "prefill":
                continue  # V4 has no replay split: its prefill is its decode less the head
            card = CARDS[name].get(phase)
            active.append(f"| {SHORT[name]}, {labels[phase]} | {_b(a.total)} | {_card(card)} | "
                          f"{_diff(a.total, card)} |")
    dec, bnd = v41.active["decode"], v41.active["prefill_bounded"]
    g, gb = dec.by_group, bnd.by_group
    terms = [("attention", "attention"), ("routed_experts", "routed experts"), ("shared_experts", "shared experts"),
             ("head", "head"), ("engram_proj", "Engram projections"), ("moe_gate", "MoE gate"), ("mhc", "mHC"),
             ("indexer", "indexer"), ("compressor", "compressor"), ("norms", "norms")]
    by_term = ", ".join(f"{label} {g[k] / 1e9:.{4 if g[k] < 1e7 else 3}f}B" for k, label in terms)
    e, k = m41.n_routed_experts, m41.experts_per_token
    bounded = ", ".join(f"{label} {gb[key] / 1e9:.3f}B" for key, label in
                        (("attention", "attention"), ("routed_experts", "routed"), ("shared_experts", "shared"),
                         ("moe_gate", "gate"), ("mhc", "mHC"), ("indexer", "indexer")))
    paper = parameters(m41, late_layer_start=PAPER_CUT).active["prefill_bounded"].total
    card_bounded = CARDS["deepseek-v4.1-flash"]["prefill_bounded"]
    late = bnd.layers
    lines = [
        "# Parameters: total and active per token", "", stamp_line or stamp(SCRIPT), "",
        f"Every count below is written by `python {SCRIPT} --write` from `v41graph.parameters`; the model "
        "cards' figures are quotes. tests/test_docs_from_scripts.py fails when this file and the script "
        "disagree.", "",
        "`v41graph memory`, `layout --json`, `report` and `v41graph.parameters(model)` count parameters",
        "from the module inventory (`model/inventory.py`): one parameter is one element of a checkpoint",
        "weight tensor. Scale tensors are not parameters; their bytes are part of their tensor's storage",
        "format, so each format's bytes per parameter includes them (FP4 e2m1 with one ue8m0 per 32:",
        f"{bpp('fp4_e2m1_ue8m0_g32')} B; FP8 e4m3 with 32×32 ue8m0 blocks: {bpp('fp8_e4m3_b32x32')} B; Engram rows, "
        f"FP8 with one ue8m0 per 32: {bpp('fp8_e4m3_g32')} B; bf16 {bpp('bf16')} B; fp32 {bpp('fp32')} B). The code is",
        "`model/parameters.py`; the figures below are its output.", "",
        "## Total", "",
        "The total is the main model as a model card counts it: embedding, every backbone layer, the",
        "output head and the vision tower. The draft blocks (DSpark in V4.1, the MTP blocks in V4) are",
        "counted apart as `draft`, as DeepSeek's cards count V3's MTP module apart.", "",
        *totals, "",
        f"V4.1-Flash's total holds {_b(v41.by_group['engram_tables'])} of Engram tables "
        f"({len(rows_per_table)} tables of ~{rows_per_table[0]}M rows × {m41.engram_head_dim}) and",
        f"{_b(v41.by_group['routed_experts'])} of routed experts ({e} × {m41.num_layers} layers × 3 × "
        f"{m41.hidden_size} × {m41.moe_intermediate_size}). Both are resident, so they",
        "are in the total; a token reads almost none of them (below).", "",
        "## Active per token", "",
        "What one token reads, by inventory group:", "",
        "* **dense groups** (attention, compressor, indexer, norms, mHC, MoE gate, shared experts,",
        "  Engram projections) — whole, in each layer the token runs through;",
        "* **routed experts** — `experts_per_token / n_routed_experts` of each layer's experts "
        f"({models['deepseek-v4-flash'].experts_per_token} of {models['deepseek-v4-flash'].n_routed_experts}",
        f"  in V4, {k} of {e} in V4.1);",
        "* **embedding** — one row (`hidden_size` values), not the table: a lookup reads one row;",
        f"* **Engram tables** — the rows its hash columns fetch: (max n-gram − 1) × heads = {engram_rows} rows of "
        f"{m41.engram_head_dim}",
        f"  per Engram layer, {g['engram_tables']:,} values for V4.1's {len(m41.engram_layer_ids)} layers;",
        "* **output head** (with the final norm and V4's hc head mix) — whole, where the token makes",
        "  logits;",
        "* **vision tower** — never, for a text token; **draft blocks** — never: the draft is not the model.", "",
        "Phases:", "",
        "* `decode` — every backbone layer, and the head;",
        "* `prefill` — a prompt token in the limit of a long prompt: every backbone layer, no head",
        "  (one logit row per prompt);",
        "* `prefill_bounded` — as `prefill` under decoder SWA bounded replay (V4.1 only): layers before",
        f"  the late-layer start (SGLang's `max(kv_source_layer_ids) + 1` = {late}) run every prompt token;",
        f"  layers {late}–{m41.num_layers - 1} run only each request's last {m41.window} tokens, which is no "
        "parameter per token in the",
        "  limit of a long prompt.", "",
        *active, "",
        f"Term by term for V4.1-Flash decode ({_b(dec.total)}): {by_term}, Engram rows "
        f"{g['engram_tables']:,}, embedding row {g['embedding']:,} (routed experts: {k}/{e} of "
        f"{_b(v41.by_group['routed_experts'])}).", "",
        f"Bounded-replay prefill ({_b(bnd.total)}) keeps the {late} early layers' share of each per-layer group",
        f"({bounded}),",
        f"all of the compressor ({gb['compressor'] / 1e9:.3f}B: its only ratio-1 compressor layers, the KV sources "
        f"{', '.join(map(str, m41.kv_source_ids))}, are early)",
        f"and all of the Engram projections ({gb['engram_proj'] / 1e9:.3f}B: layers "
        f"{' and '.join(map(str, m41.engram_layer_ids))} are early), and no head.", "",
        "Where the figures differ from the cards, the likely reasons are conventions the cards do not",
        "state: whether the embedding table and the output head count as active (counting the whole",
        f"embedding table would add {_b(v4.by_group['embedding'])} / {_b(v41.by_group['embedding'])}; leaving the "
        "head out would take as much off decode),",
        f"and whether the model card rounds down. The {late} / {m41.num_layers} split follows SGLang's cut at layer "
        f"{late}; the",
        f"paper's cut at L/2 = {PAPER_CUT} (`--replay-cut paper`; `parameters(model, late_layer_start={PAPER_CUT})`) "
        f"gives",
        f"{_b(paper)}, {abs((paper / (card_bounded * 1e9) - 1) * 100):.1f} % "
        f"{'under' if paper < card_bounded * 1e9 else 'over'} the card.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write docs/parameters.md")
    args = parser.parse_args(argv)
    text = generate()
    if args.write:
        DOC.write_text(text, encoding="utf-8")
        print(f"wrote {DOC.relative_to(ROOT)}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
