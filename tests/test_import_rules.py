"""Imports point down (``lint-imports``, ``scripts/check_import_cycles.py``), so an import inside
a function is never needed to dodge a circle: one is allowed only with a comment on its line
saying why it cannot be at the top (start-up cost of a heavy library, the app registry not
ready yet, a lazy package)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "notifications", "policies", "console", "uns_project")


def test_every_import_inside_a_function_says_why():
    silent = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            lines = path.read_text().splitlines()
            for func in ast.walk(ast.parse("\n".join(lines), str(path))):
                if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(func):
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and "#" not in lines[node.lineno - 1]:
                        silent.append(f"{path.relative_to(ROOT)}:{node.lineno} {lines[node.lineno - 1].strip()}")
    assert silent == []
