"""The public surface: every public class and function has a docstring (the API reference is
generated from them), and the package imports without cycles."""

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

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
    """Modules of the package that ``module`` imports at module level (not in functions)."""

    package = module if is_package else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.parse(path.read_text()).body:
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


def test_no_import_cycle_between_modules() -> None:
    root = Path(trieste_scalable.__file__).parent
    modules = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        modules[name] = (path, is_package)
    graph = {
        name: {m for m in _module_imports(path, name, pkg) if m in modules and m != name}
        for name, (path, pkg) in modules.items()
    }
    # a package's __init__ re-exports its modules: only cycles through plain modules count
    plain = {name for name, (_, pkg) in modules.items() if not pkg}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node] & plain:
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(trail + [node, nxt]))
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = 2

    for name in sorted(plain):
        if name not in state:
            visit(name, [])
