"""``simulate --cost fpm``: the FPM table a simulation's steps are costed from.

Without ``--fpm-table`` the built-in table of the simulated deployment is used: the one whose
identity has the ``--hardware`` GPU, the ``--tp`` degree and the ``--fpm-replay`` decoder replay
policy. Admission is respected as in ``v41graph fpm``: an unadmitted table needs
``--allow-unadmitted``. The estimator is the one leave-one-out chooses per phase unless
``--estimator`` names another.
"""

from __future__ import annotations

import argparse

from ..costs.fpm.load import BUILTIN, load_table
from ..costs.fpm.table import TableError
from ..ir.plan import DECODER_REPLAY


def add_fpm_serving_options(p: argparse.ArgumentParser) -> None:
    from ..costs.fpm.estimators import CANDIDATES
    g = p.add_argument_group("FPM step costs (--cost fpm)")
    g.add_argument("--fpm-table", default=None, metavar="TABLE", help="built-in FPM table or folder (default: "
                   "the built-in table of --hardware, --tp and --fpm-replay)")
    g.add_argument("--fpm-replay", choices=DECODER_REPLAY, default="off", help="decoder replay of the default "
                   "table (default: off)")
    g.add_argument("--allow-unadmitted", action="store_true", help="use a table not admitted for prediction")
    g.add_argument("--serving-check", action="store_true", help="instead of --rate/--trace, simulate the "
                   "stand-in of AISimulate's GB300 core scope and print the means beside the observed and "
                   "AISimulate's (with --cost fpm)")
    g.add_argument("--estimator", choices=("chosen",) + CANDIDATES, default="chosen", help="how in-domain "
                   "shapes that are not measured points are valued (default: chosen by leave-one-out)")


def _builtin():
    """The built-in whole-forward tables that hold points, in BUILTIN's order."""
    return [t for t in (load_table(name) for name in BUILTIN) if t.points]


def _have(tables) -> str:
    """The tables there are, for a refusal's one line."""
    return ", ".join(f"{t.name} ({t.identity.gpu} tp{t.identity.tp} replay {t.identity.decoder_replay})"
                     for t in tables)


def default_table(gpu: str, tp: int, replay: str):
    """The built-in table of (gpu, tp, decoder replay), or a one-line error listing what exists."""
    tables = _builtin()
    for t in tables:
        if (t.identity.gpu, t.identity.tp, t.identity.decoder_replay) == (gpu, tp, replay):
            return t
    have = _have(tables)
    raise TableError(f"simulate --cost fpm: no built-in FPM table for {gpu} tp{tp} decoder replay {replay!r} "
                     f"(have: {have}); pass --fpm-table")


def admitted_table(gpu: str, tp: int):
    """The admitted built-in table of (gpu, tp, decoder replay off), or None: where one exists the serving
    default is FPM (:func:`~v41graph.analysis.basis.serving_default`). No built-in table is admitted yet.

    >>> admitted_table("gb300", 4) is None      # the GB300 tables are embedded but not admitted
    True
    """
    for t in _builtin():
        if (t.identity.gpu, t.identity.tp, t.identity.decoder_replay) == (gpu, tp, "off") and t.admitted:
            return t
    return None


def fpm_basis_record(coster, chosen: str, why: str | None = None) -> dict:
    """The basis record of FPM step costs: the table and the identity it stands on."""
    from ..analysis.basis import basis_record
    i = coster.table.identity
    return basis_record("fpm", chosen=chosen, why=why,
                        identity=f"{coster.table.name} ({i.gpu} TP{i.tp}, decoder replay "
                        f"{i.decoder_replay}, {i.admission})")


def runtime_table(gpu: str, tp: int, replay: str):
    """The built-in table the runtime basis is fitted to: (gpu, tp, replay) if there is one, else the GPU's
    table of that replay policy nearest in TP, else a one-line error listing what exists."""
    tables = _builtin()
    mine = [t for t in tables if t.identity.gpu == gpu and t.identity.decoder_replay == replay]
    if mine:
        return min(mine, key=lambda t: (abs((t.identity.tp or 1) - tp), t.name))
    have = _have(tables)
    raise TableError(f"simulate --cost runtime: no whole-forward table for {gpu} with decoder replay {replay!r} to fit "
                     f"the engine's own cost to (have: {have}); pass --fpm-table")


