"""The quiet log: other libraries' INFO lines filtered, ours kept; sampling progress lines."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from delusion_bayes.inference.progress import SamplingProgress
from delusion_bayes.logs import ThirdPartyFilter, quiet_third_party


def _record(name: str, level: int = logging.INFO) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, "message", None, None)


@pytest.mark.parametrize(
    ("name", "level", "kept"),
    [
        ("delusion_bayes.pipeline", logging.INFO, True),
        ("delusion_bayes", logging.DEBUG, True),
        ("hydra.core", logging.INFO, True),
        ("pytensor.configparser", logging.INFO, False),
        ("pytensor.link.c.cmodule", logging.INFO, False),  # the g++ flag lines
        ("/venv/lib/python3.12/site-packages/pytensor/link/c/lazylinker_c.py", logging.INFO, False),
        ("arviz", logging.INFO, False),
        ("matplotlib.font_manager", logging.INFO, False),
        ("delusion_bayesian_other", logging.INFO, False),  # a prefix is not a package
        ("pytensor.configparser", logging.WARNING, True),  # a warning always gets through
        ("numba.core", logging.ERROR, True),
    ],
)
def test_filter_keeps_ours_and_warnings(name, level, kept):
    assert ThirdPartyFilter().filter(_record(name, level)) is kept


def test_filter_lets_verbose_loggers_through():
    f = ThirdPartyFilter(["pytensor"])
    assert f.filter(_record("pytensor.configparser"))
    assert not f.filter(_record("arviz"))


@pytest.fixture
def root_handler():
    """A handler on the root logger (as Hydra's), removed afterwards with its filters."""
    root = logging.getLogger()
    handler = logging.NullHandler()
    root.addHandler(handler)
    levels = {n: logging.getLogger(n).level for n in ("pytensor", "arviz")}
    yield handler
    root.removeHandler(handler)
    for n, lvl in levels.items():
        logging.getLogger(n).setLevel(lvl)


def test_quiet_third_party_filters_root_handlers(root_handler):
    quiet_third_party(False)
    assert any(isinstance(f, ThirdPartyFilter) for f in root_handler.filters)
    assert logging.getLogger("pytensor").level == logging.WARNING
    quiet_third_party(False)  # idempotent: one filter per handler
    assert sum(isinstance(f, ThirdPartyFilter) for f in root_handler.filters) == 1


def test_hydra_verbose_turns_the_filter_off(root_handler):
    quiet_third_party(True)
    assert not root_handler.filters


def test_hydra_verbose_names_pass(root_handler):
    quiet_third_party(["pytensor"])
    (f,) = root_handler.filters
    assert f.filter(_record("pytensor.configparser")) and not f.filter(_record("arviz"))
    assert logging.getLogger("arviz").level == logging.WARNING


def test_numba_object_mode_warning_is_silenced(recwarn):
    import warnings

    quiet_third_party(True)  # warnings are silenced whatever the verbosity
    warnings.warn(
        "Numba will use object mode to run Foo's perform method.", UserWarning, stacklevel=1
    )
    warnings.warn("a warning the user can act on", UserWarning, stacklevel=1)
    assert [str(w.message) for w in recwarn] == ["a warning the user can act on"]


def test_sampling_progress_lines(caplog, monkeypatch):
    """A line at each 10% (no rate limit here), with the time left, then one closing line."""
    monkeypatch.setattr(SamplingProgress, "min_interval", 0.0)
    caplog.set_level(logging.INFO, logger="delusion_bayes")
    with SamplingProgress("toy", 1000, bar=True) as p:  # no terminal in tests: no bar
        for done in range(0, 1001, 50):
            p.update(done)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "sampling toy: 1,000 draws over all chains, warm-up included"
    steps = [ln for ln in lines if "% (" in ln]
    assert len(steps) == 9, steps  # 10% .. 90%; 100% is the closing line
    assert steps[0].startswith("sampling toy:  10% (100/1,000 draws incl. warm-up)")
    assert all(" left" in ln and " elapsed" in ln for ln in steps)
    assert lines[-1].startswith("sampling toy: done in ")


def test_sampling_progress_rate_limit_and_callbacks(caplog):
    """Sampling faster than ``min_interval``: only the first and the closing line. The
    nutpie callback sums the chains' draws; PyMC's counts calls."""
    caplog.set_level(logging.INFO, logger="delusion_bayes")

    class Chain:
        def __init__(self, n):
            self.finished_draws = n

    p = SamplingProgress("fast", 400, bar=False)
    p.nutpie_callback([Chain(100), Chain(150)])
    assert p.done == 250
    p.nutpie_callback(["not a chain"])  # another nutpie version: ignored, never raised
    for _ in range(150):
        p.pymc_callback(trace=None, draw=None)
    assert p.done == 400
    p.close()
    p.close()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and lines[-1].startswith("sampling fast: done in ")


def test_failed_sampling_logs_no_done_line(caplog):
    caplog.set_level(logging.INFO, logger="delusion_bayes")
    with pytest.raises(RuntimeError), SamplingProgress("boom", 10, bar=False):
        raise RuntimeError("sampler failed")
    assert not any("done in" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("verbose", "filtered"), [(False, True), (True, False)])
def test_hydra_callback_reads_hydra_verbose(root_handler, verbose, filtered):
    """The callback in conf/config.yaml applies ``hydra.verbose`` of the job's config."""
    from omegaconf import OmegaConf

    from delusion_bayes.config import compose
    from delusion_bayes.logs import QuietLogCallback

    assert "quiet_log" in (Path(__file__).parents[1] / "conf" / "config.yaml").read_text()
    QuietLogCallback().on_job_start(config=OmegaConf.create({"hydra": {"verbose": verbose}}))
    assert bool(root_handler.filters) is filtered
    assert compose([]) is not None  # the callback entry does not break composition


def test_numba_fallback_warning_is_silenced(recwarn):
    import warnings

    class NumbaWarning(Warning):  # numba.core.errors.NumbaWarning derives from Warning
        pass

    quiet_third_party(True)
    warnings.warn(
        "\nCompilation is falling back to object mode WITH looplifting enabled because ...",
        NumbaWarning,
        stacklevel=1,
    )
    assert not recwarn.list


def test_sampling_progress_bar_at_a_terminal(capsys, monkeypatch):
    """At a terminal the bar shows the draws and the time left (tqdm's ``elapsed<left``)."""
    import delusion_bayes.inference.progress as progress

    monkeypatch.setattr(progress, "_is_terminal", lambda: True)
    with SamplingProgress("toy", 100, bar=True) as p:
        p.update(50)
        p._bar.refresh()
        p.update(100)
    err = capsys.readouterr().err
    assert "sampling toy" in err and "50/100" in err and "<" in err
    with SamplingProgress("quiet", 100, bar=False) as p:
        p.update(100)
    assert "quiet" not in capsys.readouterr().err


def test_sampling_progress_early_and_off_step_lines(caplog, monkeypatch):
    """Before 5% no time-left estimate (the first warm-up draws are the slowest); a line the
    clock forced at 9.7% is not followed by another at 10-14%."""
    monkeypatch.setattr(SamplingProgress, "min_interval", 0.0)
    monkeypatch.setattr(SamplingProgress, "max_interval", 0.0)
    caplog.set_level(logging.INFO, logger="delusion_bayes")
    p = SamplingProgress("warm", 6000, bar=False)
    p.update(45)
    assert caplog.records[-1].getMessage().endswith("time left not yet known")
    monkeypatch.setattr(SamplingProgress, "max_interval", 1e9)
    p.update(579)  # 9.65%: no 10% mark yet, the clock is off now: no line
    n = len(caplog.records)
    monkeypatch.setattr(SamplingProgress, "max_interval", 0.0)
    p.update(580)  # the clock forces one
    monkeypatch.setattr(SamplingProgress, "max_interval", 1e9)
    p.update(739)  # 12%: the 10% mark was skipped with the forced line
    assert len(caplog.records) == n + 1
    p.update(1206)  # 20%
    assert caplog.records[-1].getMessage().startswith("sampling warm:  20%")
    p.close()
