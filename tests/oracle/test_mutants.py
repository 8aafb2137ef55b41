"""Both promises of the oracle, on the bundled cases (the standard tier), through the real runner, on every path.

A right answer passes: every legitimate simulated driver gets PASS or INVALID_OK on every case of the operators
its knobs touch (a tier scan: the smoke tier in the test command, the standard tier in .ci/run). A wrong answer
fails: every simulated bug gets FAIL on at least one case of the standard tier, and every bug whose catalogue entry
says `must_die_on="smoke"` (it breaks a rule the pages state outright) on one of the smoke tier; the cases are tried
cheapest first and the first FAIL is enough. Both run on the oracle's share of the tier (tests/oracle/conftest.py:
every case up to ORACLE_COST, which is nearly all of them), each case on every path that applies to it (operator,
graph, in place: contract §9), its layout cases included; a driver meets whole buffers wherever a case has them.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dmlconform.backends.base import OutcomeKind
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.compare.comparator import judge
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import HIGHEST
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, TensorDesc
from dmlconform.runner import run_case, run_cases
from dmlconform.suite.loader import load_paths
from dmlconform.suite.tiers import Tier
from dmlconform.surface.buffers import images_before, read_back
from tests.oracle.conftest import REPO, on_every_path, oracle_share
from tests.oracle.drivers import (
    BUFFER_BUGS,
    BUG_ENTRIES,
    BUGGY,
    BUGS,
    DECISIONS_7,
    KNOB_OPERATORS,
    LEGITIMATE,
    STRAIGHT,
    TIERS_THAT_KILL,
    UNCATCHABLE,
    Knobs,
    SimulatedDriver,
    in_scope,
    is_buffer_variant,
)

ACCEPTED = (Status.PASS, Status.INVALID_OK)

pytestmark = pytest.mark.slow  # about 65 runs of a simulated driver over the standard tier


def scoped(knobs: Knobs, cases: list[Case]) -> list[Case]:
    return [case for case in cases if in_scope(knobs, case)]


def output_of(driver: SimulatedDriver, case: Case) -> np.ndarray:
    """The driver's logical output (read from its buffers where the case has them)."""
    outcome = driver.run(case)
    if outcome.images is not None:
        before = images_before(case.description, case.binding, case.inputs)
        return read_back(case.description, case.binding, before, outcome.images).outputs["OutputGradientTensor"]
    return outcome.outputs["OutputGradientTensor"]


def test_the_oracle_runs_on_nearly_every_case_and_every_knob_has_a_scope(bundled_cases, oracle_cases):
    assert len(oracle_cases) >= 0.9 * len(bundled_cases)
    fields = set(Knobs.__dataclass_fields__) - {"name", "summary", "bug"}
    assert fields == set(KNOB_OPERATORS)


# Every legitimate driver over every case is most of this module's time (~45 s of CPU on the standard tier): a tier
# scan, on the smoke tier in the test command and on the standard tier in .ci/run's scan step. A bug needs only one
# failing case, found early, so the test below keeps the standard tier everywhere.
@pytest.mark.tier_scan
@pytest.mark.parametrize("knobs", LEGITIMATE, ids=lambda k: k.name)
def test_every_legitimate_variant_passes_every_bundled_case(knobs, scanned_oracle_cases):
    cases = scoped(knobs, scanned_oracle_cases)
    assert cases
    results = run_cases(cases, SimulatedDriver(knobs)).results
    rejected = [f"{r.id}: {r.status.value} {r.message}" for r in results if r.status not in ACCEPTED]
    assert not rejected, "\n".join(rejected[:10])


def _tier_params(tier: str) -> list:
    """The bugs that must die on `tier`."""
    return [pytest.param(knobs, id=knobs.name)
            for knobs in BUGGY if Tier(BUG_ENTRIES[knobs.name].must_die_on).rank <= Tier(tier).rank]


#: What each buffer bug needs to show, for the message when a tier lacks it.
NEEDS = {
    "layout-input-strides-ignored": "an input with Strides that are not packed (gaps, broadcast, another order)",
    "layout-offset-ignored": "a tensor bound at a nonzero Offset",
    "layout-output-written-packed": "an output with Strides that are not packed",
    "layout-padding-zeroed": "an output with bytes between or after its elements (gaps, TotalTensorSizeInBytes "
                             "above the footprint, an fp16 or 8-bit tensor whose footprint is no multiple of 4)",
    "output-read-before-write": "a MaxPoolingGrad or ResampleGrad1 case with whole buffers (a layout, or the graph "
                                "path)",
    "in-place-gradient-copied-first": "a ClipGrad1 case in place where dY is out of [Min, Max] while X is in it, or "
                                      "the other way round",
    "in-place-vector-tail-rereads-output": "a ClipGrad1 case in place of more than 4 elements, no multiple of 4, "
                                           "whose output re-read as X changes one of elements n-4 .. 4·floor(n/4)-1",
    "graph-edge-strides-lost": "a case with a strided input on the graph path",
}


