"""One figure style for every stage (:func:`style`, :func:`apply_style`, :func:`save_figure`):
readable in greyscale (series differ in line style and marker too), fonts embedded, white
background. matplotlib is imported inside the functions."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

#: grey levels with distinct luminance (black .. light grey), used in this order for series
GREYS: tuple[str, ...] = ("#000000", "#5a5a5a", "#9a9a9a", "#2e2e2e", "#787878", "#b8b8b8")
#: line styles paired with :data:`GREYS` so that series stay distinct in greyscale print
LINESTYLES: tuple[Any, ...] = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P")
#: fill colour of posterior bands
BAND = "#c8c8c8"
#: one accent for warnings/highlights (dark orange: dark enough to print as a mid grey)
ACCENT = "#b35900"

# fmt: off
RC: dict[str, Any] = {
    "figure.facecolor": "white", "figure.dpi": 100,
    "savefig.dpi": 150, "savefig.bbox": "tight", "savefig.facecolor": "white",
    "font.family": "DejaVu Sans", "font.size": 9,
    "axes.titlesize": 9, "axes.labelsize": 9, "axes.edgecolor": "#333333", "axes.linewidth": 0.8,
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
    "grid.color": "#e3e3e3", "grid.linewidth": 0.6, "axes.axisbelow": True,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "legend.fontsize": 8, "legend.frameon": False,
    "lines.linewidth": 1.4, "lines.markersize": 4.5, "image.cmap": "Greys",
    # labels are data: "Cost $\\foo$ tier" must print as written, not fail as mathtext
    "text.parse_math": False,
    # TrueType fonts in PDF/PS: editable text, accepted by journals
    "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none",
}
# fmt: on


def _rc() -> dict[str, Any]:
    from cycler import cycler

    cycle = cycler(color=list(GREYS)) + cycler(linestyle=list(LINESTYLES))
    return {**RC, "axes.prop_cycle": cycle + cycler(marker=list(MARKERS))}


def apply_style() -> None:
    """Set the package style globally (``matplotlib.rcParams``)."""
    import matplotlib as mpl

    mpl.rcParams.update(_rc())


@contextlib.contextmanager
def style() -> Iterator[None]:
    """Context manager: the package style inside the block, the caller's rcParams after it."""
    import matplotlib as mpl

    with mpl.rc_context(_rc()):
        yield


@contextlib.contextmanager
def plain_text() -> Iterator[None]:
    """Context manager: text created inside the block is drawn as written, never as mathtext
    (a model named ``Cost $x_1$`` keeps its dollars), for figures drawn outside :func:`style`."""
    import matplotlib as mpl

    with mpl.rc_context({"text.parse_math": False}):
        yield


def mpl_escape(name: object) -> str:
    """``name`` as a matplotlib label that draws as written where mathtext is on (``$`` escaped;
    ``_``, ``^`` and ``\\`` are literal outside ``$...$``); unchanged where it is off (the
    package :func:`style`), since there an escape would show. For figures that need mathtext
    elsewhere (log tick labels), where :func:`plain_text` cannot be used."""
    import matplotlib as mpl

    text = str(name)
    return text.replace("$", r"\$") if mpl.rcParams["text.parse_math"] else text


#: the longest name drawn in full in a figure label (:func:`short_label`)
LABEL_CHARS = 40


def short_label(name: object, n: int = LABEL_CHARS) -> str:
    """``name`` for a figure label next to a point: as written up to ``n`` characters, else its
    start and end around an ellipsis (the full name is in the figure's table). Only where a long
    name would squeeze the plot; axes, legends and tables keep the full name."""
    text = str(name)
    if len(text) <= n:
        return text
    head = (n - 1) * 2 // 3
    return text[:head] + "\u2026" + text[len(text) - (n - 1 - head) :]


def series_style(i: int) -> dict[str, Any]:
    """Keyword arguments (color, linestyle, marker) for the ``i``-th series of a plot."""
    n = len(GREYS)
    return {"color": GREYS[i % n], "linestyle": LINESTYLES[i % n], "marker": MARKERS[i % n]}


def shared_legend(fig: Any, axes: Any, **kwargs: Any) -> dict[str, Any]:
    """One legend for the whole figure: every label of ``axes`` once (its first handle), in one
    row unless ``ncol`` is given; ``kwargs`` go to ``fig.legend``. Returns label -> handle."""
    handles: dict[str, Any] = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), **{"ncol": len(handles), **kwargs})
    return handles


def save_figure(
    fig: Any, stem: str | Path, formats: Sequence[str] = ("png", "pdf"), dpi: int = 150
) -> list[Path]:
    """Save ``fig`` (a matplotlib Figure or an ArviZ ``PlotCollection``) as ``stem.<fmt>`` for
    every format (parent folders created), close it and return the paths."""
    import matplotlib.pyplot as plt

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        # fixed metadata: the same figure gives the same PDF bytes on every run
        metadata = {"CreationDate": None} if fmt == "pdf" else None
        fig.savefig(path, format=fmt, dpi=dpi, metadata=metadata, bbox_inches="tight")
        paths.append(path)
    plt.close(fig if hasattr(fig, "canvas") else "all")
    return paths
