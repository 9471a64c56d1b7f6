"""PSIS-LOO policy of the models stage: which units a fit is left out by, its LOO table, the
comparison of a model's variants per unit, and the per-model listing when nothing is compared.
The stage writes what these return (``loo.csv``, ``comparison.csv``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .diagnostics import LOO_UNITS, loo_var


def loo_units(dt: Any, unit: str) -> dict[str, str]:
    """``{unit: log-likelihood variable}`` of a fit, the configured ``unit``
    (``inference.loo_unit``) first; a unit whose variable is the configured one's (a consensus
    model's ``y`` serves both) is dropped, so nothing is written twice."""
    out: dict[str, str] = {}
    for u in [unit, *(x for x in LOO_UNITS if x != unit)]:
        var = loo_var(dt, u)
        if var is not None and var not in out.values():
            out[u] = var
    return out


def loo_results(dt: Any, units: dict[str, str], unit: str) -> tuple[Any, pd.DataFrame | None, list]:
    """PSIS-LOO of ``dt`` per left-out unit of ``units`` (:func:`loo_units`): the configured
    ``unit``'s result (or None), the table of every unit's (``loo.csv``; None without one) and
    a note per unit that failed."""
    from .diagnostics import loo, loo_table
    from .psis import relative_eff

    elpd, rows, notes = None, [], []
    r_eff = relative_eff(dt["posterior"]) if units else None  # one per fit, as ArviZ
    for u, var in units.items():
        try:
            res = loo(dt, var_name=var, r_eff=r_eff)
        except Exception as err:  # noqa: BLE001
            notes.append(f"LOO ({u}) failed: {type(err).__name__}: {err}")
            continue
        rows.append(loo_table(res, str(dt.attrs.get("model")), unit=u))
        if u == unit:
            elpd = res
    return elpd, (pd.concat(rows, ignore_index=True) if rows else None), notes


def compare_variants(
    fits: dict[str, Any], units: list[dict[str, str]], unit: str
) -> tuple[list[tuple[str, str, pd.DataFrame]], list[str]]:
    """``az.compare`` (PSIS-LOO, stacking) of ``fits`` (label -> fit, each with its
    :func:`loo_units` in ``units``) per unit every fit has with the same variable: ``[(unit,
    file name, table)]`` (``comparison.csv`` for the configured ``unit``,
    ``comparison_by_<unit>.csv`` for another) and a note per unit that cannot be compared."""
    from .diagnostics import compare_fits

    out, notes = [], []
    for u in dict.fromkeys(u for per_fit in units for u in per_fit):
        var = {per_fit.get(u) for per_fit in units}
        if None in var or len(var) > 1:
            notes.append(f"no comparison per {u}: log-likelihood {sorted(map(str, var))}")
            continue
        table = compare_fits(fits, var_name=var.pop())
        table.insert(0, "unit", u)
        out.append((u, "comparison.csv" if u == unit else f"comparison_by_{u}.csv", table))
    return out, notes


def loo_per_model(results: dict[str, tuple[Any, str]]) -> pd.DataFrame | None:
    """Without a comparison: each fit's PSIS-LOO (``{model: (loo result, unit)}``, the fits
    whose likelihood is comparable) in one table with a note saying nothing was compared."""
    from .diagnostics import loo_table

    rows = [
        loo_table(elpd, n, unit=u).rename(columns={"elpd_loo": "elpd"})
        for n, (elpd, u) in results.items()
        if elpd is not None
    ]
    if not rows:
        return None
    table = pd.concat(rows, ignore_index=True)
    table["note"] = "inference.compare is false: PSIS-LOO per model, no az.compare"
    return table
