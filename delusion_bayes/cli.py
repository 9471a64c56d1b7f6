"""``delusion-bayes``: a thin ``@hydra.main`` over :func:`delusion_bayes.pipeline.run`, plus
``--help`` (the common commands, :data:`USAGE`) and ``init-study DIR`` (a template study)."""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hydra

from .config import conf_dir, register_configs
from .errors import UserError

register_configs()

#: what ``delusion-bayes --help`` prints before the config groups
USAGE = """\
delusion-bayes: Bayesian and baseline analyses of chatbot-trajectory (and replay) studies.
Each run writes one folder (outputs/<date>/<time>/, or hydra.run.dir=...) ending in supplement.html.

Common commands
  delusion-bayes                                    bundled default study (simulated), all stages
  delusion-bayes experiment=smoke                   every stage at tiny size (about a minute)
  delusion-bayes init-study DIR                     write a template study (CSV files) to fill in
  delusion-bayes data=file data.path=DIR            analyse your own study (CSV folder or .nc file)
  delusion-bayes "stages=[baselines,report]"        the papers' analyses only, no sampling
  delusion-bayes model=onset sampler.draws=500      another model or sampler setting
  delusion-bayes report.from_run=RUN_DIR            rebuild a run's supplement without refitting
  delusion-bayes experiment=replay                  a (simulated) DelusionEval-style replay study

Sweeps and methodology studies
  delusion-bayes -m experiment=smoke baselines.stable_run=2,3 hydra.sweep.dir=SWEEP
  delusion-bayes -m experiment=sensitivity hydra/launcher=local    the multiverse (324 jobs)
  delusion-bayes-summarize SWEEP                    summary.csv, jobs.csv, multiverse.png
  delusion-bayes-coverage -m experiment=coverage    interval coverage on simulated studies
  delusion-bayes -m experiment=design               how to size a study (simulated power per cell)

Options are Hydra overrides (key=value); `--cfg job` prints the composed config, `--hydra-help`
Hydra's own flags, `hydra.verbose=true` lets other libraries' INFO lines into the log.
Documentation: README.md, docs/tutorial.md.
"""

INIT_USAGE = """\
usage: delusion-bayes init-study DIR [--force]

Write a template trajectory study (tidy CSV files with simulated numbers, and a README.md
explaining each column) into DIR, to replace with your own ratings. DIR must not exist or be
empty unless --force is given. Then: delusion-bayes data=file data.path=DIR
"""


def template_dir() -> Path:
    """The template study shipped in the package (``delusion_bayes/data/template``)."""
    return Path(__file__).resolve().parent / "data" / "template"


def init_study(target: str | Path, *, force: bool = False) -> Path:
    """Copy the template study into ``target`` and return its path; ``FileExistsError`` when
    ``target`` is a file, or holds files and ``force`` is false."""
    target = Path(target).expanduser()
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{target} is a file; expected a new or empty folder.")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise FileExistsError(
            f"{target} is not empty; choose a new folder, or pass --force to overwrite the "
            "template's files in it."
        )
    target.mkdir(parents=True, exist_ok=True)
    for src in sorted(template_dir().iterdir()):
        if src.is_file() and src.suffix in (".csv", ".md"):
            shutil.copyfile(src, target / src.name)
    return target


def _groups() -> str:
    """``group: option | option`` lines for the help, from the config folder."""
    lines = []
    for group in sorted(p for p in conf_dir().iterdir() if p.is_dir() and p.name != "hydra"):
        options = sorted(p.stem for p in group.glob("*.yaml"))
        if options:
            lines.append(f"  {group.name:<12}{' | '.join(options)}")
    return "Config groups (group=option)\n" + "\n".join(lines) + "\n"


def _init_study_main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(INIT_USAGE, end="")
        return 0 if argv else 2
    force = "--force" in argv
    rest = [a for a in argv if a != "--force"]
    if len(rest) != 1 or rest[0].startswith("-"):
        print(INIT_USAGE, end="", file=sys.stderr)
        return 2
    try:
        path = init_study(rest[0], force=force)
    except FileExistsError as err:
        print(f"delusion-bayes init-study: error: {err}", file=sys.stderr)
        return 1
    files = ", ".join(sorted(p.name for p in path.iterdir()))
    print(
        f"wrote a template study (simulated numbers) to {path}: {files}\n"
        f"Replace the numbers with yours (README.md there lists the columns), then run\n"
        f"  delusion-bayes data=file data.path={path}"
    )
    return 0


