"""``delusion-bayes``: a thin ``@hydra.main`` over :func:`delusion_bayes.pipeline.run`, plus
``--help`` (the common commands, :data:`USAGE`) and ``init-study DIR`` (a template study)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from ._version import __version__
from .config import conf_dir, register_configs
from .hydra_app import (  # noqa: F401 - re-exported: the names tests and scripts knew here
    ERROR_PREFIX,
    FULL_ERROR_ENV,
    USER_ERROR_STATUS,
    one_line_user_errors,
    run_hydra,
    user_error_line,
)

register_configs()

#: what ``delusion-bayes --help`` prints before the config groups
USAGE = """\
delusion-bayes: Bayesian and baseline analyses of chatbot-trajectory (and replay) studies.
Each run writes one folder (outputs/<date>/<time>/, or hydra.run.dir=...) ending in supplement.html.

Common commands
  delusion-bayes                                    bundled default study (simulated), all stages
  delusion-bayes experiment=smoke                   every stage at tiny size (about a minute)
  delusion-bayes init-study DIR                     write a template study (CSV files) to fill in
  delusion-bayes data.path=DIR                      analyse your own study (CSV folder or .nc file)
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

Options are Hydra overrides (key=value); `--cfg job` prints the composed config, `--version` the
package's version, `--hydra-help` Hydra's own flags, `hydra.verbose=true` lets other libraries'
INFO lines into the log.
Documentation: README.md, docs/tutorial.md.
"""

INIT_USAGE = """\
usage: delusion-bayes init-study DIR [--force] [--replicated]

Write a template trajectory study (tidy CSV files with simulated numbers, and a README.md
explaining each column) into DIR, to replace with your own ratings. DIR must not exist or be
empty unless --force is given. Then: delusion-bayes data.path=DIR
--replicated: a replicated study instead (many conversations per chatbot, rated by people or an
LLM judge; items declare their scale). Then: delusion-bayes experiment=replicated data.path=DIR
"""


def template_dir() -> Path:
    """The template study shipped in the package (``delusion_bayes/data/template``)."""
    return Path(__file__).resolve().parent / "data" / "template"


def init_study(target: str | Path, *, force: bool = False, replicated: bool = False) -> Path:
    """Copy the template study into ``target`` and return its path; ``FileExistsError`` when
    ``target`` is a file, or holds files and ``force`` is false. ``replicated``: the template of
    a replicated study (chatbot -> conversation -> turn, items with declared scales)."""
    if replicated:
        from .data.replicated_csv import write_replicated_template

        return write_replicated_template(target, force=force)
    from .data.csv_format import new_study_folder

    target = new_study_folder(target, force=force)
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
    force, replicated = "--force" in argv, "--replicated" in argv
    rest = [a for a in argv if a not in ("--force", "--replicated")]
    if len(rest) != 1 or rest[0].startswith("-"):
        print(INIT_USAGE, end="", file=sys.stderr)
        return 2
    try:
        path = init_study(rest[0], force=force, replicated=replicated)
    except FileExistsError as err:
        print(f"delusion-bayes init-study: error: {err}", file=sys.stderr)
        return 1
    files = ", ".join(sorted(p.name for p in path.iterdir()))
    print(
        f"wrote a template study (simulated numbers) to {path}: {files}\n"
        f"Replace the numbers with yours (README.md there lists the columns), then run\n"
        f"  delusion-bayes {'experiment=replicated ' if replicated else ''}data.path={path}"
    )
    return 0


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
    if "--version" in args:  # before Hydra, whose own --version prints Hydra's version
        print(f"delusion-bayes {__version__}")
        return 0
    if any(a in ("-h", "--help") for a in args):
        print(USAGE + "\n" + _groups(), end="")
        return 0
    if argv is not None:
        sys.argv = [sys.argv[0], *args]
    return run_hydra(_pipeline_job)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
