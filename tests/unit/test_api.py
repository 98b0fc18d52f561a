"""The public surface: every public class and function has a docstring (the API reference is
generated from them), and the package imports without cycles."""

import ast
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path
from typing import Any

import pytest

import trieste_scalable


def _public_objects() -> list[tuple[str, object]]:
    found = []
    for info in pkgutil.walk_packages(trieste_scalable.__path__, "trieste_scalable."):
        if info.name.endswith("__main__"):  # runs the command line
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found.append((f"{info.name}.{name}", obj))
    return found


def test_every_public_class_and_function_has_a_docstring() -> None:
    objects = _public_objects()
    assert len(objects) > 100
    missing = [
        name
        for name, obj in objects
        # a class's own docstring, not one inherited from a base
        if not (obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__)
    ]
    assert not missing, missing


def _module_imports(path: Path, module: str, is_package: bool) -> set[str]:
    """Modules of the package that ``module`` imports anywhere: at module level, in functions
    and under ``TYPE_CHECKING`` (a cycle hidden in a function is still a cycle)."""

    package = module if is_package else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            if base.startswith("trieste_scalable"):
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("trieste_scalable"))
    return found


def _import_graph() -> dict[str, set[str]]:
    """Each module or package of ``trieste_scalable`` and the others it imports."""
    root = Path(trieste_scalable.__file__).parent
    modules = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        modules[name] = (path, is_package)
    return {
        name: {m for m in _module_imports(path, name, pkg) if m in modules and m != name}
        for name, (path, pkg) in modules.items()
    }


def test_no_import_cycle_between_modules() -> None:
    """Packages count as nodes too: a module importing its own package's ``__init__`` (which
    imports the module) is a cycle."""
    graph = _import_graph()
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(trail + [node, nxt]))
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])


# The layers, top to bottom: a module imports only modules of its own layer's package or of a
# layer below (a module's layer is its longest prefix here; "" is the package's root). The
# commands choose where work runs (cluster/: Ray) and sit above it; the rest of the application
# sits below it, and the library a Trieste user imports below that. ``campaigns/`` is layered by
# subpackage too (a run drives the engine and writes the directory; the specification and its
# record sit below what they configure), so no two of its subpackages import each other.
LAYERS = [
    "__main__",
    "cli",
    "campaigns.screen",
    "campaigns.optimize",
    "cluster",
    "campaigns.prospective",
    "campaigns.candidates",
    "campaigns.run",
    "campaigns.reporting",
    "campaigns.engine",
    "campaigns.directory",
    "campaigns.spec",
    "campaigns.algorithms",
    "campaigns",
    "campaigns.migrations",
    "evaluation",
    "spaces",
    "problems",
    "stores",
    "chemistry",
    "acquisition",
    "models",
    "packed_space",
    "sampling",
    "kernels",
    "numerics",
    "files",
    "errors",
    "",
    "log",  # below the package root, which installs its console handler
]


def _layer(module: str) -> str:
    name = module.removeprefix("trieste_scalable").removeprefix(".")
    return max((p for p in LAYERS if name == p or name.startswith(p + ".") or not p), key=len)


def test_every_import_points_down_the_layer_order() -> None:
    """No upward import between layers (function-level and type-checking imports included), so
    no cycle between packages either."""
    graph = _import_graph()
    unplaced = sorted(m for m in graph if _layer(m) == "" and m != "trieste_scalable")
    assert not unplaced, f"modules of no layer in LAYERS: {unplaced}"
    upward = sorted(
        f"{module} -> {imported}"
        for module, imports in graph.items()
        for imported in imports
        if LAYERS.index(_layer(imported)) < LAYERS.index(_layer(module))
    )
    assert not upward, upward


