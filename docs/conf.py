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
