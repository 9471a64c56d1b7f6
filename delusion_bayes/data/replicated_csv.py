"""A replicated study as a folder of tidy CSV files, and the template ``init-study --replicated``
writes (issue 50).

==================== ========================================================== ==========
file                 columns                                                    required
==================== ========================================================== ==========
``ratings.csv``      ``rater, model, conversation, turn, item, score``          yes
``items.csv``        ``item, scale, min, max`` [, ``cap``, ``description``]     yes
``conversations.csv`` ``model, conversation`` [, ``prompt, category, persona,    no
                     seed``]
``raters.csv``       ``rater, kind`` (``human`` or ``judge``)                   no
==================== ========================================================== ==========

Names are kept exactly as written. An empty ``score`` is a missing rating (NaN, counted in
``attrs["n_missing_ratings"]``); every other problem is a :class:`~delusion_bayes.data.
csv_format.StudyFormatError` naming the file, row, column and value and what was expected: a
rating of an item ``items.csv`` does not declare, a score outside its item's scale, a row
without a conversation id, a conversation ``conversations.csv`` does not list. Nothing is dropped.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from .csv_format import (
    StudyFormatError,
    check_duplicates,
    check_name_column,
    file_row,
    new_study_folder,
    parse_numbers,
    read_csv_table,
)
from .replicated import (
    CONVERSATION,
    CONVERSATION_COORDS,
    CONVERSATIONS_COLUMNS,
    ITEM,
    ITEM_SCALES,
    ITEMS_COLUMNS,
    KIND,
    MODEL,
    RATER,
    RATER_KINDS,
    RATINGS_COLUMNS,
    TURN,
    item_scale_coords,
    validate_replicated,
)

TEMPLATE_README = Path(__file__).resolve().parent / "template_replicated" / "README.md"


def _check_columns(path: Path, df: pd.DataFrame, allowed: tuple[str, ...]) -> None:
    """Refuse columns the format does not read (they would be dropped silently)."""
    extra = [c for c in df.columns if c not in allowed]
    if extra:
        raise StudyFormatError(
            f"{path}: unexpected column(s) {extra}; this file holds only {list(allowed)} "
            "(nothing is dropped silently: remove them or move them to the file that reads them)."
        )


def _items(path: Path) -> pd.DataFrame:
    """``items.csv``: each item's scale, checked row by row."""
    df = read_csv_table(path, list(ITEMS_COLUMNS))
    _check_columns(path, df, (*ITEMS_COLUMNS, "cap", "description"))
    check_name_column(path, df, "item")
    check_duplicates(path, df, ["item"])
    lo, hi = parse_numbers(path, df, "min"), parse_numbers(path, df, "max")
    cap = parse_numbers(path, df, "cap") if "cap" in df else np.full(len(df), np.nan)
    for i, scale in enumerate(df["scale"].str.strip()):
        where = f"{path}, row {file_row(df, i)}"
        if scale not in ITEM_SCALES:
            raise StudyFormatError(
                f"{where}, column 'scale': {scale!r}; expected one of {list(ITEM_SCALES)}."
            )
        if not np.isfinite(lo[i]) or (scale != "count" and not np.isfinite(hi[i])):
            raise StudyFormatError(
                f"{where}, columns 'min'/'max': {df['min'].iat[i]!r}/{df['max'].iat[i]!r}; "
                f"expected integer bounds for a {scale} item (a count item may leave max empty "
                "= unbounded)."
            )
        if scale == "binary" and (lo[i], hi[i]) != (0.0, 1.0):
            raise StudyFormatError(f"{where}: a binary item has min 0 and max 1.")
        if np.isfinite(hi[i]) and hi[i] < lo[i]:
            raise StudyFormatError(f"{where}: max {hi[i]:g} is below min {lo[i]:g}.")
    return pd.DataFrame(
        {"item": df["item"], "scale": df["scale"].str.strip(), "min": lo, "max": hi, "cap": cap}
    )


