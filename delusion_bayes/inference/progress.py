"""Sampling progress: a ``tqdm`` bar with the time left at a terminal, and INFO lines in the log
(``sampling <label>:  40% (480/1,200 draws incl. warm-up), 12 s elapsed, ~18 s left``) at each
10%, so that a batch job's log shows how far a fit is. The time left is the elapsed time scaled
by the draws to do (from 5% on; warm-up draws are slower, so it leans pessimistic)."""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any

log = logging.getLogger(__name__)


def _clock(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


class SamplingProgress:
    """Progress of one sampling run (all chains together) of ``label`` (e.g.
    ``joint[logistic,rater]``), fed the finished draws of ``total`` (``chains * (tune + draws)``)
    by the sampler's callback; ``bar``: draw a bar when stderr is a terminal."""

    min_interval: float = 5.0  #: seconds: a line at each 10% step, but not more often
    max_interval: float = 30.0  #: seconds: a line at least this often
    step: float = 0.1

    def __init__(
        self, label: str, total: int, *, bar: bool = True, logger: logging.Logger | None = None
    ) -> None:
        self.label = label
        self.total = max(1, int(total))
        self.log = logger or log
        self.done = 0
        self._lock = threading.Lock()
        self._start = self._last_line = time.perf_counter()
        self._next_step = self.step
        self._closed = False
        self._bar = None
        if bar and _is_terminal():
            from tqdm.auto import tqdm

            self._bar = tqdm(
                total=self.total,
                desc=f"sampling {label}",
                unit="draw",
                leave=False,
                dynamic_ncols=True,
                file=sys.stderr,
            )
        self.log.info(
            "sampling %s: %s draws over all chains, warm-up included", label, f"{self.total:,}"
        )

    def update(self, done: int) -> None:
        """Set the draws finished so far (over all chains)."""
        with self._lock:
            if self._closed:
                return
            done = min(int(done), self.total)
            if self._bar is not None and done > self.done:
                self._bar.update(done - self.done)
            self.done = max(self.done, done)
            now = time.perf_counter()
            frac = self.done / self.total
            since = now - self._last_line
            if frac < 1.0 and (
                (frac >= self._next_step and since >= self.min_interval)
                or since >= self.max_interval
            ):
                self._line(now, frac)
                # the next 10% mark at least half a step away (no 10% line right after 9.7%)
                while self._next_step <= frac + self.step / 2:
                    self._next_step += self.step

    def advance(self, n: int = 1) -> None:
        """``n`` more draws (PyMC's per-draw callback)."""
        self.update(self.done + n)

    def nutpie_callback(self, chains: Any) -> None:
        """nutpie's ``progress_callback``: a list of ``ChainProgress``."""
        try:
            done = sum(int(c.finished_draws) for c in chains)
        except (AttributeError, TypeError):  # another nutpie version: no progress, no failure
            return
        self.update(done)

    def pymc_callback(self, trace: Any = None, draw: Any = None) -> None:
        """PyMC's ``pm.sample(callback=...)``: called once per draw of every chain."""
        self.advance(1)

    def _line(self, now: float, frac: float) -> None:
        elapsed = now - self._start
        # the first draws of the warm-up are the slowest: no estimate before 5%
        left = elapsed * (1 - frac) / frac if frac >= 0.05 else None
        self.log.info(
            "sampling %s: %3.0f%% (%s/%s draws incl. warm-up), %s elapsed, %s",
            self.label,
            100 * frac,
            f"{self.done:,}",
            f"{self.total:,}",
            _clock(elapsed),
            f"~{_clock(left)} left" if left is not None else "time left not yet known",
        )
        self._last_line = now

    def close(self, *, failed: bool = False) -> float:
        """Close the bar and log the sampling time (not when ``failed``); returns the seconds."""
        with self._lock:
            elapsed = time.perf_counter() - self._start
            if self._closed:
                return elapsed
            self._closed = True
            if self._bar is not None:
                self._bar.close()
            if not failed:
                self.log.info("sampling %s: done in %s", self.label, _clock(elapsed))
            return elapsed

    def __enter__(self) -> SamplingProgress:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(failed=exc_type is not None)


def _is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
