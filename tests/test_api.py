"""The public surface: every public class and function has a docstring (the API reference is
generated from them), and the package imports without cycles."""

import importlib
import inspect
import pkgutil

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