def test_the_layer_test_fails_on_an_upward_import(monkeypatch: Any) -> None:
    """The test above is not vacuous: an import from numerics into campaigns fails it."""
    graph = _import_graph()
    graph["trieste_scalable.numerics.linalg"].add("trieste_scalable.campaigns.directory.records")
    monkeypatch.setattr(sys.modules[__name__], "_import_graph", lambda: graph)
    with pytest.raises(AssertionError, match="numerics.linalg -> trieste_scalable.campaigns"):
        test_every_import_points_down_the_layer_order()


def test_no_two_packages_or_campaign_subpackages_import_each_other() -> None:
    """The layers above, read per package (``campaigns`` and ``cluster`` do not import each other)
    and per subpackage of ``campaigns/``."""
    graph = _import_graph()

    def package(module: str) -> str:
        return ".".join(module.split(".")[1:2])

    def subpackage(module: str) -> str:
        parts = module.split(".")[1:3]
        return ".".join(parts if parts[:1] == ["campaigns"] else parts[:1])

    for unit in (package, subpackage):
        edges = {(unit(a), unit(b)) for a, found in graph.items() for b in found}
        mutual = sorted(f"{a} <-> {b}" for a, b in edges if a < b and (b, a) in edges)
        assert not mutual, mutual


# The library: what a Trieste user imports (numerics, samplers, kernels, the packed search
# space, models, rules). Everything else is the application built on it (campaigns, screening,
# the command line).
LIBRARY = ("numerics", "sampling", "kernels", "packed_space", "models", "acquisition")


def test_the_library_never_imports_the_application() -> None:
    graph = _import_graph()
    library = {
        name for name in graph if name.removeprefix("trieste_scalable.").split(".")[0] in LIBRARY
    }
    assert len(library) > 30
    upward = {
        name: sorted(graph[name] - library - {"trieste_scalable"}) for name in sorted(library)
    }
    assert not {name: found for name, found in upward.items() if found}


def test_the_pure_tensorflow_layers_never_import_trieste() -> None:
    """``numerics/`` and ``sampling/`` are documented as pure TensorFlow, testable without
    Trieste: no import of it, directly or through another module of the package."""
    root = Path(trieste_scalable.__file__).parent
    graph = _import_graph()
    pure = [name for name in graph if name.split(".")[1:2] in (["numerics"], ["sampling"])]
    assert len(pure) > 10
    reached = set(pure)
    frontier = list(pure)
    while frontier:
        for imported in graph[frontier.pop()] - reached:
            reached.add(imported)
            frontier.append(imported)
    importing_trieste = []
    for name in sorted(reached):
        relative = Path(*name.split(".")[1:])
        path = root / relative / "__init__.py" if (root / relative).is_dir() else root / relative
        path = path if path.suffix else path.with_suffix(".py")
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            if any(n == "trieste" or n.startswith("trieste.") for n in names):
                importing_trieste.append(name)
    assert not importing_trieste, importing_trieste


def test_the_package_root_holds_few_modules_and_no_leftover_shims() -> None:
    """The root holds the modules every layer shares (errors, logging, kernels, files, the packed
    search space); each subsystem is a subpackage (issue: a root that shows its layers)."""
    root = Path(trieste_scalable.__file__).parent
    loose = sorted(p.stem for p in root.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(loose) <= 5, loose
    assert {"cli", "arguments", "ray_cluster", "ray_reaper", "_moved"}.isdisjoint(loose)


def test_only_the_command_handles_argparse() -> None:
    """Below the command, settings travel as a typed specification, never as a namespace."""
    root = Path(trieste_scalable.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        if path.relative_to(root).parts[0] == "cli":
            continue
        text = path.read_text()
        tree = ast.parse(text)
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        if "argparse" in names or "vars(args)" in text:
            found.append(str(path.relative_to(root)))
    assert not found, found


def test_nothing_below_the_command_imports_it() -> None:
    graph = _import_graph()
    command = {name for name in graph if name.split(".")[1:2] == ["cli"]}
    assert command
    upward = {name: sorted(graph[name] & command) for name in graph if name not in command}
    assert not {
        name: found
        for name, found in upward.items()
        if found and name != "trieste_scalable.__main__"
    }
