"""Random plans over every ``Plan`` field, and a compile's every figure as one JSON text: what the
reuse tests (tests/test_reuse.py) and the independent check (tools/check_reuse.py) compare.

A sequence is drawn from a few dozen *recipes* (a model, hardware, cost mode, policies and request
kinds), each used several times with new lengths — so most compiles find their shape seen, as in a
sweep — and with some plans repeated exactly.
"""

from __future__ import annotations

import dataclasses
import json
import random

from v41graph import Plan, Request, load_model
from v41graph.analysis.summaries import cost_summary
from v41graph.costs.hardware import builtin_hardware, load_hardware
from v41graph.costs.measured.tiers import CostMode
from v41graph.errors import V41Error
from v41graph.ir.routing import UNIFORM, Routing
from v41graph.passes import compile as schedule

MODELS = ("deepseek-v4.1-flash", "deepseek-v4-flash")


def _length(r: random.Random) -> int:
    # both sides of the replay window (128) and of a compressor's ratio, and long prompts
    return r.choice((r.randint(1, 300), r.randint(300, 6000), r.randint(6000, 70000)))


def _mapping(r: random.Random, pol: dict) -> tuple[int, int, int]:
    return r.choice(((1, 1, 1), (1, 1, 1), (8, 8, 1), (2, 8, 4), (4, 4, 1), (1, 8, 8)))


def _routing(r: random.Random, pol: dict, v41: bool) -> Routing:
    experts = 384 if v41 else 256  # the routed experts of each model: a loads routing lists one per expert
    return r.choice((UNIFORM, UNIFORM, Routing("power-law", alpha=r.choice((1.01, 1.2, 2.5)), seed=r.randint(0, 9)),
                     Routing("loads", loads=tuple(float(r.randint(0, 9) or 1) for _ in range(experts)))))


#: one drawer per policy field of ``Plan``, in the dataclass's order (tp, ep and dp drawn together, as one
#: mapping); :func:`recipe` walks ``dataclasses.fields(Plan)``, so a field added to the plan without a drawer
#: here fails every reuse test (KeyError) instead of going undrawn
DRAW = {
    "decoder_replay": lambda r, pol, v41: r.choice(("off", "bounded")) if v41 else "off",
    "replay_cut": lambda r, pol, v41: r.choice(("sglang", "paper")),
    "late_layer_start": lambda r, pol, v41: r.choice((None, None, r.randint(1, 40))),
    "replay_window": lambda r, pol, v41: r.choice((None, None, 64, 256)),
    "chunk_tail": lambda r, pol, v41: r.choice(("every", "last")),
    "encoder_restore": lambda r, pol, v41: r.choice(("persisted", "bounded")),
    "fusion": lambda r, pol, v41: r.choice((None, "unfused", "two-pass") + (("single-pass",) * 2 if v41 else ())),
    "engram_residency": lambda r, pol, v41: r.choice(("hbm", "host")),
    "dspark": lambda r, pol, v41: r.choice(("off", "off", "on")),
    "tp": lambda r, pol, v41: _mapping(r, pol),  # sets ep and dp with it
    "ep": None,
    "dp": None,
    "routing": _routing,
    # EPLB's redundant slots: a multiple of ep keeps E + R divisible by it; with ep 1, none
    "ep_redundant": lambda r, pol, v41: r.choice((0, 0, pol["ep"], 2 * pol["ep"])) if pol["ep"] > 1 else 0,
    "shared_overlap": lambda r, pol, v41: r.choice(("engine", "engine", "on", "off")),
    "moe_a2a": lambda r, pol, v41: r.choice(("deepep", "deepep", "none")),
}
#: the plan's fields that are not policies: what runs, and a label that compares equal whatever it says
NOT_POLICIES = ("requests", "label")


def policies(r: random.Random, v41: bool) -> dict:
    """Every policy field of ``Plan`` drawn (derived from the dataclass: see :data:`DRAW`)."""
    pol: dict = {}
    for f in dataclasses.fields(Plan):
        if f.name in NOT_POLICIES or f.name in pol:
            continue
        value = DRAW[f.name](r, pol, v41)
        if f.name == "tp":
            pol["tp"], pol["ep"], pol["dp"] = value
        else:
            pol[f.name] = value
    return pol