#: the environment variable that shows the full traceback of a user error (Hydra's own switch)
FULL_ERROR_ENV = "HYDRA_FULL_ERROR"
#: the exit status of an error that is the user's to fix (argparse's convention)
USER_ERROR_STATUS = 2
#: the prefix of the one line a user error prints
ERROR_PREFIX = "delusion-bayes: error:"

_state = {"full_error": False, "in_job": False}


def user_error_line(err: BaseException) -> str:
    """The one line ``delusion-bayes`` prints for a user error: the message on one line, then how
    to see the traceback."""
    msg = str(err)
    cause = err.__cause__
    if cause is not None and _is_config_error(err) and str(cause) and str(cause) not in msg:
        msg = f"{msg}: {str(cause).splitlines()[0]}"  # e.g. why an override could not be merged
    msg = " ".join(msg.split()) or type(err).__name__
    return f"{ERROR_PREFIX} {msg} ({FULL_ERROR_ENV}=1 shows the traceback)"


def _is_config_error(err: BaseException) -> bool:
    """Hydra's and OmegaConf's own errors: a bad override, a missing config option, a typo'd
    key. Only while composing (before the job runs); inside the job one is a package bug."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    return isinstance(err, HydraException | OmegaConfBaseException)


def _multirun() -> bool:
    """Whether the job is one of a ``-m`` sweep (Hydra then runs the batch's other jobs before
    raising the first failure: a SystemExit here would cancel them)."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        return HydraConfig.get().mode == RunMode.MULTIRUN
    except ValueError:  # not inside a Hydra job
        return False


def one_line_user_errors(task: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``task`` (a Hydra task function) with a :class:`UserError` printed as one line and exit
    status 2, unless ``HYDRA_FULL_ERROR=1`` asked for the traceback."""

    @functools.wraps(task)
    def job(cfg):
        _state["in_job"] = True
        try:
            return task(cfg)
        except UserError as err:
            if _state["full_error"] or _multirun():
                raise  # a sweep runs its other jobs first; run_hydra prints the line after
            # a SystemExit passes Hydra's run_job (it catches Exception), which would otherwise
            # print "Error executing job with overrides" before the message
            print(user_error_line(err), file=sys.stderr)
            raise SystemExit(USER_ERROR_STATUS) from None

    return job


def run_hydra(task: Callable[[Any], Any]) -> int | None:
    """Run ``task`` as the package's Hydra app (``conf/config.yaml``, the command-line overrides
    of ``sys.argv``); a user error (:class:`UserError` in the job, or Hydra/OmegaConf failing to
    compose the overrides before it) prints one line and gives :data:`USER_ERROR_STATUS`, unless
    ``HYDRA_FULL_ERROR=1`` asked for the traceback. Package bugs keep their traceback."""
    before = os.environ.get(FULL_ERROR_ENV)
    _state["full_error"] = before == "1"
    _state["in_job"] = False
    os.environ[FULL_ERROR_ENV] = "1"  # let errors reach us instead of Hydra's printer
    app = hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")
    try:
        app(one_line_user_errors(task))()
    except Exception as err:
        user = isinstance(err, UserError) or (_is_config_error(err) and not _state["in_job"])
        if _state["full_error"] or not user:
            raise
        print(user_error_line(err), file=sys.stderr)
        return USER_ERROR_STATUS
    finally:
        if before is None:
            os.environ.pop(FULL_ERROR_ENV, None)
        else:
            os.environ[FULL_ERROR_ENV] = before
    return None


def _pipeline_job(cfg) -> None:
    from .pipeline import run

    run(cfg)


def main(argv: list[str] | None = None) -> int | None:
    """Console-script entry point (``delusion-bayes``, ``python -m delusion_bayes``): ``--help``
    prints the common commands and config groups, ``init-study DIR`` writes the template study,
    anything else goes to Hydra."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] == "init-study":
        return _init_study_main(args[1:])
    if any(a in ("-h", "--help") for a in args):
        print(USAGE + "\n" + _groups(), end="")
        return 0
    if argv is not None:
        sys.argv = [sys.argv[0], *args]
    return run_hydra(_pipeline_job)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
