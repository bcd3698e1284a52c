#!/usr/bin/env python3
"""Generate the console's problem codes (frontend/src/generated/problem-codes.ts) from the
catalog (core/codes.py). Run after adding a code and commit the result; ``--check`` fails when
the committed file differs (scripts/test.sh runs it)."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.codes import CATALOG  # noqa: E402  (the path above makes the repository importable)

TARGET = ROOT / "frontend" / "src" / "generated" / "problem-codes.ts"


def render() -> str:
    lines = [
        "// Generated from core/codes.py by scripts/gen_problem_codes.py: do not edit.",
        "// Every problem code the server can answer with, its HTTP status and title.",
        "export const PROBLEM_CODES = {",
    ]
    for code in sorted(CATALOG):
        status, title = CATALOG[code]
        lines.append(f'  {code}: {{ status: {status}, title: {json.dumps(title)} }},')
    lines += ["} as const;", "", "export type ProblemCode = keyof typeof PROBLEM_CODES;", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET.relative_to(ROOT)} is out of date: run scripts/gen_problem_codes.py and commit",
                  file=sys.stderr)
            return 1
        print("generated problem codes are up to date")
        return 0
    TARGET.write_text(text)
    print(f"regenerated {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