def runtime_default_table(model, gpu: str, tp: int, ep: int, dp: int, replay: str):
    """(the built-in table ``simulate``'s default fits the runtime basis to, or None; a note on a table
    of this GPU and TP left out, or None). A table is taken where its identity is the simulated
    deployment: the model, the GPU, TP, EP and DP, the decoder replay, and SGLang (the engine whose
    scheduler ``simulate`` runs). Today that is ``aisimulate-gb300-off-v1`` for V4.1-Flash on gb300
    TP4 (``-on-v1`` with ``--fpm-replay bounded``); ``aisimulate-gb200-calibration-v1`` is vLLM's, in
    eager mode, so gb200 stays on hybrid.

    >>> from v41graph import load_model
    >>> t, _ = runtime_default_table(load_model(), "gb300", 4, 1, 1, "off"); t.name
    'aisimulate-gb300-off-v1'
    >>> runtime_default_table(load_model(), "gb200", 4, 1, 1, "off")[1]
    "the whole-forward table of gb200 TP4 (aisimulate-gb200-calibration-v1) is vllm's, not SGLang's"
    >>> runtime_default_table(load_model("deepseek-v4-flash"), "gb300", 4, 1, 1, "off")
    (None, None)
    """
    note = None
    for t in _builtin():
        i, name = t.identity, t.name
        if (i.gpu, i.tp, i.ep or 1, i.dp or 1, i.decoder_replay) != (gpu, tp, ep, dp, replay):
            continue
        if i.model.split("@")[0].rsplit("/", 1)[-1].lower() != model.name:
            continue
        if i.backend != "sglang":
            note = note or f"the whole-forward table of {gpu} TP{tp} ({name}) is {i.backend}'s, not SGLang's"
            continue
        return t, None
    return None, note


def runtime_step_coster(args: argparse.Namespace, model, hardware, mapping, table=None):
    """The runtime-basis step coster of a ``simulate`` command line on ``mapping`` (the deployment's
    degrees): fitted to ``table`` (one already chosen), ``--fpm-table`` or the GPU's table."""
    from ..analysis.forwards.runtime_step_cost import runtime_coster
    m = mapping
    if table is None:
        table = load_table(args.fpm_table) if args.fpm_table else runtime_table(hardware.name, m.tp, args.fpm_replay)
    return runtime_coster(model, hardware, table, tp=m.tp, ep=m.ep, dp=m.dp, bucket=not args.exact_steps)


def runtime_basis_record(coster, chosen: str, why: str | None = None) -> dict:
    """The basis record of runtime step costs: the table the terms are fitted to, and the fit's error."""
    from ..analysis.basis import basis_record
    f = coster.fit
    return basis_record("runtime", chosen=chosen, why=why, identity=f"{f.table} ({f.gpu} TP{f.tp}; {f.kernel} kernels; "
                        f"leave-one-out MAPE {f.loo.mape:.2f} % over {f.points} forwards)")


def fpm_coster(args: argparse.Namespace, model, hardware, mapping, table=None):
    """The FPM step coster of a ``simulate`` command line on ``mapping`` (the deployment's degrees;
    ``table``: one already chosen); a step outside the table is priced by the runtime basis fitted to the
    same table (tier ``extrapolated``)."""
    from ..analysis.forwards.fpm_reference import sol_reference
    from ..analysis.forwards.fpm_step_cost import FpmStepCoster
    from ..analysis.forwards.runtime_step_cost import runtime_coster
    from ..costs.fpm.predict import refuse_unadmitted
    from ..costs.fpm.select import choose
    m = mapping
    if table is None:
        table = load_table(args.fpm_table) if args.fpm_table else default_table(hardware.name, m.tp, args.fpm_replay)
    refuse_unadmitted(table, args.allow_unadmitted)
    sol = sol_reference(table.identity, model=model)
    if args.estimator == "chosen":
        estimator = choose(table, sol).chosen
    else:
        estimator = {"prefill": args.estimator, "decode": args.estimator}
    fallback = runtime_coster(model, hardware, table, tp=m.tp, ep=m.ep, dp=m.dp, reference=sol)
    return FpmStepCoster(table, model, hardware, tp=m.tp, ep=m.ep, dp=m.dp,
                         allow_unadmitted=args.allow_unadmitted, estimator=estimator, sol=sol, fallback=fallback)


def serving_check_output(args: argparse.Namespace, coster) -> tuple[dict, object]:
    """(JSON-ready comparison, its text renderer) of ``--serving-check``."""
    from ..analysis.forwards.fpm_serving_check import serving_check
    from ..render.text.fpm_serving import serving_check_text
    replay = "off" if coster.decoder_replay == "off" else "on"
    return serving_check(coster, replay, overlap=not args.disable_overlap_schedule), serving_check_text


__all__ = ["add_fpm_serving_options", "admitted_table", "default_table", "fpm_basis_record", "fpm_coster",
           "runtime_basis_record", "runtime_default_table", "runtime_step_coster", "runtime_table",
           "serving_check_output"]