def _fails_somewhere(knobs: Knobs, cases: list[Case], where: str) -> None:
    driver = SimulatedDriver(knobs)
    for case in (case for case in cases if in_scope(knobs, case)):  # lazily: the first FAIL ends the search
        result = run_case(case, driver, HIGHEST)
        assert result.status in (*ACCEPTED, Status.FAIL), f"{case.full_id}: a bug should show as FAIL, not " \
                                                          f"{result.status.value} ({result.message})"
        if result.status is Status.FAIL:
            return
    pytest.fail(f"{knobs.name} survives every {where} case" + (f" on every path; it needs {NEEDS[knobs.name]}"
                                                               if knobs.name in NEEDS else ""))


@pytest.mark.parametrize("knobs", _tier_params("standard"))
def test_every_bug_fails_at_least_one_bundled_case(knobs, oracle_cases_on_paths):
    _fails_somewhere(knobs, oracle_cases_on_paths, "standard")


@pytest.fixture(scope="module")
def smoke_oracle_cases() -> list[Case]:
    """The oracle's share of the smoke tier, the tier CI runs on every commit (whatever --scan-tier says), on every
    path."""
    return on_every_path(oracle_share(load_paths([REPO / "test_vectors"], Tier.SMOKE)))


@pytest.mark.parametrize("knobs", _tier_params("smoke"))
def test_every_bug_that_breaks_a_stated_rule_fails_a_smoke_case(knobs, smoke_oracle_cases):
    _fails_somewhere(knobs, smoke_oracle_cases, "smoke")


def test_the_catalogue_is_data_and_every_real_bug_names_its_source():
    names = [bug.name for bug in BUGS]
    assert len(names) == len(set(names)) == len(BUGGY)
    assert {bug.must_die_on for bug in BUGS} <= set(TIERS_THAT_KILL)
    real = [bug for bug in BUGS if bug.source is not None]
    assert len(real) >= 10
    for bug in real:
        assert bug.seen_in, bug.name
        if bug.source.startswith("https://"):
            assert bug.source.startswith("https://github.com/") and bug.source.split("/")[5] in ("issues", "pull"), \
                bug.name
        else:
            assert (REPO / bug.source).is_file(), bug.name
    assert all(not bug.seen_in for bug in BUGS if bug.source is None)
    assert set(NEEDS) == set(BUFFER_BUGS) <= set(names)
    directml = {bug.name for bug in real if bug.source == DECISIONS_7}
    assert directml == {"slice-merges-whole-axes", "pool-max-starts-at-flt-max"}
    assert all(BUG_ENTRIES[name].must_die_on == "smoke" for name in directml)


