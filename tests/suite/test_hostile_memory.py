"""The issue's zip bomb, measured: a 1 MB .npz whose member declares 2^28 float32 zeros (1 GiB), referenced by a case
declaring shape [4], is refused having spent well under 100 MB: peak resident memory of a process loading it, against
the same process loading an honest suite of the same shape (before: 1.09 GB, the member inflated whole)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.hostile_files import suite_with_file, zip_bomb

LOAD = """
import sys
from pathlib import Path
from dmlconform.suite import SuiteError
from dmlconform.suite.loader import load_paths
try:
    load_paths([Path(sys.argv[1])])
    outcome = "loaded"
except SuiteError as exc:
    outcome = str(exc)
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(peak * 1024)
print(outcome)
"""
MB = 1_000_000


def peak_and_outcome(suite: Path) -> tuple[int, str]:
    process = subprocess.run([sys.executable, "-c", LOAD, str(suite)], capture_output=True, text=True, check=True)
    peak, outcome = process.stdout.splitlines()
    return int(peak), outcome


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
@pytest.mark.slow
def test_the_zip_bomb_is_refused_in_well_under_100_mb(tmp_path: Path) -> None:
    (tmp_path / "bomb").mkdir()
    bomb = zip_bomb(tmp_path / "bomb" / "a.npz")
    assert 900_000 < bomb.stat().st_size < 1_200_000  # the "1 MB .npz"
    bomb_peak, refused = peak_and_outcome(suite_with_file(tmp_path / "bomb" / "s.yaml", "a.npz:x", [4]))
    honest = tmp_path / "honest"
    honest.mkdir()
    np.savez_compressed(honest / "a.npz", x=np.zeros(4, np.float32))
    honest_peak, loaded = peak_and_outcome(suite_with_file(honest / "s.yaml", "a.npz:x", [4]))
    assert loaded == "loaded"
    assert refused.endswith("case 'bomb': inputs.InputTensor.file: holds shape [268435456], but shape says [4]")
    assert bomb_peak < 100 * MB, f"peak {bomb_peak / MB:.0f} MB"
    assert bomb_peak - honest_peak < 8 * MB, f"bomb {bomb_peak / MB:.1f} MB, honest {honest_peak / MB:.1f} MB"


def test_the_bomb_builder_makes_valid_archives(tmp_path: Path) -> None:
    """The bombs are real: numpy (zipfile, CRC checked) reads a small one as the zeros it declares."""
    import zlib

    from tests.hostile_files import crc32_of_zeros

    assert all(crc32_of_zeros(n, crc) == zlib.crc32(bytes(n), crc) for n in (0, 1, 7, 8, 1000, 65537)
               for crc in (0, 12345, 0xFFFFFFFF))
    with np.load(zip_bomb(tmp_path / "small.npz", count=1 << 20)) as archive:
        zeros = archive["x"]
    assert zeros.shape == (1 << 20,) and zeros.dtype == np.float32 and not zeros.any()
