"""The problem-code catalog (``core.codes``) is the one list of codes: every code a UNS error
class carries or a raise site names is in it, with the status and title the problem body gets,
and no raise site spells a code as a string literal."""
import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

from core import codes
from core.codes import CATALOG
from core.errors import UNSError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "notifications", "policies", "console", "uns_project")
# Keyword ``code=`` arguments that are not problem codes: Django form errors, WebSocket close
# codes, a model column.
NOT_PROBLEMS = ("ValidationError", "close", "update")


def _sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path, ast.parse(path.read_text(), str(path))


def _all_subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)


def test_every_error_class_carries_a_catalogued_code_with_its_status_and_title():
    for package in PACKAGES:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            if ".migrations" not in info.name and ".management.commands" not in info.name:
                importlib.import_module(info.name)
    classes = list(_all_subclasses(UNSError))
    assert len(classes) > 10
    for cls in [UNSError, *classes]:
        assert cls.code in CATALOG, cls
        assert (cls.status, cls.title) == tuple(CATALOG[cls.code]), cls


def test_raise_sites_name_codes_from_the_catalog_never_as_literals():
    literal, unknown = [], []
    for path, tree in _sources():
        where = path.relative_to(ROOT)
        uses_catalog = any(isinstance(n, ast.ImportFrom) and n.module == "core" and any(a.name == "codes" for a in n.names)
                           for n in ast.walk(tree))
        for node in ast.walk(tree):
            if uses_catalog and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "codes":
                if not hasattr(codes, node.attr):
                    unknown.append(f"{where}:{node.lineno} codes.{node.attr}")
            if isinstance(node, ast.Call) and not ast.unparse(node.func).endswith(NOT_PROBLEMS):
                for kw in node.keywords:
                    if kw.arg == "code" and isinstance(kw.value, ast.Constant):
                        literal.append(f"{where}:{node.lineno} {kw.value.value!r}")
                if ast.unparse(node.func).split(".")[-1] == "problem" and len(node.args) > 1 \
                        and isinstance(node.args[1], ast.Constant):
                    literal.append(f"{where}:{node.lineno} problem({node.args[1].value!r})")
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "code" for t in node.targets) \
                    and isinstance(node.value, ast.Constant) and path != ROOT / "core" / "codes.py":
                literal.append(f"{where}:{node.lineno} code = {node.value.value!r}")
    assert unknown == []
    assert literal == []


def test_the_console_copy_is_generated_from_the_catalog():
    generated = (ROOT / "frontend" / "src" / "generated" / "problem-codes.ts").read_text()
    for code, (status, _title) in CATALOG.items():
        assert f"  {code}: {{ status: {status}," in generated, code
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_problem_codes.py"), "--check"],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
