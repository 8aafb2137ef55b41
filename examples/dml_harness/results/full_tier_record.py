"""Records which full tier the kept real-DirectML results ran: the generator's fingerprint and each full-tier suite
file's SHA-256 (full-tier.json beside this script), so that a fast test can tell whether today's full tier is still
that one without generating it (tests/known_issues/test_kept_results.py).

    python examples/dml_harness/results/full_tier_record.py           # generate the full tier afresh and compare
    python examples/dml_harness/results/full_tier_record.py --write   # ... and rewrite the record

The full tier is generated into a cache of its own (about a minute on two cores). Its files are compared with the ones
the kept full-tier results name (directml-1.15.4-*-full.json.xz): the record is rewritten only when every one of them
is unchanged, or with --write when you have taken the kept results again on the new tier.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORD = HERE / "full-tier.json"
KEPT = sorted(HERE.glob("directml-*-full.json.xz"))


def generated_full_tier() -> tuple[str, dict[str, str]]:
    """(generator fingerprint, suite name -> SHA-256 of its YAML) of the full tier generated now."""
    with tempfile.TemporaryDirectory() as cache:
        os.environ["DMLCONFORM_CACHE"] = cache
        from dmlconform.generation.cache import generator_fingerprint
        from dmlconform.generation.tier_files import ensure_full_tier

        folder = ensure_full_tier(print)
        files = {f"{path.stem}.full": hashlib.sha256(path.read_bytes()).hexdigest()
                 for path in sorted(folder.glob("*.yaml"))}
        return generator_fingerprint(), files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite the record even where the files changed")
    args = parser.parse_args()
    generator, files = generated_full_tier()
    changed = []
    for path in KEPT:
        kept = json.loads(lzma.decompress(path.read_bytes()))["suite"]["files"]
        changed += [f"{path.name}: {name}" for name, digest in files.items() if kept.get(name) != digest]
    for line in changed:
        print(f"changed since the kept results: {line}")
    if changed and not args.write:
        print("the full tier is not the one the kept results ran: take them again (examples/dml_harness/device/), "
              "then run this with --write")
        return 1
    RECORD.write_text(json.dumps({"generator": generator, "files": files}, indent=1, sort_keys=True) + "\n")
    print(f"{RECORD.name}: generator {generator[:12]}, {len(files)} full-tier suite files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