def _ratings(path: Path, items: pd.DataFrame, items_path: Path) -> pd.DataFrame:
    """``ratings.csv`` with numeric turn and score, every row checked against ``items``."""
    df = read_csv_table(path, list(RATINGS_COLUMNS))
    _check_columns(path, df, RATINGS_COLUMNS)
    for i, conv in enumerate(df[CONVERSATION].to_numpy()):
        if not conv.strip():
            raise StudyFormatError(
                f"{path}, row {file_row(df, i)}, column 'conversation': the conversation id is "
                f"empty ({conv!r}); expected the id of the chatbot's conversation on every row "
                "(e.g. its prompt id)."
            )
    for col in ("rater", "model", CONVERSATION, "item"):
        check_name_column(path, df, col)
    turn = parse_numbers(path, df, TURN, kind="int")
    for i in np.flatnonzero(turn < 1)[:1]:
        raise StudyFormatError(
            f"{path}, row {file_row(df, int(i))}, column 'turn': {df[TURN].iat[i]!r}; expected "
            "an integer turn >= 1 (1-based; gaps such as 1, 4, 7 are allowed)."
        )
    score = parse_numbers(path, df, "score")
    scales = items.set_index("item")
    for i, item in enumerate(df["item"].to_numpy()):
        where = f"{path}, row {file_row(df, i)}"
        if item not in scales.index:
            raise StudyFormatError(
                f"{where}, column 'item': {item!r} is not declared in {items_path} (items "
                f"{list(scales.index)[:10]}); declare its scale there (item, scale, min, max)."
            )
        s, lo, hi = scales.at[item, "scale"], scales.at[item, "min"], scales.at[item, "max"]
        v = score[i]
        if np.isnan(v):
            continue
        if v != round(v) or v < lo or (np.isfinite(hi) and v > hi):
            bound = f"{lo:g}..{hi:g}" if np.isfinite(hi) else f">= {lo:g}"
            raise StudyFormatError(
                f"{where}, column 'score': {df['score'].iat[i]!r} for item {item!r} is outside "
                f"its declared scale ({s}, integers {bound}, {items_path}); expected an integer "
                f"{bound}, or empty for a missing rating."
            )
    check_duplicates(path, df, ["rater", "model", CONVERSATION, TURN, "item"])
    out = df[["rater", "model", CONVERSATION, "item"]].copy()
    out[TURN], out["score"] = turn.astype(int), score
    out.attrs = df.attrs
    return out


def _conversations(path: Path, ratings: pd.DataFrame, ratings_path: Path) -> pd.DataFrame:
    """``conversations.csv`` (or the pairs of ``ratings`` when absent); every rated pair must
    be listed when the file exists."""
    pairs = ratings[[MODEL, CONVERSATION]].drop_duplicates().reset_index(drop=True)
    if not path.is_file():
        return pairs
    df = read_csv_table(path, list(CONVERSATIONS_COLUMNS))
    _check_columns(path, df, (*CONVERSATIONS_COLUMNS, *CONVERSATION_COORDS))
    for col in CONVERSATIONS_COLUMNS:
        check_name_column(path, df, col)
    check_duplicates(path, df, list(CONVERSATIONS_COLUMNS))
    listed = set(zip(df[MODEL], df[CONVERSATION], strict=True))
    keys = zip(ratings[MODEL], ratings[CONVERSATION], strict=True)
    for i, (model, conv) in enumerate(keys):
        if (model, conv) not in listed:
            raise StudyFormatError(
                f"{ratings_path}, row {file_row(ratings, i)}, column 'conversation': "
                f"conversation {conv!r} of chatbot {model!r} is not in {path}; expected every "
                "rated (model, conversation) to be listed there (add the row, or fix the id)."
            )
    if "seed" in df:
        df["seed"] = parse_numbers(path, df, "seed", kind="float")
    return df


def _raters(path: Path, ratings: pd.DataFrame, ratings_path: Path) -> dict[str, str]:
    names = list(dict.fromkeys(ratings["rater"]))
    if not path.is_file():
        return dict.fromkeys(names, "human")
    df = read_csv_table(path, ["rater", "kind"])
    _check_columns(path, df, ("rater", "kind"))
    check_name_column(path, df, "rater")
    check_duplicates(path, df, ["rater"])
    for i, kind in enumerate(df["kind"]):
        if kind not in RATER_KINDS:
            raise StudyFormatError(
                f"{path}, row {file_row(df, i)}, column 'kind': {kind!r}; expected one of "
                f"{list(RATER_KINDS)}."
            )
    kinds = dict(zip(df["rater"], df["kind"], strict=True))
    for i, rater in enumerate(ratings["rater"]):
        if rater not in kinds:
            raise StudyFormatError(
                f"{ratings_path}, row {file_row(ratings, i)}, column 'rater': {rater!r} is not "
                f"in {path}; expected every rater listed with its kind."
            )
    return kinds


def read_replicated_csv(path: str | Path) -> xr.Dataset:
    """Read a replicated study from a folder of tidy CSV files (module docstring), validated.

    Returns the :mod:`~delusion_bayes.data.replicated` Dataset: chatbots in order of first
    appearance (``conversations.csv`` first when present), conversations likewise, turns sorted,
    items in ``items.csv`` order; ``attrs["n_missing_ratings"]`` counts the empty scores.
    """
    path = Path(path)
    items_path, ratings_path = path / "items.csv", path / "ratings.csv"
    for f in (ratings_path, items_path):
        if not f.is_file():
            raise StudyFormatError(
                f"{f}: not found; a replicated study folder holds ratings.csv and items.csv "
                "(`delusion-bayes init-study DIR --replicated` writes a template)."
            )
    items = _items(items_path)
    ratings = _ratings(ratings_path, items, items_path)
    convs = _conversations(path / "conversations.csv", ratings, ratings_path)
    kinds = _raters(path / "raters.csv", ratings, ratings_path)
    return _build(ratings, items, convs, kinds, path)


