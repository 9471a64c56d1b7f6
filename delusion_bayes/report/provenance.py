"""Provenance of a run: config, versions, seed, data hash, git SHA, diagnostics verdicts.

Values recorded by the stages themselves (posterior attrs, ``index.json`` headlines) win over values
the report looks up at report time; the latter are marked "(at report time)".
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from delusion_bayes.provenance import file_sha256, git_sha
from delusion_bayes.report.frames import find_col, norm
from delusion_bayes.report.rundir import RunDir

log = logging.getLogger(__name__)

PROVENANCE_KEYS = ("git_sha", "data_hash", "seed", "config_hash", "package_version", "version")


def recorded_attrs(run: RunDir) -> dict[str, Any]:
    """Provenance attrs the stages saved: ``study.nc`` attrs and every ``posterior.nc``'s attrs."""
    import xarray as xr

    found: dict[str, Any] = {}
    paths = []
    if run.study_path is not None:
        paths.append(run.study_path)
    models = run.stage("models")
    paths += [models.path / p for p in models.glob("*/posterior.nc")]
    for p in paths:
        try:
            if p.name == "posterior.nc":
                with xr.open_datatree(p) as tree:
                    attrs = dict(tree.attrs)
                    for child in tree.children.values():
                        attrs.update({k: v for k, v in child.attrs.items() if k not in attrs})
            else:
                with xr.open_dataset(p) as ds:
                    attrs = dict(ds.attrs)
        except Exception as err:
            log.warning("cannot read attrs of %s: %s", p, err)
            continue
        for k, v in attrs.items():
            if any(key in norm(k) for key in PROVENANCE_KEYS):
                found.setdefault(k, v)
    return found


@dataclass
class FitVerdict:
    """Diagnostics verdict of one fitted model."""

    model: str
    passed: bool | None  # None: no verdict could be read
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


_TRUE = {"true", "1", "yes", "pass", "passed", "ok"}


def _as_bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float) and not pd.isna(v):
        return bool(v)
    if isinstance(v, str):
        return v.strip().lower() in _TRUE
    return None


def diagnostics(run: RunDir, thresholds: dict[str, float] | None = None) -> Diagnostics:
    """Pass/fail of every fitted model from ``models/<name>/diagnostics.csv``.

    The verdict is the models stage's own (a ``passed``/``pass``/``ok`` column or a headline key);
    only when it wrote none does the report apply ``thresholds`` (the run's ``inference`` config:
    R-hat, ESS, divergences) to the columns it finds, and says so.
    """
    models = run.stage("models")
    out = Diagnostics()
    if not models.ran:
        return out
    th = {
        "rhat_max": float(run.config_value("inference.rhat_max", 1.01)),
        "ess_min": float(run.config_value("inference.ess_min_per_chain", 100.0))
        * float(run.config_value("sampler.chains", 4)),
        "max_divergences": float(run.config_value("inference.max_divergences", 0)),
    }
    th.update(thresholds or {})
    head = models.headline
    gated = set()
    for rel in models.glob("*/gate.json"):
        name = rel.split("/")[0]
        gate = _gate_verdict(models.path / rel, f"models/{rel}", name)
        if gate is not None:
            out.verdicts.append(gate)
            gated.add(name)
    for rel in models.glob("*/diagnostics.csv"):
        name = rel.split("/")[0]
        if name in gated:
            continue
        df = models.csv(rel)
        src = f"models/{rel}"
        verdict = _headline_verdict(head, name)
        if df is None or df.empty:
            out.verdicts.append(FitVerdict(name, verdict, "diagnostics table unreadable", src))
            continue
        pcol = find_col(df, "passed", "pass", "ok", "gate_passed", "all_passed")
        details = _describe(df)
        if pcol is not None:
            flags = [_as_bool(v) for v in df[pcol]]
            known = [f for f in flags if f is not None]
            passed = all(known) if known else verdict
            if passed is False:
                fails = _failed_checks(df, pcol)
                details = (fails + "; " if fails else "") + details
            out.verdicts.append(FitVerdict(name, passed, details, src))
        elif verdict is not None:
            out.verdicts.append(FitVerdict(name, verdict, details, src))
        else:
            passed, why = _threshold_verdict(df, th)
            out.verdicts.append(
                FitVerdict(name, passed, f"{why} (checked by the report against {th})", src)
            )
    return out


