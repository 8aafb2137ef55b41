"""Do DirectML 1.15.4's two known bugs explain every failure of a real run? The simulated drivers that model them
(tests/oracle/drivers.py: `slice-merges-whole-axes`, the model of slice_grad_merged_axes.py, and
`pool-max-starts-at-flt-max`, the model of maxpool_lowest_windows.py) run through the real runner over the tier's
valid SliceGrad and MaxPoolingGrad cases; the cases either fails must be exactly the valid cases each result FAILed
(or that its baseline turned into EXPECTED_FAIL). Negative cases (DirectML's own validation, baselined apart) are
left out.

  python examples/dml_harness/investigate/known_bugs.py --tier standard RESULT.json [RESULT2.json ...]

Prints, per result, the cases both agree on, those only the models fail and those only the result fails; exit
status 1 when they differ anywhere.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from dmlconform.case_result import Status  # noqa: E402
from dmlconform.generation.tier_files import ensure_full_tier  # noqa: E402
from dmlconform.results.document import read_document  # noqa: E402
from dmlconform.runner import run_cases  # noqa: E402
from dmlconform.suite.loader import load_paths  # noqa: E402
from dmlconform.suite.tiers import Tier  # noqa: E402
from tests.oracle.drivers import BUG_ENTRIES, SimulatedDriver, _bug  # noqa: E402

MODELS = {"SLICE_GRAD": "slice-merges-whole-axes", "MAX_POOLING_GRAD": "pool-max-starts-at-flt-max"}
#: What DirectML 1.15.4 was measured to do where the pages leave it open (DECISIONS.md §4): it refuses a gradient that
#: is not the pooled size, so the model does too (the refusal is a candidate answer).
DIRECTML_KNOBS = {"pool_gradient_size": "refused"}
FAILED = (Status.FAIL, Status.EXPECTED_FAIL)


def predicted(tier: Tier) -> tuple[dict[str, str], set[str]]:
    """Case id -> the bug that fails it, over the tier's valid cases of the two operators; and those cases' ids."""
    roots = [ensure_full_tier(lambda line: print(line, file=sys.stderr))] if tier is Tier.FULL else []
    cases = [c for c in load_paths([ROOT / "test_vectors", *roots], tier)
             if c.op.name in MODELS and not c.expect_invalid]
    found: dict[str, str] = {}
    for op, bug in MODELS.items():
        scoped = [c for c in cases if c.op.name == op]
        knobs = replace(_bug(BUG_ENTRIES[bug]), **DIRECTML_KNOBS)
        for result in run_cases(scoped, SimulatedDriver(knobs)).results:
            if result.status not in (Status.PASS, Status.INVALID_OK):
                found[result.id] = bug
    return found, {c.full_id for c in cases}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--tier", choices=("smoke", "standard", "full"), default="standard")
    args = parser.parse_args()
    model, valid = predicted(Tier(args.tier))
    agree = True
    for path in args.results:
        run = read_document(path)
        failed = {r.id for r in run.results if r.status in FAILED and r.id in valid}
        both = sorted(failed & set(model))
        only_model, only_run = sorted(set(model) - failed), sorted(failed - set(model))
        print(f"{path}: {len(both)} failed as the models predict"
              + "".join(f"\n  {case_id} ({model[case_id]})" for case_id in both))
        for label, ids in (("only the models fail", only_model), ("only the run fails", only_run)):
            if ids:
                print(f"  {label}: " + ", ".join(ids))
        agree &= not only_model and not only_run
    print("the two bugs explain every failure of every valid case" if agree else "they do NOT explain the failures")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
