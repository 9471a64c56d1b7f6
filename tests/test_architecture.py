"""The package's layering rules (issue 17, "Done when"), checked on the source with ``ast``:

- no module imports a private name (``_x``) from another module (issue 32: a name another
  module imports is public in its package), and neither do the experiments and tests;
- no import cycle between the package's modules, imports inside functions included;
- no file in ``delusion_bayes/`` is over 600 lines, and no function over 80 (docstring included);
- ``# fmt: skip`` is kept for aligned tables only: fewer than 60 in the package (issue 32).

Why by hand: ``import-linter`` checks contracts between named modules (layers, independence,
forbidden imports); it has no rule for private names, and a cycle check over every module is
forty lines of Tarjan here, so no extra test dependency.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "delusion_bayes"
MAX_LINES = 600
MAX_FUNCTION_LINES = 80
MAX_FMT_SKIP = 60


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


MODULES = _modules()


def _target(module: str, path: Path, node: ast.ImportFrom) -> str | None:
    """The absolute module an ``ImportFrom`` in ``module`` (file ``path``) names."""
    if not node.level:
        return node.module
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path):
    """``(target module, imported name or None)`` of every import in the file, nested ones too."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            target = _target(module, path, node)
            if target:
                for alias in node.names:
                    yield target, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None


def _subpackage(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _private(name: str | None) -> bool:
    return name is not None and name.startswith("_") and not name.startswith("__")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def private_imports(modules: dict[str, Path]) -> list[str]:
    """``path: name from module`` for every private name a package module imports from another
    module of the package (nested imports too)."""
    bad = []
    for module, path in modules.items():
        for target, name in _imports(module, path):
            if _private(name) and target.startswith("delusion_bayes") and target != module:
                bad.append(f"{_rel(path)}: {name} from {target}")
    return bad


def test_no_private_name_crosses_a_module():
    bad = private_imports(MODULES)
    for path in [*(ROOT / "experiments").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]:
        for target, name in _imports("outside", path):
            if _private(name) and target.startswith("delusion_bayes"):
                bad.append(f"{path.relative_to(ROOT)}: {name} from {target}")
    assert not bad, "private names imported from another module:\n" + "\n".join(bad)


def test_the_private_check_finds_a_planted_import(tmp_path):
    """The checker itself: ``from .b import _helper`` in a module ``a`` is found, a public name
    and a module's own private names are not (else the test above is vacuous)."""
    a = tmp_path / "a.py"
    a.write_text("from .b import _helper, public\nfrom . import b\n_own = b._x\n")
    bad = private_imports({"delusion_bayes.data.a": a})
    assert bad == ["a.py: _helper from delusion_bayes.data.b"]


def _graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        for target, name in _imports(module, path):
            full = f"{target}.{name}" if name else target
            dst = full if full in MODULES else target
            if dst in MODULES and dst != module:
                edges[module].add(dst)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    for root in MODULES:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_a_cycle():
    """The checker itself: a planted a -> b -> a cycle is found (else the next test is vacuous)."""
    edges = _graph()
    a, b = "delusion_bayes.results", "delusion_bayes.plotting"
    planted = {**edges, a: edges.get(a, set()) | {b}, b: edges.get(b, set()) | {a}}
    assert any({a, b} <= set(c) for c in _cycles(planted))


def test_no_import_cycle():
    assert _cycles(_graph()) == []


def test_no_file_over_600_lines():
    long = {str(p.relative_to(ROOT)): n for p in MODULES.values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}  # fmt: skip
    assert not long, long


def _function_lengths() -> dict[str, int]:
    out = {}
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                out[f"{path.relative_to(ROOT)}::{node.name}:{node.lineno}"] = (
                    node.end_lineno - start + 1
                )
    return out


def test_no_function_over_80_lines():
    """Orchestrators are named steps (issue 32): no function, docstring included, is over 80
    lines."""
    long = {k: n for k, n in _function_lengths().items() if n > MAX_FUNCTION_LINES}
    assert not long, long


def test_fmt_skip_only_for_tables():
    """The formatter lays the code out; ``# fmt: skip`` stays on aligned literal tables only."""
    counts = {str(p.relative_to(ROOT)): p.read_text().count("fmt: skip") for p in MODULES.values()}
    total = sum(counts.values())
    worst = sorted(((n, f) for f, n in counts.items() if n), reverse=True)[:5]
    assert total < MAX_FMT_SKIP, f"{total} '# fmt: skip' markers; most in {worst}"


def _unit(module: str) -> str:
    """The layering unit of a module: its subpackage (``models``) or top-level module
    (``config``), without the ``delusion_bayes.`` prefix."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "delusion_bayes"


def layer_edges() -> dict[str, set[str]]:
    """``{unit: {units it imports}}`` over the package, nested imports included; ``from ..
    import results`` counts as an import of ``results``."""
    edges: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        for target, name in _imports(module, path):
            if not target.startswith("delusion_bayes"):
                continue
            full = f"{target}.{name}" if name else target
            dst = _unit(full if full in MODULES else target)
            if dst != _unit(module):
                edges[_unit(module)].add(dst)
    return edges


def documented_edges() -> dict[str, set[str]]:
    """The layering table of ARCHITECTURE.md (rows ``| unit | imports |`` between the
    ``<!-- layering -->`` markers)."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    block = text.split("<!-- layering -->")[1]
    out: dict[str, set[str]] = {}
    for line in block.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or cells[0] in ("unit", "") or set(cells[0]) <= set("-"):
            continue
        deps = {d.strip().strip("`") for d in cells[1].split(",")} - {"", "—"}
        out[cells[0]] = deps
    return out


def test_architecture_md_shows_every_real_import_edge():
    """ARCHITECTURE.md's layering table lists, for every subpackage and top-level module, the
    units it imports: no real edge missing, no stale edge listed (issue 32)."""
    real = {k: v for k, v in layer_edges().items() if v}
    doc = {k: v for k, v in documented_edges().items() if v}
    missing = {k: sorted(real[k] - doc.get(k, set())) for k in real if real[k] - doc.get(k, set())}
    stale = {k: sorted(doc[k] - real.get(k, set())) for k in doc if doc[k] - real.get(k, set())}
    assert not missing and not stale, f"undocumented edges {missing}; stale edges {stale}"


def _edge_sources(src: str, dst: str) -> list[str]:
    """``path: target`` of every import (nested ones too) from unit ``src`` into unit ``dst``."""
    return [
        f"{_rel(path)}: {target}"
        for module, path in MODULES.items()
        if _unit(module) == src
        for target, name in _imports(module, path)
        if target.startswith("delusion_bayes")
        and _unit(f"{target}.{name}" if f"{target}.{name}" in MODULES else target) == dst
    ]


def test_inference_does_not_import_models():
    """``inference`` sits under ``models`` (a fit calls the sampler, issue 49 item 3): no import
    from ``delusion_bayes.inference`` reaches ``delusion_bayes.models``."""
    assert not _edge_sources("inference", "models")


def test_sweep_does_not_import_cli():
    """``sweep`` is a library under the stages, not an entry point above them (issue 49 item
    3): no import from ``delusion_bayes.sweep`` reaches ``delusion_bayes.cli``."""
    assert not _edge_sources("sweep", "cli")
