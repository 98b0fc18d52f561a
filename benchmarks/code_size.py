"""Size of the package at git revisions: all lines, and code lines (not blank, not comment-only,
not inside a docstring), so that consolidation is measured the same way each time.

    python benchmarks/code_size.py REV [REV ...]
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize

SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}


def docstring_lines(tree: ast.AST) -> set[int]:
    """Lines of string-expression statements: module, class, function and attribute docstrings."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str) and node.end_lineno is not None:
                lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def code_lines(source: str) -> int:
    docs = docstring_lines(ast.parse(source))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in SKIPPED or token.type == tokenize.ENDMARKER:
            continue
        lines.update(n for n in range(token.start[0], token.end[0] + 1) if n not in docs)
    return len(lines)


def measure(rev: str) -> tuple[int, int]:
    listing = ["git", "ls-tree", "-r", "--name-only", rev, "trieste_scalable"]
    files = subprocess.run(listing, capture_output=True, text=True, check=True).stdout.split()
    total = code = 0
    for name in files:
        if name.endswith(".py"):
            show = ["git", "show", f"{rev}:{name}"]
            source = subprocess.run(show, capture_output=True, text=True, check=True).stdout
            total += source.count("\n")
            code += code_lines(source)
    return total, code


if __name__ == "__main__":
    for rev in sys.argv[1:]:
        total, code = measure(rev)
        print(f"{rev}: {total} lines, {code} code lines")
