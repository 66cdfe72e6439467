"""Write the perturbation catalogue table (docs/perturbations.md) from the registry.

Run: `PYTHONPATH=src python scripts/catalogue.py [--check]`; `--check` fails when the file is
out of date instead of rewriting it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalstress.perturb.catalogue import catalogue_markdown

TARGET = Path(__file__).resolve().parents[1] / "docs" / "perturbations.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only check the file is current")
    parser.add_argument("--out", type=Path, default=TARGET)
    args = parser.parse_args()
    text = catalogue_markdown()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is out of date: run python scripts/catalogue.py", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