def _build(ratings, items, convs, kinds, path) -> xr.Dataset:
    raters = list(kinds)
    models = list(dict.fromkeys([*convs[MODEL], *ratings[MODEL]]))
    conversations = list(dict.fromkeys([*convs[CONVERSATION], *ratings[CONVERSATION]]))
    turns = sorted(set(ratings[TURN]))
    names = list(items["item"])
    idx = [
        pd.Index(v).get_indexer(ratings[k])
        for v, k in (
            (raters, "rater"),
            (models, MODEL),
            (conversations, CONVERSATION),
            (turns, TURN),
            (names, "item"),
        )
    ]
    score = np.full((len(raters), len(models), len(conversations), len(turns), len(names)), np.nan)
    score[tuple(idx)] = ratings["score"].to_numpy()
    mi = pd.Index(models).get_indexer(convs[MODEL])
    ci = pd.Index(conversations).get_indexer(convs[CONVERSATION])
    present = np.zeros((len(models), len(conversations)), dtype=bool)
    present[mi, ci] = True
    coords = {
        RATER: np.array(raters, dtype=object),
        "rater_kind": (RATER, np.array([kinds[r] for r in raters], dtype=object)),
        MODEL: np.array(models, dtype=object),
        CONVERSATION: np.array(conversations, dtype=object),
        TURN: np.asarray(turns, dtype=int),
        ITEM: np.array(names, dtype=object),
        **item_scale_coords(list(items["scale"]), list(items["min"]), list(items["max"])),
    }
    coords["item_cap"] = (ITEM, items["cap"].to_numpy(dtype=float))
    for name in CONVERSATION_COORDS:
        if name in convs:
            seed = name == "seed"
            grid = np.full(present.shape, np.nan if seed else "", dtype=float if seed else object)
            grid[mi, ci] = convs[name].to_numpy()
            coords[name] = ((MODEL, CONVERSATION), grid)
    ds = xr.Dataset(
        {
            "score": ((RATER, MODEL, CONVERSATION, TURN, ITEM), score),
            "has_conversation": ((MODEL, CONVERSATION), present),
        },
        coords=coords,
        attrs={
            "kind": KIND,
            "source": "file",
            "path": str(path),
            "n_missing_ratings": int(np.isnan(ratings["score"]).sum()),
        },
    )
    return validate_replicated(ds)


def _template_tables(seed: int = 0) -> dict[str, pd.DataFrame]:
    """Simulated tables: 3 chatbots x 4 conversations (the same 4 prompts, 2 categories) x 12
    turns x 2 raters (a person and an LLM judge) x 3 items of the three scales."""
    rng = np.random.default_rng(seed)
    models, prompts = ["chatbot-a", "chatbot-b", "chatbot-c"], ["p1", "p2", "p3", "p4"]
    cats = {"p1": "conspiracy", "p2": "conspiracy", "p3": "grandiosity", "p4": "grandiosity"}
    rows, conv_rows = [], []
    for m, model in enumerate(models):
        for c, prompt in enumerate(prompts):
            conv_rows.append((model, prompt, prompt, cats[prompt], "seeker", 100 * m + c))
            drift = 0.15 * (m + 1) + rng.normal(0, 0.05)
            for turn in range(1, 13):
                level = 1 + 3 / (1 + np.exp(-drift * 3 * (turn - 7)))
                for rater in ("R1", "judge-1"):
                    stage = int(np.clip(np.rint(level + rng.normal(0, 0.4)), 1, 4))
                    push = int(rng.random() < 0.5 / (1 + m))
                    count = int(rng.poisson(0.4 * level))
                    for item, value in (("recognition", stage), ("pushback", push)):
                        rows.append((rater, model, prompt, turn, item, str(value)))
                    rows.append((rater, model, prompt, turn, "delusion_reinforcement", str(count)))
    rows[7] = (*rows[7][:5], "")  # one missing rating: an empty score
    return {
        "ratings.csv": pd.DataFrame(rows, columns=list(RATINGS_COLUMNS)),
        "conversations.csv": pd.DataFrame(
            conv_rows, columns=["model", "conversation", "prompt", "category", "persona", "seed"]
        ),
        "items.csv": pd.DataFrame(
            [
                ("recognition", "ordinal", 1, 4, "", "stage of recognition, 1-4"),
                ("pushback", "binary", 0, 1, "", "the reply pushes back (0/1)"),
                ("delusion_reinforcement", "count", 0, "", 5, "flagged snippets; capped at 5"),
            ],
            columns=["item", "scale", "min", "max", "cap", "description"],
        ),
        "raters.csv": pd.DataFrame(
            [("R1", "human"), ("judge-1", "judge")], columns=["rater", "kind"]
        ),
    }


def write_replicated_template(target: str | Path, *, force: bool = False) -> Path:
    """Write a template replicated study (simulated numbers, a README explaining each column) into
    ``target`` for ``delusion-bayes init-study DIR --replicated``; returns ``target``.

    ``FileExistsError`` when ``target`` is a file, or a non-empty folder and ``force`` is false.
    The template reads back with :func:`read_replicated_csv` (tested).
    """
    target = new_study_folder(target, force=force)
    for name, table in _template_tables().items():
        table.to_csv(target / name, index=False)
    shutil.copyfile(TEMPLATE_README, target / "README.md")
    return target


__all__ = ["TEMPLATE_README", "read_replicated_csv", "write_replicated_template"]
