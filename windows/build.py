"""Cross-builds the project's Windows programs with mingw-w64: the one build both the package (hatch_build.py, a PEP 517
build hook) and the tests use. Standard library only: it runs inside pip's isolated build environment.

    python windows/build.py OUT_DIR          # both programs into OUT_DIR, with BUILD.json

Each program is every `*.cpp` of `common/` and of its own folder. The same PE files run natively on Windows x64
and under Wine on Linux. Compiled programs are kept in a cache keyed by the SHA-256 of their sources, flags and
compiler version (`DMLCONFORM_BUILD_CACHE`, default ~/.cache/dmlconform/windows-build), so the sdist's wheel, a
`pip install .` and the tests do not compile the same sources three times.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMPILER_ENV = "DMLCONFORM_MINGW_CXX"
CACHE_ENV = "DMLCONFORM_BUILD_CACHE"
DEFAULT_COMPILER = "x86_64-w64-mingw32-g++"
INSTALL_HINT = ("install mingw-w64's C++ compiler for x86-64 Windows (Debian/Ubuntu: apt-get install "
                "g++-mingw-w64-x86-64-win32; Fedora: dnf install mingw64-gcc-c++; MSYS2: pacman -S "
                "mingw-w64-x86_64-gcc), or name one with DMLCONFORM_MINGW_CXX")
CXXFLAGS = ("-std=c++17", "-O2", "-Wall", "-Wextra", "-Wno-unknown-pragmas")
LDFLAGS = ("-static", "-static-libgcc", "-static-libstdc++")
RECORD = "BUILD.json"


@dataclass(frozen=True)
class Program:
    name: str  # the .exe's name
    folder: str  # its own sources, beside common/
    libraries: tuple[str, ...]


PROGRAMS = (
    Program("dml_harness.exe", "dml_harness", ("d3d12", "dxgi", "version")),
    Program("ort_dml_host.exe", "ort_host", ("d3d12", "dxgi", "version", "psapi")),
)


class BuildError(RuntimeError):
    """The programs could not be built; the message is one line saying why and what to do."""


@dataclass
class BuildRecord:
    """What a build made: written as BUILD.json beside the programs, read by `dmlconform doctor`."""

    built: bool
    reason: str = ""
    compiler: str = ""
    programs: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"built": self.built, "reason": self.reason, "compiler": self.compiler,
                           "programs": self.programs}, indent=1, sort_keys=True) + "\n"


def find_compiler(environ: dict[str, str] | None = None) -> str:
    """The mingw-w64 C++ compiler's path; BuildError (one line with the fix) when there is none."""
    env = os.environ if environ is None else environ
    named = env.get(COMPILER_ENV, "") or DEFAULT_COMPILER
    found = shutil.which(named)
    if found is None:
        raise BuildError(f"no mingw-w64 C++ compiler ({named} is not on PATH): {INSTALL_HINT}")
    return found


def compiler_version(compiler: str) -> str:
    try:
        done = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"{compiler} --version failed: {exc}") from None
    first = (done.stdout or done.stderr).splitlines()
    if done.returncode != 0 or not first:
        raise BuildError(f"{compiler} --version failed (exit {done.returncode}): {done.stderr.strip()[:200]}")
    return first[0].strip()


def sources(program: Program, root: Path = HERE) -> list[Path]:
    found = sorted((root / "common").glob("*.cpp")) + sorted((root / program.folder).glob("*.cpp"))
    if not any(path.parent.name == program.folder for path in found):
        raise BuildError(f"{root / program.folder}: no C++ sources for {program.name}")
    return found


def _digest(program: Program, root: Path, version: str) -> str:
    digest = hashlib.sha256()
    digest.update(f"{version}\n{' '.join(CXXFLAGS)}\n{' '.join(LDFLAGS)}\n{program.libraries}\n".encode())
    for folder in ("common", program.folder):
        for path in sorted((root / folder).iterdir()):
            if path.suffix in (".cpp", ".h"):
                digest.update(f"{folder}/{path.name}\n".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_folder(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV])
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "dmlconform" / "windows-build"


def _compile(compiler: str, program: Program, root: Path, target: Path) -> None:
    includes = [f"-I{root / 'common'}", f"-I{root / program.folder}"]
    argv = [compiler, *CXXFLAGS, *includes, "-o", str(target), *map(str, sources(program, root)), *LDFLAGS,
            *(f"-l{library}" for library in program.libraries)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not target.is_file():
        errors = [line for line in done.stderr.splitlines() if "error" in line] or done.stderr.splitlines()
        raise BuildError(f"{program.name} did not compile (exit {done.returncode}): "
                         f"{(errors[0] if errors else 'no message').strip()[:300]}")
    if done.stderr.strip():  # the sources compile warning-free; a warning is a new compiler or a mistake
        print(f"windows/build.py: {program.name}: {done.stderr.strip()}", file=sys.stderr)


def _cached_or_built(compiler: str, version: str, program: Program, root: Path, out_dir: Path,
                     cache: Path | None) -> dict[str, str]:
    key = _digest(program, root, version)
    target = out_dir / program.name
    kept = cache / key / program.name if cache is not None else None
    if kept is not None and kept.is_file():
        shutil.copyfile(kept, target)
        origin = "cache"
    else:
        with tempfile.TemporaryDirectory(dir=out_dir) as scratch:
            made = Path(scratch) / program.name
            _compile(compiler, program, root, made)
            os.replace(made, target)
        origin = "compiled"
        if kept is not None:
            try:
                kept.parent.mkdir(parents=True, exist_ok=True)
                staging = kept.with_name(f".{program.name}.{os.getpid()}")
                shutil.copyfile(target, staging)
                os.replace(staging, kept)  # a concurrent build of the same key writes the same bytes
            except OSError:
                pass  # a cache that cannot be written only costs the next build its time
    return {"sha256": hashlib.sha256(target.read_bytes()).hexdigest(), "sources_sha256": key, "origin": origin}


def build_programs(out_dir: Path, root: Path = HERE, environ: dict[str, str] | None = None,
                   use_cache: bool = True) -> BuildRecord:
    """Both programs into out_dir with BUILD.json beside them; BuildError when they cannot be built."""
    compiler = find_compiler(environ)
    version = compiler_version(compiler)
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = cache_folder(environ) if use_cache else None
    with ThreadPoolExecutor(max_workers=len(PROGRAMS)) as pool:
        made = list(pool.map(lambda p: _cached_or_built(compiler, version, p, root, out_dir, cache), PROGRAMS))
    record = BuildRecord(True, compiler=version, programs={p.name: m for p, m in zip(PROGRAMS, made, strict=True)})
    (out_dir / RECORD).write_text(record.to_json())
    return record


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python windows/build.py OUT_DIR", file=sys.stderr)
        return 2
    try:
        record = build_programs(Path(argv[1]))
    except BuildError as exc:
        print(f"windows/build.py: {exc}", file=sys.stderr)
        return 1
    for name, facts in record.programs.items():
        print(f"{Path(argv[1]) / name}: {facts['origin']}, sha256 {facts['sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
