"""One source for every default (issue 32): each config group's dataclass holds its defaults, the
YAML files under ``conf/<group>/`` hold only what differs, each with a comment, and every reader
goes through :func:`delusion_bayes.config.group_config`."""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path

import pytest
import yaml

from delusion_bayes.config import GROUP_SCHEMAS, compose, group_config
from delusion_bayes.errors import ConfigError
from delusion_bayes.inference.config import InferenceConfig, SamplerConfig

ROOT = Path(__file__).resolve().parents[1]
#: values that are placeholders, not defaults: Hydra's "required" and interpolations
PLACEHOLDER = re.compile(r"^(\?\?\?|\$\{.*\})$")


def _schema(group: str) -> type:
    module, name = GROUP_SCHEMAS[group]
    return getattr(importlib.import_module(module), name)


def _group_files() -> list[tuple[str, Path]]:
    return [(g, p) for g in GROUP_SCHEMAS for p in sorted((ROOT / "conf" / g).glob("*.yaml"))]


@pytest.mark.parametrize(("group", "path"), _group_files(), ids=lambda x: getattr(x, "name", x))
def test_yaml_holds_only_what_differs_from_the_dataclass(group, path):
    """Every key a group's YAML sets is a field of its dataclass whose default it changes (a
    repeated default is a second source that can drift), and the change is explained by a
    comment on its line or just above it."""
    defaults = dataclasses.asdict(_schema(group)())
    values = yaml.safe_load(path.read_text()) or {}
    lines = path.read_text().splitlines()
    for key, value in values.items():
        assert key in defaults, f"{path.name}: {key!r} is not a field of {_schema(group).__name__}"
        placeholder = isinstance(value, str) and PLACEHOLDER.match(value)
        assert placeholder or value != defaults[key], (
            f"{path.relative_to(ROOT)}: {key}: {value!r} repeats the dataclass default"
        )
        i = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
        assert "#" in lines[i] or (i and lines[i - 1].lstrip().startswith("#")), (
            f"{path.relative_to(ROOT)}: {key} has no comment saying why it differs"
        )


@pytest.mark.parametrize(
    ("override", "group", "expected"),
    [
        ([], "sampler", SamplerConfig()),
        (["sampler=numpyro"], "sampler", SamplerConfig(name="numpyro", progressbar=False)),
        (["sampler=pymc"], "sampler", SamplerConfig(name="pymc")),
        ([], "inference", InferenceConfig()),
        (["inference.refit_target_accept=null"], "inference",
         InferenceConfig(refit_target_accept=None)),
    ],
)  # fmt: skip
def test_composed_values_are_the_dataclass_values(override, group, expected):
    """The composed config read through ``group_config`` equals the dataclass with the YAML's
    and the override's changes, value for value (not only the same keys). An explicit ``null``
    stays ``None``: before issue 32 a reader replaced it by the default, so
    ``refit_target_accept=null`` could not turn the refit off through that path."""
    cfg = compose(override)
    assert group_config(type(expected), cfg[group]) == expected


def test_every_group_composes_to_its_schema_defaults_plus_yaml():
    """For every group of the default config: composed values == dataclass defaults overlaid by
    the group's default YAML file."""
    cfg = compose([])
    for group in GROUP_SCHEMAS:
        schema = _schema(group)
        choice = {"data": "paper_like", "model": "joint", "sampler": "nutpie"}.get(group, "default")
        values = yaml.safe_load((ROOT / "conf" / group / f"{choice}.yaml").read_text()) or {}
        values = {k: v for k, v in values.items() if not (isinstance(v, str) and "${" in v)}
        got = dataclasses.asdict(group_config(schema, cfg[group]))
        want = dataclasses.asdict(dataclasses.replace(schema(), **values))
        if group == "text":
            got.pop("cache_dir"), want.pop("cache_dir")  # the run's cache_dir, interpolated
        assert got == want, group


def test_group_config_rejects_an_unknown_key_and_keeps_an_explicit_none():
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['drawz'\]; expected some of"):
        group_config(SamplerConfig, {"drawz": 10})
    assert group_config(SamplerConfig, {"target_accept": None, "draws": 7}) == SamplerConfig(
        draws=7
    )
    assert group_config(InferenceConfig, {"refit_draws_factor": None}).refit_draws_factor is None
    assert group_config(SamplerConfig, None) == SamplerConfig()
    same = SamplerConfig(draws=3)
    assert group_config(SamplerConfig, same) is same


def test_no_reader_passes_a_literal_default():
    """``setting(node, key, literal)`` and ``config_values`` are gone: ``grep "setting("`` finds
    no call with a literal default in the package (issue 32, done-when)."""
    calls = []
    for path in (ROOT / "delusion_bayes").rglob("*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\b(setting|_get|config_values|_cfg)\(", line):
                calls.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not calls, "\n".join(calls)
