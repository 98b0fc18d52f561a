"""Sphinx configuration: the Markdown pages of docs/ rendered with MyST and the API reference
generated from the docstrings (built in CI with -W)."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # autodoc imports TensorFlow

project = "trieste-scalable"
author = "trieste-scalable developers"
extensions = ["myst_parser", "sphinx.ext.autodoc"]
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the signatures show them; TensorFlow types do not resolve
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3
exclude_patterns = ["_build"]
html_theme = "alabaster"
suppress_warnings: list[str] = []
# Every cross-reference must resolve (built with -W). The names of the libraries we build on
# are left as text (no intersphinx: the docs build offline); a name our packages re-export
# (``trieste_scalable.models.NystromGPR``) resolves to where it is documented.
nitpicky = True
_OURS_ONLY = r"(trieste|tensorflow|tf|gpflow|gpflux|numpy|np|scipy|ray|rdkit|check_shapes)(\..*)?"
nitpick_ignore_regex = [
    (r"py:.*", _OURS_ONLY),
    (r"py:.*", r"(contextvars|dataclasses|typing|collections|concurrent|pathlib|argparse)\..*"),
    (r"py:class", r"AcquisitionRule|BatchTrustRegion|EfficientGlobalOptimization"),
    (r"py:class", r"DiscreteSearchSpace"),
]


def _resolve_reexport(app, env, node, contnode):  # type: ignore[no-untyped-def]
    """A reference to an object by a path that re-exports it, resolved to where it is defined."""
    import importlib

    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("trieste_scalable."):
        return None
    module_name, _, name = target.rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError, ValueError):
        return None
    defined = f"{getattr(found, '__module__', '')}.{getattr(found, '__qualname__', name)}"
    if defined == target:
        return None
    node["reftarget"] = defined
    domain = env.get_domain("py")
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], defined, node, contnode
    )


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("missing-reference", _resolve_reexport)
