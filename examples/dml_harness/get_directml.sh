#!/bin/bash
# Fetches DirectML.dll (x64) from the onnxruntime-directml Windows wheel on PyPI and puts it in DEST
# (default: build/ next to this script, where the harness looks first). Needs pip and unzip.
#   get_directml.sh [--with-onnxruntime] [DEST_DIR]
# --with-onnxruntime also takes onnxruntime.dll and onnxruntime_providers_shared.dll from the same wheel (the ONNX
# Runtime host, examples/ort_dml_host/, loads them; its get_onnxruntime.sh calls this).
# Pinned: onnxruntime-directml 1.24.4 ships DirectML 1.15.4.0 (feature level 6_4); the checksums below are that
# wheel's DLLs. Set ORT_DML_VERSION to try another wheel (the checksums are then only reported).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
files=(DirectML.dll)
if [ "${1:-}" = --with-onnxruntime ]; then
    files+=(onnxruntime.dll onnxruntime_providers_shared.dll)
    shift
fi
dest=${1:-$here/build}
version=${ORT_DML_VERSION:-1.24.4}
declare -A expected=(
    [DirectML.dll]=c07cb8c2f870f0152bfb690f64c4b048e78bbc219efad420a9758fc896cbecb0
    [onnxruntime.dll]=0a49bb13573807ad309aa9967a46471c07d6495bab5b279d1fad474aefd8ef4b
    [onnxruntime_providers_shared.dll]=85cf8642189d1ff9c4bf3c0bc07dd70ee1555fbb554586a3300c865eff7be811
)
read -r -a pip <<< "${PIP:-python3 -m pip}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${pip[@]}" download --quiet --no-deps --only-binary=:all: --platform win_amd64 --python-version 3.11 \
    "onnxruntime-directml==$version" -d "$work" >&2
for f in "${files[@]}"; do
    unzip -q -o -j "$work"/onnxruntime_directml-*.whl "onnxruntime/capi/$f" -d "$work"
    sum=$(sha256sum "$work/$f" | cut -d' ' -f1)
    if [ "$version" = 1.24.4 ] && [ "$sum" != "${expected[$f]}" ]; then
        echo "get_directml.sh: $f sha256 $sum, expected ${expected[$f]}" >&2
        exit 1
    fi
    mkdir -p "$dest"
    cp "$work/$f" "$dest/$f"
    echo "get_directml.sh: $dest/$f (onnxruntime-directml $version, sha256 $sum)" >&2
done
