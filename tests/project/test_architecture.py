"""Dependencies point one way, and no module imports another that imports it back.

Every ``import`` statement in the package is read (function-level ones too, which the lazy
imports are, and the module names of a lazy ``_EXPORTS`` / ``_MOVED`` table, which
``import_module`` reads), and checked against the layers of docs/contributing.md's "Layout"
section. The top-level modules are layers too: ``sourcebias/__init__.py`` (the package
``sourcebias``, whose lazy exports reach the layers above, so nothing in the package imports it)
and the adapters ``irds.py``, ``pyterrier.py``, ``mteb.py``, ``testing.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sourcebias

ROOT = Path(sourcebias.__file__).parent

#: package -> the packages it may import (itself included); only the CLI knows every capability
ALLOWED = {
    "sourcebias": None,  # the top-level API re-exports (lazily) from any layer; nothing imports it back
    "__main__": {"cli", "__main__"},  # python -m sourcebias
    "core": {"core"},
    # query-clustered estimates and their refusal rules: below retrieval, whose re-rankers fit one
    "clustered": {"core", "clustered"},
    "data": {"core", "data"},
    "models": {"core", "data", "models"},
    # the one way to reach a model (backends, model specs, clients, the answer store, the servers)
    "llmcalls": {"core", "data", "models", "llmcalls"},
    "retrieval": {"core", "clustered", "data", "models", "llmcalls", "retrieval"},  # llmcalls: the LLM re-rankers
    "evaluation": {"core", "clustered", "data", "models", "retrieval", "evaluation"},
    # the one table model (Report) and its renderers: below everything that prints
    "report": {"core", "data", "models", "retrieval", "evaluation", "report"},
    # the frame every study shares (its summaries, its folder and manifest) and the evaluation job,
    # its folder and figure: below the studies that are its instances
    "study": {"core", "data", "models", "llmcalls", "retrieval", "evaluation", "report", "study"},
    "generation": {"core", "data", "models", "llmcalls", "generation"},
    "analysis": {"core", "clustered", "data", "models", "retrieval", "evaluation", "report", "analysis"},
    "mitigation": {"core", "data", "models", "retrieval", "evaluation", "report", "analysis", "mitigation"},
    "experiments": {"core", "data", "models", "retrieval", "evaluation", "report", "analysis", "mitigation", "experiments"},
    "power": {
        "core",
        "clustered",
        "data",
        "evaluation",
        "report",
        "power",
    },  # sample sizes from a pilot (its tables through the one Report); nothing below imports it
    "detect": {
        "core",
        "data",
        "models",
        "llmcalls",
        "generation",
        "report",
        "analysis",
        "detect",
    },  # zero-shot detectors of LLM text; audit and simulate use them
    "audit": {
        "core",
        "clustered",
        "data",
        "models",
        "retrieval",
        "evaluation",
        "analysis",
        "report",
        "detect",
        "study",
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
        "report",
        "llmcalls",
        "generation",
        "detect",
        "audit",
        "simulate",
    },  # the feedback loop; nothing below imports it
    "citations": {
        "core",
        "clustered",
        "data",
        "models",
        "retrieval",
        "evaluation",
        "report",
        "llmcalls",
        "study",
        "citations",
    },  # sources an LLM answer cites; nothing below imports it
    "judges": {
        "core",
        "clustered",
        "data",
        "models",
        "retrieval",
        "evaluation",
        "report",
        "detect",
        "llmcalls",
        "power",
        "study",
        "judges",
    },  # LLM relevance judges (and their pilots' power analysis); nothing below imports it
    # adapters to other tools (top-level modules: sourcebias.irds, sourcebias.pyterrier, sourcebias.mteb)
    "irds": {"core", "data", "irds"},
    "pyterrier": {"core", "data", "models", "retrieval", "pyterrier"},
    "testing": {
        "core",
        "clustered",
        "data",
        "models",
        "retrieval",
        "llmcalls",
        "evaluation",
        "report",
        "analysis",
        "detect",
        "testing",
    },  # test cases for extension authors
    "mteb": {"core", "data", "models", "retrieval", "evaluation", "report", "mteb"},  # source bias as MTEB tasks
    "cli": None,  # anything
}


#: module-level tables whose string values name the modules a lazy ``__getattr__`` imports
LAZY_TABLES = {"_EXPORTS", "_MOVED"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, *, moved: bool = True) -> set[str]:
    """Fully qualified sourcebias modules (or names in them) imported anywhere in ``path``.

    ``moved=False`` leaves out the modules of a ``_MOVED`` table: an old import path kept for one
    release resolves on first attribute access, so it may point at a module that imports this one
    (``formats.read_json_run`` now lives beside ``Run``); it still counts between layers.
    """
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
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Dict)
            and any(isinstance(t, ast.Name) and (t.id in LAZY_TABLES if moved else t.id == "_EXPORTS") for t in node.targets)
        ):
            # a lazy table maps names to the modules import_module reads them from (or "module:name")
            out |= {v.value.partition(":")[0] for v in node.value.values if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    return {m for m in out if m == "sourcebias" or m.startswith("sourcebias.")}


def resolve(name: str, modules: set[str]) -> str | None:
    """The module a dotted import names (``sourcebias.core.progress`` or a name inside a module)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def graph(*, moved: bool = True) -> dict[str, set[str]]:
    files = {module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(files)
    return {m: {r for r in (resolve(i, modules) for i in imports_of(p, moved=moved)) if r and r != m} for m, p in files.items()}


def package_of(module: str) -> str:
    """The layer of a module: its package, a top-level module's own name, ``sourcebias`` for the top."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_graph() -> dict[str, set[str]]:
    """Layer -> the layers it imports (function-level and lazy imports included)."""
    out: dict[str, set[str]] = {}
    for mod, deps in graph().items():
        out.setdefault(package_of(mod), set()).update(package_of(d) for d in deps)
    for pkg, deps in out.items():
        deps.discard(pkg)
    return out


def cycles_of(g: dict[str, set[str]]) -> list[list[str]]:
    """The cycles a depth-first walk of ``g`` meets (each as a path that returns to its start)."""
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
    return cycles


def test_dependencies_point_one_way():
    problems = []
    for mod, deps in graph().items():
        pkg = package_of(mod)
        assert pkg in ALLOWED, f"package {pkg} is not in the layout (add it to docs/contributing.md 'Layout' and to ALLOWED)"
        allowed = ALLOWED[pkg]
        for d in deps:
            dp = package_of(d)
            if dp == "sourcebias" and pkg != "sourcebias":
                problems.append(f"{mod} imports the top-level package ({d}), whose lazy exports reach every layer")
            elif allowed is not None and dp not in allowed:
                problems.append(f"{mod} imports {d}")
    assert not problems, "\n".join(problems)


def test_no_import_cycles():
    # Package __init__ files re-export their own modules; an edge into an __init__ from inside the
    # same package is what a cycle through a package looks like.
    cycles = cycles_of(graph(moved=False))
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_cycles_between_layers():
    """The layers themselves (packages and top-level modules) form no loop: a module-level import
    cycle can hide inside a function-level import or a lazy export, a loop between layers cannot."""
    cycles = cycles_of(package_graph())
    assert not cycles, "cycles between layers:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_layout_itself_points_one_way():
    """ALLOWED is a layering: no two layers may import each other, through any chain."""
    cycles = cycles_of({p: set(a) - {p} for p, a in ALLOWED.items() if a is not None})
    assert not cycles, cycles


def test_the_lazy_top_level_api_names_real_objects():
    from importlib import import_module

    for name, module in sourcebias._EXPORTS.items():
        assert getattr(sourcebias, name) is getattr(import_module(module), name)