def _same_elements(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bit for bit, except that any NaN equals any NaN and +0 equals -0 (the contract's float equality)."""
    same = a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")
    if a.dtype.kind == "f":
        same |= (np.isnan(a) & np.isnan(b)) | ((a == 0) & (b == 0))
    return same


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all(_same_elements(a, b)))


def _differs(case: Case, output: np.ndarray) -> bool:
    """Whether `output` differs from every answer of the case."""
    return not any(_same_bits(answer["OutputGradientTensor"], output) for answer in case.answers().values())


def test_the_second_derivation_reproduces_every_golden_bit_for_bit(oracle_cases):
    # The straight driver is the contract written again without dmlconform.ops: exact sums rounded once.
    driver = SimulatedDriver(STRAIGHT)
    for case in oracle_cases:
        outcome = driver.run(case)
        if case.expect_invalid:
            assert outcome.kind is OutcomeKind.REFUSED, case.full_id
            continue
        assert not _differs(case, output_of(driver, case)), case.full_id


@pytest.mark.parametrize("knobs", [k for k in LEGITIMATE if k is not STRAIGHT and not is_buffer_variant(k)],
                         ids=lambda k: k.name)
def test_every_legitimate_variant_uses_its_freedom_somewhere(knobs, oracle_cases):
    """A variant that never leaves the golden's bits (or the default candidate) would prove nothing. (A buffer
    variant's freedom is how it stores, not what: tests/oracle/test_buffers.py.)"""
    driver = SimulatedDriver(knobs)
    for case in scoped(knobs, oracle_cases):
        if case.expect_invalid:
            continue
        if driver.run(case).kind is OutcomeKind.REFUSED:  # a refusal candidate (a description DirectML may refuse)
            return
        output = output_of(driver, case)
        default = next(iter(case.answers().values()))["OutputGradientTensor"]
        if not np.array_equal(output.view(f"u{output.itemsize}"), default.view(f"u{default.itemsize}")):
            return
    pytest.fail(f"{knobs.name} produced the default answer bit for bit on every case")


def _double_rounding_witness() -> Case:
    """A LINEAR fp16 case whose element 0 sums to 1.69482419…, just above the fp16 midpoint 1.6943359375 +
    2^-11 but within half an fp32 ULP of it: rounded once it is 1.694, through fp32 it is 1.695. Found by
    a search; no bundled case happens to contain such a sum."""
    op = find_operator("RESAMPLE_GRAD1")
    params = {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING", "Scales": [3.0],
              "InputPixelOffsets": [0.0], "OutputPixelOffsets": [0.0]}
    f16 = DataType.FLOAT16
    desc = Description(op, op.parse_params(params, f16), {"InputGradientTensor": TensorDesc(f16, (3,)),
                                                          "OutputGradientTensor": TensorDesc(f16, (3,))})
    dy = np.array([1.1689453125, 0.374267578125, 0.8291015625], dtype=np.float16)
    golden = op.reference(desc, {"InputGradientTensor": dy}).outputs
    return Case("oracle", "double-rounding-witness", REPO / "tests", desc, {"InputGradientTensor": dy}, golden)


def _uncatchable(name: str) -> Knobs:
    return next(knobs for knobs in UNCATCHABLE if knobs.name == name)


def test_double_rounding_is_a_one_ulp_change_where_the_contract_lets_an_element_round(oracle_cases):
    """fp16 sums rounded twice survive by construction (docs/tolerances.md §6); show that they change only that."""
    driver = SimulatedDriver(_uncatchable("fp16-double-rounding"))
    changed = 0
    for case in [*oracle_cases, _double_rounding_witness()]:
        if case.expect_invalid or case.expected is None:
            continue
        output = output_of(driver, case)
        expected = case.expected["OutputGradientTensor"]
        reference = case.op.reference(case.description, case.inputs)
        accumulation = reference.accumulation.get("OutputGradientTensor")
        if accumulation is None:
            assert np.array_equal(output.view(np.uint8), expected.view(np.uint8)), case.full_id
            continue
        moved = np.flatnonzero(~_same_elements(expected, output))
        count = np.broadcast_to(accumulation.count, expected.shape).ravel()[moved]
        factors = np.broadcast_to(accumulation.weight_factors, expected.shape).ravel()[moved]
        assert np.all((count >= 2) | (factors >= 1)), case.full_id
        verdict = judge(expected, output, case.dtype, case.tolerance or case.op.default_tolerance(
            case.description, reference), accumulation)
        assert verdict.passed and (verdict.max_ulp or 0) <= 1, case.full_id
        changed += moved.size
    assert changed > 0, "fp16-double-rounding never changed an element: it is not exercised"


def test_coordinates_in_float64_move_only_what_a_d3d_float32_evaluation_may_move(oracle_cases):
    """ResampleGrad1 coordinates computed in float64 differ from every correctly rounded float32 order only at
    coordinates within γ_7·A of an integer, which D3D's 2.5-ULP division may put on either side (docs/tolerances.md
    §5b): every case passes, and the cases it changes have such coordinates."""
    from dmlconform.ops.resample_grad1 import RESAMPLE_GRAD1

    driver, straight = SimulatedDriver(_uncatchable("resample-coordinate-in-float64")), SimulatedDriver(STRAIGHT)
    changed = 0
    for case in scoped(driver.knobs, oracle_cases):
        result = run_case(case, driver, HIGHEST)
        assert result.status in ACCEPTED, f"{case.full_id}: {result.status.value} {result.message}"
        if case.expect_invalid:
            continue
        ours, theirs = (output_of(d, case) for d in (driver, straight))
        if not _same_bits(ours, theirs):
            changed += 1
            known = RESAMPLE_GRAD1.uncertain_coordinates(case.description, driver.knobs.resample_offsets)
            assert any(delta.any() for _, delta in known), case.full_id
    assert changed > 0, "float64 coordinates never changed an output: they are not exercised"


def _witness(op_name: str, params: dict, dtype: DataType, inputs: dict[str, np.ndarray],
             output_shape: tuple[int, ...]) -> Case:
    op = find_operator(op_name)
    tensors = {name: TensorDesc(dtype, values.shape) for name, values in inputs.items()}
    desc = Description(op, op.parse_params(params, dtype), {**tensors, "OutputGradientTensor": TensorDesc(dtype,
                                                                                                         output_shape)})
    return Case("oracle", f"{op_name.lower()}-witness", REPO / "tests", desc, inputs, op.reference(desc, inputs).outputs)


#: The smallest case for each DirectML bug, built here: each kills its bug and passes every legitimate variant (the
#: generator's known-bug families, generation/families/known_bugs.py, put such cases in the smoke and standard tiers).
DIRECTML_WITNESSES = {
    "slice-merges-whole-axes": lambda: _witness(
        "SLICE_GRAD", {"InputWindowOffsets": [0, 0], "InputWindowSizes": [3, 4], "InputWindowStrides": [1, 1]},
        DataType.FLOAT32, {"InputGradientTensor": np.arange(1, 7, dtype=np.float32).reshape(3, 2)}, (3, 4)),
    "pool-max-starts-at-flt-max": lambda: _witness(
        "MAX_POOLING_GRAD", {"Strides": [1, 1], "WindowSize": [1, 2], "StartPadding": [0, 0], "EndPadding": [0, 0],
                             "Dilations": [1, 1]}, DataType.FLOAT32,
        {"InputTensor": np.array([-np.inf, np.finfo(np.float32).min], np.float32).reshape(1, 1, 1, 2),
         "InputGradientTensor": np.ones((1, 1, 1, 1), np.float32)}, (1, 1, 1, 2)),
}


@pytest.mark.parametrize("name", sorted(DIRECTML_WITNESSES))
def test_the_smallest_case_of_each_directml_bug_kills_it_and_passes_every_legitimate_variant(name):
    case = DIRECTML_WITNESSES[name]()
    bug = next(knobs for knobs in BUGGY if knobs.name == name)
    assert run_case(case, SimulatedDriver(bug), HIGHEST).status is Status.FAIL
    for knobs in LEGITIMATE:
        result = run_case(case, SimulatedDriver(knobs), HIGHEST)
        assert result.status in ACCEPTED, f"{knobs.name}: {result.status.value} {result.message}"


def test_directmls_slice_bug_is_the_model_that_reproduced_its_outputs(bundled_cases):
    """`slice-merges-whole-axes` writes what examples/dml_harness/investigate/slice_grad_merged_axes.py's model
    writes (the model DirectML 1.15.4 matched bit for bit), on every bundled SliceGrad case and the smallest one."""
    import importlib.util

    path = REPO / "examples" / "dml_harness" / "investigate" / "slice_grad_merged_axes.py"
    spec = importlib.util.spec_from_file_location("slice_grad_merged_axes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    driver = SimulatedDriver(next(knobs for knobs in BUGGY if knobs.name == "slice-merges-whole-axes"))
    cases = [case for case in bundled_cases if case.op.name == "SLICE_GRAD" and not case.expect_invalid]
    for case in [*cases, DIRECTML_WITNESSES["slice-merges-whole-axes"]()]:
        ours = output_of(driver, case)
        assert _same_bits(ours, module.model_output(case)), case.full_id


def test_directmls_pooling_bug_picks_what_directml_picked_in_the_probe():
    """DECISIONS.md §7's probe: every window of 2 or 3 taps over {-inf, -FLT_MAX, -1, NaN} holding a -inf or a NaN,
    along W, dilation 1 and 2. DirectML's pick differed from the reference's in 32 of its 136 windows (64 of 272 with
    the H axis), each with nothing above -FLT_MAX, and was a running maximum from -FLT_MAX on the first tap in all."""
    values = {"-inf": -np.inf, "-max": float(np.finfo(np.float32).min), "-1": -1.0, "nan": np.nan}
    driver = SimulatedDriver(next(knobs for knobs in BUGGY if knobs.name == "pool-max-starts-at-flt-max"))
    windows = differ = 0
    for taps, dilation in ((2, 1), (3, 1), (2, 2), (3, 2)):
        probe = [w for w in itertools.product(values, repeat=taps) if "-inf" in w or "nan" in w]
        extent = (taps - 1) * dilation + 1
        x = np.full(len(probe) * extent, 5, np.float32)
        for w, window in enumerate(probe):
            for t, name in enumerate(window):
                x[w * extent + t * dilation] = values[name]
        case = _witness("MAX_POOLING_GRAD", {"Strides": [1, extent], "WindowSize": [1, taps], "StartPadding": [0, 0],
                                             "EndPadding": [0, 0], "Dilations": [1, dilation]}, DataType.FLOAT32,
                        {"InputTensor": x.reshape(1, 1, 1, -1),
                         "InputGradientTensor": np.arange(1, len(probe) + 1, dtype=np.float32).reshape(1, 1, 1, -1)},
                        (1, 1, 1, x.size))
        ours, golden = output_of(driver, case).ravel(), case.expected["OutputGradientTensor"].ravel()
        for w, window in enumerate(probe):
            places = [w * extent + t * dilation for t in range(taps)]
            pick = next(t for t, p in enumerate(places) if ours[p] == w + 1)
            running, expected = float(np.finfo(np.float32).min), 0
            for t, name in enumerate(window):
                if values[name] > running:
                    running, expected = values[name], t
            assert pick == expected, window
            windows += 1
            differ += pick != next(t for t, p in enumerate(places) if golden[p] == w + 1)
    assert (windows, differ) == (136, 32)
