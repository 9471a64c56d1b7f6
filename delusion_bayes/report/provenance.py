"""Provenance of a run (config, versions, seeds, data hash, git SHA) and the diagnostics verdict
of every fitted model, as the stages recorded them (values looked up at report time instead are
marked "(at report time)").
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from delusion_bayes.provenance import file_sha256, git_sha
from delusion_bayes.report.sources import RunDir

log = logging.getLogger(__name__)

PROVENANCE_KEYS = ("git_sha", "data_hash", "seed", "config_hash", "package_version", "version")
#: the numbers of a diagnostics gate shown beside its verdict
GATE_FORMATS = {
    "max_rhat": "max R-hat {:.3f}",
    "min_ess": "min ESS {:.0f}",
    "divergences": "{:.0f} divergences",
    "ebfmi_min": "min E-BFMI {:.2f}",
}


@dataclass
class FitVerdict:
    """Diagnostics verdict of one fitted model."""

    model: str
    passed: bool | None  # None: the fit wrote no gate.json
    details: str
    source: str


@dataclass
class Diagnostics:
    verdicts: list[FitVerdict] = field(default_factory=list)

    @property
    def failed(self) -> list[FitVerdict]:
        return [v for v in self.verdicts if v.passed is False]

    @property
    def unknown(self) -> list[FitVerdict]:
        return [v for v in self.verdicts if v.passed is None]


def gate_numbers(gate: dict[str, Any], keys: tuple[str, ...] = tuple(GATE_FORMATS)) -> str:
    """``max R-hat 1.080, min ESS 40, ...``: the ``keys`` of ``gate`` that hold a number."""
    numbers = {k: gate.get(k) for k in keys}
    return ", ".join(
        GATE_FORMATS[k].format(v)
        for k, v in numbers.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and v == v
    )


def gate_details(gate: dict[str, Any]) -> str:
    """``reasons (max R-hat 1.080, min ESS 40, 2 divergences, min E-BFMI 0.90)``."""
    details = gate_numbers(gate)
    reasons = gate.get("reasons") or []
    if reasons:
        details = "; ".join(map(str, reasons)) + (f" ({details})" if details else "")
    return details or "gate.json"


def diagnostics(run: RunDir) -> Diagnostics:
    """The gate verdict of every fitted model (``models/<fit>/gate.json``)."""
    out, key = Diagnostics(), "models/{fit}/gate.json"
    for fit in run.fits:
        gate, src = run.table(key, fit), run.source(key, fit)
        if gate is None:
            out.verdicts.append(FitVerdict(fit, None, f"no {src}", src))
        else:
            out.verdicts.append(FitVerdict(fit, bool(gate["passed"]), gate_details(gate), src))
    return out


def recorded_attrs(run: RunDir) -> dict[str, Any]:
    """Provenance attrs the stages saved: ``study.nc`` attrs and every ``posterior.nc``'s."""
    import xarray as xr

    found: dict[str, Any] = {}
    sources = [run.study.attrs] if run.study is not None else []
    for fit in run.fits:
        path = run.path / run.source("models/{fit}/posterior.nc", fit)
        if path.is_file():
            with xr.open_datatree(path) as tree:
                sources.append(dict(tree.attrs))
    for attrs in sources:
        for k, v in attrs.items():
            if any(key in k.lower() for key in PROVENANCE_KEYS):
                found.setdefault(k, v)
    return found


def provenance_rows(run: RunDir) -> list[tuple[str, str]]:
    """``(label, value)`` rows for the provenance section."""
    rec = recorded_attrs(run)
    rows = [("run directory", str(run.path.resolve()))]
    cfg_seed = run.config_value("seed")
    rows.append(("seed (config)", "–" if cfg_seed is None else str(cfg_seed)))
    for k in ("data.seed", "baselines.seed", "sampler.seed"):
        v = run.config_value(k)
        if v is not None:
            rows.append((k, str(v)))
    rows += [(f"{k} (recorded)", str(v)) for k, v in rec.items()]
    if not any("data_hash" in k for k in rec) and run.study_path is not None:
        rows.append(("study.nc sha256 (at report time)", file_sha256(run.study_path)))
    if not any("git" in k for k in rec):
        rows.append(("git SHA (at report time)", git_sha() or "not a git checkout"))
    if run.overrides:
        rows.append(("command-line overrides", " ".join(run.overrides)))
    rows.append(("config file", run.rel(run.config_path) if run.config_path else "none saved"))
    return rows


def config_text(run: RunDir) -> str:
    """The resolved config as YAML text (or a note when the run saved none)."""
    if run.config_path is None:
        return "# no config.yaml in this run directory"
    return run.config_path.read_text()


def headline_json(run: RunDir) -> str:
    heads = {n: s.headline for n, s in run.stages.items() if s.headline}
    return json.dumps(heads, indent=2, default=str)
