"""Sphinx configuration: the Markdown pages of docs/ rendered with MyST (built in CI with -W)."""

project = "trieste-scalable"
author = "trieste-scalable developers"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3
exclude_patterns = ["_build"]
html_theme = "alabaster"
suppress_warnings: list[str] = []
