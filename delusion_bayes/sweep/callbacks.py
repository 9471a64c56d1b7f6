"""A Hydra callback that leaves ``job.json`` (status, error, traceback, seconds, overrides) in
every job directory, whatever happened: Hydra's launchers re-raise a job's exception only in the
launching process after the batch, so a job that raised before the pipeline's ``run.json``
existed would otherwise leave nothing behind. Enabled by ``hydra.callbacks.job_status``.
"""

from __future__ import annotations

import json
import time
import traceback
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback


class JobStatusCallback(Callback):
    """Write ``<job output dir>/job.json`` after every Hydra job (``on_job_end``)."""

    def __init__(self, filename: str = "job.json") -> None:
        self.filename = filename
        self._t0: float | None = None

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        self._t0 = time.perf_counter()

    def on_job_end(self, config: Any, job_return: Any, **kwargs: Any) -> None:
        from hydra.core.utils import JobStatus

        try:
            out_dir = Path(str(config.hydra.runtime.output_dir))
        except Exception:  # noqa: BLE001 - outside a Hydra job: nothing to write
            return
        record: dict[str, Any] = {
            "status": "ok" if job_return.status == JobStatus.COMPLETED else "failed",
            "overrides": [str(x) for x in (job_return.overrides or [])],
            "seconds": None if self._t0 is None else round(time.perf_counter() - self._t0, 3),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        if job_return.status != JobStatus.COMPLETED:
            err = job_return._return_value  # the exception Hydra caught (not re-raised here)
            if isinstance(err, BaseException):
                record["error"] = f"{type(err).__name__}: {err}"
                record["traceback"] = "".join(traceback.format_exception(err))
            else:
                record["error"] = f"job status {job_return.status}"
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / self.filename).write_text(json.dumps(record, indent=2, default=str))