def recipe(r: random.Random, hybrid: bool = False) -> dict:
    """A shape: model, hardware, cost mode, policies, and the kinds of its requests."""
    model = r.choice(MODELS)
    v41 = model == MODELS[0]
    pol = policies(r, v41)
    kinds = r.choices(("prefill", "decode", "extend", "extend-lost", "chunks", "verify", "image", "many"),
                      weights=(5, 4, 2, 2, 2, 1, 1, 1), k=r.randint(1, 3))
    if not v41:  # V4-Flash has no vision tower: an image would be refused
        kinds = ["prefill" if k == "image" else k for k in kinds]
    if "verify" in kinds:
        pol["dspark"] = "on"
    if "extend-lost" in kinds and r.random() < 0.8:
        pol["encoder_restore"] = "bounded"  # else the plan is refused (compared as a refusal)
    # op mode refuses these plans (no measured table times the embedding or the Engram hash): a
    # refusal is compared too, but it says little, so few
    mode = "hybrid" if hybrid else r.choices(("sol", "op"), weights=(39, 1))[0]
    return {"model": model, "hardware": r.choice(builtin_hardware()), "cost": mode, "policies": pol,
            "kinds": kinds}


def requests(r: random.Random, kinds) -> list[Request]:
    out: list[Request] = []
    for k in kinds:
        n, m = _length(r), _length(r)
        if k == "prefill":
            out.append(Request.prefill(n))
        elif k == "decode":
            out.append(Request.decode(n, copies=r.choice((1, 1, 4, 64))))
        elif k in ("extend", "extend-lost"):
            out.append(Request.extend(n, m, swa_cached=k == "extend"))
        elif k == "chunks":
            out += [Request.chunk(n + m, 0, n), Request.chunk(n + m, n, m)]
        elif k == "verify":
            out.append(Request.verify(n, r.randint(2, 5)))
        elif k == "image":
            out.append(Request.prefill(n + 2000, images=1))
        else:  # many requests: the rows become tables (ir/rows.py)
            out += [Request.decode(n + 97 * i) for i in range(40)]
    return out


def sequence(r: random.Random, count: int, *, recipes: int = 40, hybrid: int = 1) -> list[dict]:
    """``count`` plans from ``recipes`` recipes (``hybrid`` of them in hybrid mode, one plan each:
    a hybrid compile takes seconds), one in ten repeating an earlier plan exactly."""
    kinds = [recipe(r) for _ in range(recipes)]
    out = [{**recipe(r, hybrid=True), "requests": None} for _ in range(hybrid)]
    while len(out) < count:
        if out and r.random() < 0.1:
            out.append(r.choice(out))
        else:
            base = r.choice(kinds)
            out.append({**base, "requests": requests(r, base["kinds"])})
    for item in out:
        if item["requests"] is None:
            item["requests"] = requests(r, item["kinds"])
    r.shuffle(out)
    return out


def plan_of(item: dict) -> Plan:
    return Plan(item["requests"], **item["policies"])


def figures(item: dict, summary: bool = True) -> str:
    """Every figure of the compile of ``item`` as JSON: the schedule and per-GPU memory
    (``cost --json``; not without ``summary``), each node's time and finish; or the refusal."""
    model = load_model(item["model"])
    hw = load_hardware(item["hardware"])
    try:
        plan = plan_of(item)
        compiled = schedule(model, plan, hw, cost=CostMode(item["cost"]))
        slots = compiled.graph.annotations["schedule"]
        nodes = [(n, slots[n].finish, slots[n].finish - slots[n].start, slots[n].sol.bound) for n in slots]
        return json.dumps({"summary": cost_summary(model, plan, compiled, hw) if summary else None,
                           "nodes": nodes}, sort_keys=True)
    except V41Error as exc:
        return json.dumps({"error": f"{type(exc).__name__}: {exc}"})


def describe(item: dict) -> str:
    return (f"{item['model']} on {item['hardware']} ({item['cost']}): {item['policies']}, "
            f"{[(q.kind, q.cached, q.new, q.copies) for q in item['requests']][:6]}")
