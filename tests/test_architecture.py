"""The package's layering rules (issue 17, "Done when"), checked on the source with ``ast``:

- no module imports a private name (``_x``) from another subpackage (``delusion_bayes.models``
  from ``delusion_bayes.report``, ...), and neither do the experiments and tests;
- no import cycle between the package's modules, imports inside functions included;
- no file in ``delusion_bayes/`` is over 600 lines.

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


def test_no_private_name_crosses_a_package_boundary():
    bad = []
    for module, path in MODULES.items():
        for target, name in _imports(module, path):
            if (
                _private(name)
                and target.startswith("delusion_bayes")
                and (_subpackage(target) != _subpackage(module))
            ):
                bad.append(f"{path.relative_to(ROOT)}: {name} from {target}")
    for path in [*(ROOT / "experiments").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]:
        for target, name in _imports("outside", path):
            if _private(name) and target.startswith("delusion_bayes"):
                bad.append(f"{path.relative_to(ROOT)}: {name} from {target}")
    assert not bad, "private names imported across packages:\n" + "\n".join(bad)


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
