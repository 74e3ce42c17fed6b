"""What a simulation's steps are priced on: the basis, the whole-forward table and the step coster.

``simulate`` takes the most realistic basis that covers the deployment (:func:`choose_step_basis`):
FPM where an admitted built-in table of the GPU and TP exists (none is admitted yet), else the runtime
basis where a built-in SGLang table of the deployment exists to fit it to
(:func:`runtime_default_table`), else the graph's hybrid or SOL (:func:`~..basis.serving_basis`).
``--cost fpm`` without ``--fpm-table`` takes the built-in table of the GPU, TP and decoder replay
(:func:`default_table`), ``--cost runtime`` the GPU's table of that replay nearest in TP
(:func:`runtime_table`). Admission is respected as in ``v41graph fpm``: an unadmitted table needs
``allow_unadmitted``. The FPM estimator is the one leave-one-out chooses per phase unless named.

>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> from v41graph.model.sharding import Mapping
>>> b = choose_step_basis(load_model(), load_hardware("gb300"), Mapping(tp=4), StepOptions())
>>> b.basis.basis, b.table.name, type(b.coster).__name__
('runtime', 'aisimulate-gb300-off-v1', 'RuntimeStepCoster')
>>> b.record()["identity"]   # doctest: +ELLIPSIS
'aisimulate-gb300-off-v1 (gb300 TP4; sol kernels; leave-one-out MAPE ... % over ... forwards)'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...costs.fpm.load import BUILTIN, load_table
from ...costs.fpm.table import TableError
from ...costs.measured.tiers import TRANSFERS
from ...errors import CostError
from ..basis import ServingBasis, basis_record, serving_basis


@dataclass(frozen=True)
class StepOptions:
    """How the command asks for its step costs: ``cost`` (None: the serving default), the hybrid mode's
    ``transfers`` and ``measured_root``, the whole-forward table (``fpm_table``: a built-in name or a folder;
    None: the deployment's), the default table's decoder ``replay``, ``allow_unadmitted``, the FPM
    ``estimator`` (``chosen``: by leave-one-out) and ``bucket`` (round step shapes up to buckets)."""

    cost: str | None = None
    transfers: tuple[str, ...] = TRANSFERS
    measured_root: str | None = None
    fpm_table: str | None = None
    replay: str = "off"
    allow_unadmitted: bool = False
    estimator: str = "chosen"
    bucket: bool = True


def _builtin():
    """The built-in whole-forward tables that hold points, in BUILTIN's order."""
    return [t for t in (load_table(name) for name in BUILTIN) if t.points]


def _have(tables) -> str:
    """The tables there are, for a refusal's one line."""
    return ", ".join(f"{t.name} ({t.identity.gpu} tp{t.identity.tp} replay {t.identity.decoder_replay})"
                     for t in tables)


def default_table(gpu: str, tp: int, replay: str):
    """The built-in table of (gpu, tp, decoder replay), or a one-line error listing what exists.

    >>> default_table("gb300", 4, "bounded").name
    'aisimulate-gb300-on-v1'
    """
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


def runtime_table(gpu: str, tp: int, replay: str):
    """The built-in table the runtime basis is fitted to: (gpu, tp, replay) if there is one, else the GPU's
    table of that replay policy nearest in TP, else a one-line error listing what exists.

    >>> runtime_table("gb300", 8, "off").name
    'aisimulate-gb300-off-v1'
    """
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


def fpm_basis_record(coster, chosen: str, why: str | None = None) -> dict[str, Any]:
    """The basis record of FPM step costs: the table and the identity it stands on."""
    i = coster.table.identity
    return basis_record("fpm", chosen=chosen, why=why,
                        identity=f"{coster.table.name} ({i.gpu} TP{i.tp}, decoder replay "
                        f"{i.decoder_replay}, {i.admission})")


def runtime_basis_record(coster, chosen: str, why: str | None = None) -> dict[str, Any]:
    """The basis record of runtime step costs: the table the terms are fitted to, and the fit's error."""
    f = coster.fit
    return basis_record("runtime", chosen=chosen, why=why, identity=f"{f.table} ({f.gpu} TP{f.tp}; {f.kernel} kernels; "
                        f"leave-one-out MAPE {f.loo.mape:.2f} % over {f.points} forwards)")


def runtime_step_coster(model, hardware, mapping, options: StepOptions, table=None):
    """The runtime-basis step coster on ``mapping`` (the deployment's degrees): fitted to ``table`` (one
    already chosen), ``options.fpm_table`` or the GPU's table (:func:`runtime_table`)."""
    from ..forwards.runtime_step_cost import runtime_coster
    m = mapping
    if table is None:
        table = (load_table(options.fpm_table) if options.fpm_table
                 else runtime_table(hardware.name, m.tp, options.replay))
    return runtime_coster(model, hardware, table, tp=m.tp, ep=m.ep, dp=m.dp, bucket=options.bucket)


def fpm_step_coster(model, hardware, mapping, options: StepOptions, table=None):
    """The FPM step coster on ``mapping`` (``table``: one already chosen, else ``options.fpm_table`` or the
    deployment's built-in one); a step outside the table is priced by the runtime basis fitted to the same
    table (tier ``extrapolated``)."""
    from ...costs.fpm.predict import refuse_unadmitted
    from ...costs.fpm.select import choose
    from ..forwards.fpm_reference import sol_reference
    from ..forwards.fpm_step_cost import FpmStepCoster
    from ..forwards.runtime_step_cost import runtime_coster
    m = mapping
    if table is None:
        table = (load_table(options.fpm_table) if options.fpm_table
                 else default_table(hardware.name, m.tp, options.replay))
    refuse_unadmitted(table, options.allow_unadmitted)
    sol = sol_reference(table.identity, model=model)
    if options.estimator == "chosen":
        estimator = choose(table, sol).chosen
    else:
        estimator = {"prefill": options.estimator, "decode": options.estimator}
    fallback = runtime_coster(model, hardware, table, tp=m.tp, ep=m.ep, dp=m.dp, reference=sol)
    return FpmStepCoster(table, model, hardware, tp=m.tp, ep=m.ep, dp=m.dp,
                         allow_unadmitted=options.allow_unadmitted, estimator=estimator, sol=sol, fallback=fallback)


@dataclass(frozen=True)
class StepBasis:
    """The basis a simulation is priced on (:class:`~..basis.ServingBasis`; its ``why`` with the note on a
    table left out), the default's whole-forward table (None unless the default chose one) and the step
    coster (None: the graph's, built by the simulation on ``basis.mode``)."""

    basis: ServingBasis
    table: Any = None
    coster: Any = None

    def record(self, coverage: dict | None = None) -> dict[str, Any]:
        """The JSON basis record: the table and fit of FPM or runtime, else the graph basis with its
        ``coverage`` (the simulation's)."""
        name, _, chosen, why = self.basis
        if name == "runtime":
            return runtime_basis_record(self.coster, chosen, why)
        if self.coster is not None:
            return fpm_basis_record(self.coster, chosen, why)
        return basis_record(name, coverage=coverage, chosen=chosen, why=why)


def choose_step_basis(model, hardware, mapping, options: StepOptions, *, disagg: bool = False) -> StepBasis:
    """The basis and step coster of a simulation of ``model`` on ``mapping`` (see the module doc); ``disagg``:
    prefill and decode on separate instances (graph step costs only, never a default table)."""
    default = options.cost is None and not disagg
    admitted = admitted_table(hardware.name, mapping.tp) if default else None
    table, note = (runtime_default_table(model, hardware.name, mapping.tp, mapping.ep, mapping.dp, options.replay)
                   if default and admitted is None else (None, None))
    basis = serving_basis(options.cost, hardware.name, transfers=options.transfers,
                          measured_root=options.measured_root, fpm_covers=admitted is not None,
                          runtime_table=None if table is None else table.name)
    if note is not None and basis.why is not None:
        basis = basis._replace(why=f"{basis.why}; {note}")
    if basis.basis == "fpm":
        return StepBasis(basis, table, fpm_step_coster(model, hardware, mapping, options, table=admitted))
    if basis.basis == "runtime":
        if disagg:
            raise CostError("simulate --cost runtime: prices one instance; --disagg needs graph step costs")
        return StepBasis(basis, table, runtime_step_coster(model, hardware, mapping, options, table))
    return StepBasis(basis, table)


__all__ = ["StepBasis", "StepOptions", "admitted_table", "choose_step_basis", "default_table", "fpm_basis_record",
           "fpm_step_coster", "runtime_basis_record", "runtime_default_table", "runtime_step_coster",
           "runtime_table"]
