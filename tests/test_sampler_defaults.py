"""Issue 49, "settings travel as one object": ``draws`` and ``target_accept`` have one default
each in the package, a model's own ``target_accept`` lives in its definition only, and the
settings reach the sampler as the one :class:`SamplerConfig` the config made.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "delusion_bayes"


def _literal_defaults(setting: str) -> list[str]:
    """``path:line`` of every numeric literal that is a default of ``setting``: a parameter
    default, a class or module-level assignment (``DEFAULT_<SETTING>`` too) or a call keyword
    other than a model definition's (``ModelDef(target_accept=...)``: that model's own) and a
    named study design's (``SBC_SAMPLER = SamplerConfig(draws=200, ...)``: the SBC's ranks)."""

    def numeric(node) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, int | float)

    names = {setting, f"default_{setting}"}
    out = []
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text())
        where = f"{path.relative_to(PKG.parent)}"
        designs = {
            id(n.value)
            for n in tree.body
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and getattr(n.value.func, "id", "") == "SamplerConfig"
            and all(isinstance(t, ast.Name) and t.id.endswith("_SAMPLER") for t in n.targets)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.arguments):
                positional = node.posonlyargs + node.args
                with_default = positional[len(positional) - len(node.defaults) :]
                pairs = list(zip(with_default, node.defaults, strict=True))
                kw = zip(node.kwonlyargs, node.kw_defaults, strict=True)
                pairs += [(a, d) for a, d in kw if d]
                out += [f"{where}:{d.lineno}" for a, d in pairs if a.arg in names and numeric(d)]
            elif isinstance(node, ast.AnnAssign | ast.Assign):
                targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
                ids = {t.id.lower() for t in targets if isinstance(t, ast.Name)}
                if ids & names and node.value is not None and numeric(node.value):
                    out.append(f"{where}:{node.lineno}")
            elif isinstance(node, ast.Call):
                func = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if func != "ModelDef" and id(node) not in designs:
                    kws = [k for k in node.keywords if k.arg == setting and numeric(k.value)]
                    out += [f"{where}:{k.value.lineno}" for k in kws]
    return out


@pytest.mark.parametrize(
    ("setting", "home"),
    [
        ("draws", "delusion_bayes/inference/config.py"),
        ("target_accept", "delusion_bayes/inference/config.py"),
    ],
)
def test_one_literal_default_per_sampler_setting(setting, home):
    found = _literal_defaults(setting)
    assert len(found) == 1 and found[0].startswith(home), found


def test_each_model_names_its_target_accept_in_its_definition_only():
    from delusion_bayes.inference.config import DEFAULT_TARGET_ACCEPT
    from delusion_bayes.models.registry import MODELS
    from delusion_bayes.models.replay import DEFINITION as REPLAY

    own = {n: d.target_accept for n, d in {**MODELS, REPLAY.name: REPLAY}.items()}
    assert own == {
        "joint": 0.9,
        "onset": 0.99,
        "rater": DEFAULT_TARGET_ACCEPT,
        "disengagement": 0.9,
        "replay_prevalence": 0.9,
    }


def test_the_stage_passes_the_configs_sampler_settings_unchanged(monkeypatch):
    """The models stage's fit arguments hold the ``sampler`` group as one ``SamplerConfig``
    (validated when made); ``fit``'s keywords build the same object."""
    from delusion_bayes.config import compose, group_config
    from delusion_bayes.inference.config import SamplerConfig, sampler_config
    from delusion_bayes.stages.fit_plan import fit_arguments

    cfg = compose(["sampler.draws=123", "sampler.target_accept=0.8"])
    kw = fit_arguments("joint", cfg, primary=True)
    assert kw["sampler"] == group_config(SamplerConfig, cfg.sampler)
    assert kw["sampler"].draws == 123 and kw["sampler"].target_accept == 0.8
    assert sampler_config(None, draws=123, target_accept=0.8) == SamplerConfig(
        draws=123, target_accept=0.8
    )
    assert sampler_config("pymc", seed=3).name == "pymc"
    with pytest.raises(ValueError, match="sampler.draws=0"):
        sampler_config(None, draws=0)