def _gate_verdict(path: Path, src: str, name: str) -> FitVerdict | None:
    """The models stage's own gate (``gate.json``: ``{passed, divergences, max_rhat, min_ess,
    ebfmi_min, reasons}``) as a verdict; None when the file is unreadable (the report then
    falls back to ``diagnostics.csv``)."""
    try:
        gate = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        log.warning("cannot read %s: %s", path, err)
        return None
    if not isinstance(gate, dict) or "passed" not in gate:
        log.warning("%s has no 'passed' key; using diagnostics.csv instead", path)
        return None
    parts = []
    for key, fmt in (
        ("max_rhat", "max R-hat {:.3f}"),
        ("min_ess", "min ESS {:.0f}"),
        ("divergences", "{:.0f} divergences"),
        ("ebfmi_min", "min E-BFMI {:.2f}"),
    ):
        v = gate.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and v == v:
            parts.append(fmt.format(v))
    reasons = gate.get("reasons") or []
    if isinstance(reasons, str):
        reasons = [reasons]
    details = ", ".join(parts)
    if reasons:
        details = "; ".join(str(r) for r in reasons) + (f" ({details})" if details else "")
    return FitVerdict(name, _as_bool(gate["passed"]), details or "gate.json", src)


def _headline_verdict(head: dict[str, Any], name: str) -> bool | None:
    node = head.get(name)
    if isinstance(node, dict):
        for k in ("passed", "diagnostics_passed", "ok", "pass"):
            if k in node:
                return _as_bool(node[k])
    for k in (f"{name}_passed", f"{name}.passed", f"diagnostics_passed_{name}"):
        if k in head:
            return _as_bool(head[k])
    return None


def _failed_checks(df: pd.DataFrame, pcol: str) -> str:
    label = find_col(df, "check", "diagnostic", "name", "metric", "quantity")
    if label is None:
        return ""
    bad = df[[_as_bool(v) is False for v in df[pcol]]]
    return "failed: " + ", ".join(str(x) for x in bad[label])


def _describe(df: pd.DataFrame) -> str:
    parts = []
    for names, fmt, agg in (
        (("r_hat", "rhat", "max_rhat", "r_hat_max"), "max R-hat {:.3f}", "max"),
        (("ess_bulk", "min_ess_bulk", "ess_bulk_min"), "min ESS bulk {:.0f}", "min"),
        (("ess_tail", "min_ess_tail", "ess_tail_min"), "min ESS tail {:.0f}", "min"),
        (("divergences", "n_divergences", "diverging"), "{:.0f} divergences", "max"),
        (("ebfmi", "e_bfmi", "min_ebfmi"), "min E-BFMI {:.2f}", "min"),
    ):
        c = find_col(df, *names)
        if c is not None and pd.api.types.is_numeric_dtype(df[c]) and df[c].notna().any():
            parts.append(fmt.format(getattr(df[c], agg)()))
    if not parts:
        label = find_col(df, "check", "diagnostic", "metric", "name")
        value = find_col(df, "value", "observed")
        if label and value:
            parts = [f"{r[label]} = {r[value]}" for _, r in df.head(8).iterrows()]
    return ", ".join(parts) if parts else f"{len(df)} rows"


def _threshold_verdict(df: pd.DataFrame, th: dict[str, float]) -> tuple[bool | None, str]:
    checks = []
    c = find_col(df, "r_hat", "rhat", "max_rhat")
    if c is not None:
        checks.append((df[c].max() <= th["rhat_max"], f"max R-hat {df[c].max():.3f}"))
    c = find_col(df, "ess_bulk", "min_ess_bulk")
    if c is not None:
        checks.append((df[c].min() >= th["ess_min"], f"min ESS bulk {df[c].min():.0f}"))
    c = find_col(df, "ess_tail", "min_ess_tail")
    if c is not None:
        checks.append((df[c].min() >= th["ess_min"], f"min ESS tail {df[c].min():.0f}"))
    c = find_col(df, "divergences", "n_divergences", "diverging")
    if c is not None:
        checks.append((df[c].max() <= th["max_divergences"], f"{df[c].max():.0f} divergences"))
    if not checks:
        return None, "no R-hat/ESS/divergence columns found"
    return all(bool(ok) for ok, _ in checks), ", ".join(w for _, w in checks)


def provenance_rows(run: RunDir) -> list[tuple[str, str]]:
    """``(label, value)`` rows for the provenance section."""
    rec = recorded_attrs(run)
    rows = [("run directory", str(run.path.resolve()))]
    cfg_seed = run.config_value("seed")
    rows.append(("seed (config)", "–" if cfg_seed is None else str(cfg_seed)))
    for k in ("data.seed", "baselines.seed", "sampler.seed"):
        v = run.config_value(k)
        if v is not None:
            rows.append((f"{k}", str(v)))
    for k, v in rec.items():
        rows.append((f"{k} (recorded)", str(v)))
    if not any("data_hash" in norm(k) for k in rec) and run.study_path is not None:
        rows.append(("study.nc sha256 (at report time)", file_sha256(run.study_path)))
    if not any("git" in norm(k) for k in rec):
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
