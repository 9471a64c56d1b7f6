"""A study from pandas DataFrames (``db.data.from_frames``), for notebooks whose ratings already
sit in a DataFrame: the frames go through the CSV study reader itself (written to a temporary
folder and read back), so that a frame is checked exactly as the file of the same name is, and
its errors name the frame (``ratings_df``), the row and the column instead of a temporary path.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pandas as pd
import xarray as xr

from .csv_format import StudyFormatError
from .validate import StudyValidationError

#: keyword -> the study file that frame stands for (docs/reference.md, "Study format")
FRAMES = {
    "ratings": "ratings.csv",
    "models": "models.csv",
    "raters": "raters.csv",
    "adjudication": "adjudication.csv",
    "prompts": "prompts.csv",
    "answers": "answers.csv",
}


def from_frames(
    ratings: pd.DataFrame,
    models: pd.DataFrame | None = None,
    *,
    raters: pd.DataFrame | None = None,
    adjudication: pd.DataFrame | None = None,
    prompts: pd.DataFrame | None = None,
    answers: pd.DataFrame | None = None,
) -> xr.Dataset:
    """Build a trajectory study from DataFrames with the columns of the CSV study files.

    Parameters
    ----------
    ratings
        Long format, one row per rating: ``rater, model, day, item, score`` (``item`` e.g.
        ``recognition`` 1-4; an empty score is a missing rating).
    models, raters
        Optional metadata (``model, vendor, generation, cohort, ...``; ``rater, ...``): their
        order is the study's order; ``models``' columns are the groups contrasts use.
    adjudication, prompts, answers
        Optional: ``model, day, level_a, level_b``; ``day, text``; ``model, day, text``.

    Returns
    -------
    xarray.Dataset
        The validated study, as :func:`delusion_bayes.data.load_study` returns it for the same
        files. A :class:`StudyFormatError` names the frame (``ratings_df``), row and column.

    Examples
    --------
    >>> import pandas as pd, delusion_bayes as db  # doctest: +SKIP
    >>> ratings = pd.DataFrame({"rater": ["r1", "r2"], "model": ["m", "m"], "day": [1, 1],
    ...                         "item": ["recognition"] * 2, "score": [1, 2]})  # doctest: +SKIP
    >>> db.data.from_frames(ratings)  # doctest: +SKIP
    """
    from .io import load_study

    frames = {"ratings": ratings, "models": models, "raters": raters,
              "adjudication": adjudication, "prompts": prompts, "answers": answers}  # fmt: skip
    for name, df in frames.items():
        if df is not None and not isinstance(df, pd.DataFrame):
            raise TypeError(f"{name}: expected a pandas DataFrame, got {type(df).__name__}")
    with tempfile.TemporaryDirectory(prefix="db-frames-") as tmp:
        folder = Path(tmp)
        for name, df in frames.items():
            if df is not None:
                df.to_csv(folder / FRAMES[name], index=False)
        try:
            return load_study(folder).load()
        except (StudyFormatError, StudyValidationError) as err:
            raise type(err)(frame_names(str(err), folder)) from None


def frame_names(message: str, folder: Path) -> str:
    """``message`` with the temporary folder's file paths written as the frames' names."""
    for name, fname in FRAMES.items():
        message = message.replace(str(folder / fname), f"{name}_df")
    message = re.sub(r"\brow (\d+)\b", lambda m: f"row {int(m.group(1)) - 2} (0-based)", message)
    return message.replace(str(folder), "the frames")
