"""Dependencies point one way, and no module imports another that imports it back.

Every ``import`` statement in the package is read (function-level ones too, which the lazy
imports are), and checked against the layers of the README's "Layout" section.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sourcebias

ROOT = Path(sourcebias.__file__).parent

#: package -> the packages it may import (itself included); only the CLI knows every capability
ALLOWED = {
    "core": {"core"},
    "data": {"core", "data"},
    "models": {"core", "data", "models"},
    "retrieval": {"core", "data", "models", "llmcalls", "retrieval"},  # llmcalls: the LLM re-rankers
    "llmcalls": {"core", "data", "models", "generation", "llmcalls"},  # LLM calls, cached (re-rankers, judges, citations)
    "evaluation": {"core", "data", "models", "retrieval", "evaluation"},
    "generation": {"core", "data", "models", "generation"},
    "analysis": {"core", "data", "models", "retrieval", "evaluation", "analysis"},
    "mitigation": {"core", "data", "models", "retrieval", "evaluation", "analysis", "mitigation"},
    "experiments": {"core", "data", "models", "retrieval", "evaluation", "analysis", "mitigation", "experiments"},
    "reporting": {"core", "data", "models", "retrieval", "evaluation", "analysis", "mitigation", "experiments", "reporting"},
    "power": {"core", "data", "evaluation", "reporting", "power"},  # sample sizes from a pilot (its tables through the one Report); nothing below imports it
    "detect": {"core", "data", "models", "generation", "analysis", "detect"},  # zero-shot detectors of LLM text; audit and simulate use them
    "audit": {
        "core",
        "data",
        "models",
        "retrieval",
        "evaluation",
        "analysis",
        "reporting",
        "detect",
        "audit",
    },  # source bias without labels; nothing below imports it
    "simulate": {
        "core",
        "data",
        "models",
        "retrieval",
        "evaluation",
        "analysis",
        "mitigation",
        "experiments",
        "reporting",
        "generation",
        "detect",
        "audit",
        "simulate",
    },  # the feedback loop; nothing below imports it
    "citations": {
        "core",
        "data",
        "models",
        "retrieval",
        "evaluation",
        "reporting",
        "llmcalls",
        "citations",
    },  # sources an LLM answer cites; nothing below imports it
    "judges": {
        "core",
        "data",
        "models",
        "retrieval",
        "evaluation",
        "reporting",
        "detect",
        "llmcalls",
        "judges",
    },  # LLM relevance judges; nothing below imports it
    # adapters to other tools (top-level modules: sourcebias.irds, sourcebias.pyterrier, sourcebias.mteb)
    "irds": {"core", "data", "irds"},
    "pyterrier": {"core", "data", "models", "retrieval", "pyterrier"},
    "testing": {"core", "data", "models", "retrieval", "evaluation", "analysis", "detect", "testing"},  # test cases for extension authors
    "mteb": {"core", "data", "models", "retrieval", "evaluation", "reporting", "mteb"},  # source bias as MTEB tasks
    "cli": None,  # anything
}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Fully qualified sourcebias modules (or names in them) imported anywhere in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            out |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in out if m == "sourcebias" or m.startswith("sourcebias.")}


def resolve(name: str, modules: set[str]) -> str | None:
    """The module a dotted import names (``sourcebias.core.progress`` or a name inside a module)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(files)
    return {m: {r for r in (resolve(i, modules) for i in imports_of(p)) if r and r != m} for m, p in files.items()}


def package_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_dependencies_point_one_way():
    problems = []
    for mod, deps in graph().items():
        pkg = package_of(mod)
        if pkg is None or pkg == "__main__":
            continue
        assert pkg in ALLOWED, f"package {pkg} is not in the layout (add it to README 'Layout' and to ALLOWED)"
        allowed = ALLOWED[pkg]
        for d in deps:
            dp = package_of(d)
            if allowed is not None and dp is not None and dp not in allowed:
                problems.append(f"{mod} imports {d}")
    assert not problems, "\n".join(problems)


def test_no_import_cycles():
    g = graph()
    # Package __init__ files re-export their own modules; an edge into an __init__ from inside the
    # same package is what a cycle through a package looks like.
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(g.get(m, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d) :] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_lazy_top_level_api_names_real_objects():
    from importlib import import_module

    for name, module in sourcebias._EXPORTS.items():
        assert getattr(sourcebias, name) is getattr(import_module(module), name)
