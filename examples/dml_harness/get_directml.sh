#!/bin/bash
# Fetches DirectML.dll (x64) from the onnxruntime-directml Windows wheel on PyPI and puts it in DEST
# (default: build/ next to this script, where the harness looks first). Needs pip and unzip.
#   get_directml.sh [DEST_DIR]
# Pinned: onnxruntime-directml 1.24.4 ships DirectML 1.15.4.0 (feature level 6_4); the checksum below
# is that DLL's. Set ORT_DML_VERSION to try another wheel (the checksum is then only reported).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/build}
version=${ORT_DML_VERSION:-1.24.4}
expected=c07cb8c2f870f0152bfb690f64c4b048e78bbc219efad420a9758fc896cbecb0
read -r -a pip <<< "${PIP:-python3 -m pip}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${pip[@]}" download --quiet --no-deps --only-binary=:all: --platform win_amd64 --python-version 3.11 \
    "onnxruntime-directml==$version" -d "$work" >&2
unzip -q -o -j "$work"/onnxruntime_directml-*.whl onnxruntime/capi/DirectML.dll -d "$work"
sum=$(sha256sum "$work/DirectML.dll" | cut -d' ' -f1)
if [ "$version" = 1.24.4 ] && [ "$sum" != "$expected" ]; then
    echo "get_directml.sh: DirectML.dll sha256 $sum, expected $expected" >&2
    exit 1
fi
mkdir -p "$dest"
cp "$work/DirectML.dll" "$dest/DirectML.dll"
echo "get_directml.sh: $dest/DirectML.dll (onnxruntime-directml $version, sha256 $sum)" >&2
