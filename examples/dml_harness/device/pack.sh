#!/bin/bash
# Packs what the DirectML harness needs on a Linux machine with an NVIDIA GPU and no Wine (no network needed
# there): a pruned Wine 8.0 with a ready prefix, Xvfb and the X libraries Wine loads, the Vulkan/GL loader
# packages, the harness and DirectML.dll, a Vulkan float-controls check (vkcheck) and the Python wheels
# dmlconform needs beyond NumPy. Run it on Debian 12 after examples/dml_harness/setup.sh, from the project
# root with the project's venv active; copy the project with the bundle to the GPU machine and run
# examples/dml_harness/device/run.sh there. When examples/ort_dml_host is built (its setup.sh), its host and
# onnxruntime-directml's two DLLs go in too (/opt/ort there), for `run.sh --ort`.
#
#   bash examples/dml_harness/device/pack.sh [BUNDLE]         (default BUNDLE: .gl, which git must ignore)
#
# Environment: PY_VERSION (default 3.12) the GPU machine's Python, for the wheels.
# Why each piece (examples/dml_harness/device/README.md): the loader .debs because without them
# vkCreateInstance fails with VK_ERROR_INCOMPATIBLE_DRIVER; ntdll.dll and apisetschema.dll because the loader
# takes them itself (else "failed to load .../ntdll.dll.so", or LoadLibrary error 126 for DirectML.dll);
# Wine's modules stripped of debug info (638 MB become ~60 MB).
set -euo pipefail
root=$(pwd)
here=$(cd "$(dirname "$0")" && pwd)
harness=$(cd "$here/.." && pwd)
out=$(mkdir -p "${1:-$root/.gl}" && cd "${1:-$root/.gl}" && pwd)
py=${PY_VERSION:-3.12}
W=/usr/lib/x86_64-linux-gnu/wine
log() { echo "pack.sh: $*" >&2; }
[ -f "$harness/build/dml_harness.exe" ] && [ -f "$harness/build/DirectML.dll" ] ||
    { log "no harness: run examples/dml_harness/setup.sh first"; exit 2; }
command -v dmlconform >/dev/null || { log "activate the project's venv first"; exit 2; }
ort=$(cd "$harness/../ort_dml_host" && pwd)
with_ort=""
[ -f "$ort/build/ort_dml_host.exe" ] && [ -f "$ort/build/onnxruntime.dll" ] && with_ort=1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
rm -rf "$out/whl" "$out"/*.deb; mkdir -p "$out/whl"

log "1/5 loader packages"
(cd "$out" && apt-get download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null)

log "2/5 the Windows modules the harness and wineboot load (WINEDEBUG=+loaddll)"
cat > "$work/wrap.sh" <<WRAP
#!/bin/bash
export WINEDEBUG=+loaddll WINEPREFIX=$work/prefix
export DMLH_EXE=\${ORT_HOST_EXE:-$harness/build/dml_harness.exe}
exec $harness/run_under_wine.sh "\$@" 2>>$work/loaddll.log
WRAP
chmod +x "$work/wrap.sh"
dmlconform run "$root/test_vectors/seed" --backend native --harness "$work/wrap.sh" >/dev/null 2>&1 || true
grep -q 'directml.dll' <(tr A-Z a-z < "$work/loaddll.log") || { log "the harness did not load DirectML.dll under Wine"; exit 1; }
if [ -n "$with_ort" ]; then
    # The host's modules: one seed case on the DirectML EP (a session loads onnxruntime.dll's imports too).
    ORT_HOST_EXE="$ort/build/ort_dml_host.exe" dmlconform run "$root/test_vectors/seed" -k relu --backend onnxruntime \
        --ep dml --harness "$work/wrap.sh" --timeout 300 >/dev/null 2>&1 || true
    grep -q 'onnxruntime.dll' <(tr A-Z a-z < "$work/loaddll.log") || { log "the ONNX Runtime host did not load onnxruntime.dll"; exit 1; }
fi
grep -o 'Loaded L"[^"]*"' "$work/loaddll.log" | sed 's/Loaded L"//; s/"$//; s/\\\\/\//g' |
    awk -F/ '{print tolower($NF)}' | sort -u > "$work/keep.txt"
# Loaded by the loader itself, by wineboot's helpers, or by onnxruntime.dll (examples/ort_dml_host).
printf '%s\n' ntdll.dll apisetschema.dll start.exe conhost.exe cmd.exe rundll32.exe reg.exe regedit.exe \
  winemenubuilder.exe msvcp140.dll msvcp_win.dll vcruntime140.dll vcruntime140_1.dll ucrtbase.dll wow64.dll \
  wow64cpu.dll wow64win.dll dbghelp.dll bcrypt.dll crypt32.dll secur32.dll ntdsapi.dll netapi32.dll imagehlp.dll \
  cfgmgr32.dll powrprof.dll d3d11.dll d3dcompiler_47.dll dwmapi.dll mscoree.dll msvcp140_1.dll msvcp140_2.dll \
  msvcp140_atomic_wait.dll concrt140.dll >> "$work/keep.txt"
sort -u -o "$work/keep.txt" "$work/keep.txt"

log "3/5 the Wine tree and a pruned prefix"
t=$work/tree
mkdir -p "$t/usr/lib/wine" "$t$W/x86_64-windows" "$t/usr/share/X11" "$t/usr/bin" "$t/opt/wlibs" "$t/opt/dml"
cp -a /usr/lib/wine/. "$t/usr/lib/wine/"; cp -a "$W/x86_64-unix" "$t$W/"; cp -a /usr/share/wine "$t/usr/share/"
cp -a "$work/prefix" "$t/opt/wineprefix"; rm -rf "$t/opt/wineprefix/drive_c/windows/syswow64"
sys=$t/opt/wineprefix/drive_c/windows/system32
find "$t/opt/wineprefix/drive_c/windows" -type f \( -iname '*.dll' -o -iname '*.exe' -o -iname '*.sys' \
    -o -iname '*.drv' -o -iname '*.ocx' -o -iname '*.cpl' -o -iname '*.acm' -o -iname '*.tlb' -o -iname '*.ax' \
    -o -iname '*.ds' \) | while read -r f; do grep -qx "$(basename "$f" | tr A-Z a-z)" "$work/keep.txt" || rm -f "$f"; done
while read -r m; do
    [ -f "$W/x86_64-windows/$m" ] || continue
    [ -f "$sys/$m" ] || cp "$W/x86_64-windows/$m" "$sys/$m"
    x86_64-w64-mingw32-strip --strip-debug "$sys/$m" 2>/dev/null || true
    ln -f "$sys/$m" "$t$W/x86_64-windows/$m"
done < "$work/keep.txt"

log "4/5 Xvfb and the unix libraries Wine and Xvfb load (run.sh uses only those the GPU machine lacks)"
cp /usr/bin/Xvfb /usr/bin/xkbcomp "$t/usr/bin/"; cp -a /usr/share/X11/xkb "$t/usr/share/X11/"
ldconfig -p > "$work/ldcache"
{ ldd /usr/lib/wine/wine64 /usr/lib/wine/wineserver64 "$W"/x86_64-unix/*.so /usr/bin/Xvfb /usr/bin/xkbcomp 2>/dev/null || true
  for l in libX11.so.6 libXext.so.6 libXrender.so.1 libXi.so.6 libXrandr.so.2 libXcursor.so.1 libXcomposite.so.1 \
           libXinerama.so.1 libXxf86vm.so.1 libXfixes.so.3 libfreetype.so.6 libfontconfig.so.1; do
      awk -v l="$l" '$1 == l {print "x => " $NF " x"; exit}' "$work/ldcache"; done; } |
    awk '$2=="=>" && $3 ~ /^\// {print $3}' | sort -u > "$work/libs.txt"
for l in $(cat "$work/libs.txt"); do { ldd "$l" 2>/dev/null || true; } | awk '$2=="=>" && $3 ~ /^\// {print $3}'; done |
    sort -u >> "$work/libs.txt"
sort -u "$work/libs.txt" | grep -v -E '/(libc|libm|libdl|libpthread|librt)\.so|ld-linux' | xargs -I{} cp -L {} "$t/opt/wlibs/"
cp "$harness/build/dml_harness.exe" "$harness/build/DirectML.dll" "$harness/run_under_wine.sh" "$t/opt/dml/"
if [ -n "$with_ort" ]; then
    mkdir -p "$t/opt/ort"
    cp "$ort/build/ort_dml_host.exe" "$ort/build/onnxruntime.dll" "$ort/build/onnxruntime_providers_shared.dll" "$t/opt/ort/"
    ln "$t/opt/dml/DirectML.dll" "$t/opt/ort/DirectML.dll"
fi
tar -C "$t" -cf - . | xz -T0 -7 > "$out/wine.tar.xz"

log "5/5 vkcheck, wheels for Python $py, the stack record"
[ -f /usr/include/vulkan/vulkan.h ] ||
    flock /tmp/apt.lock apt-get install -y --no-install-recommends libvulkan-dev >/dev/null
gcc -O1 -o "$out/vkcheck" "$here/vkcheck.c" -ldl
python3 -m pip download -q --only-binary=:all: --python-version "$py" --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 click rich pyyaml -d "$out/whl"
{
    echo "packed: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release; echo "$PRETTY_NAME")"
    echo "wine: $(/usr/lib/wine/wine64 --version) (Debian $(dpkg-query -W -f='${Version}' wine64))"
    echo "vkd3d: 1.6 (Wine 8.0's bundled copy: libs/vkd3d/config.h PACKAGE_VERSION of Debian's wine 8.0~repack-4)"
    echo "directml: DirectML.dll sha256 $(sha256sum "$harness/build/DirectML.dll" | cut -d' ' -f1)"
    echo "harness: dml_harness.exe sha256 $(sha256sum "$harness/build/dml_harness.exe" | cut -d' ' -f1)"
    echo "xvfb: $(dpkg-query -W -f='${Version}' xvfb)"
    [ -z "$with_ort" ] || echo "ort host: ort_dml_host.exe sha256 $(sha256sum "$ort/build/ort_dml_host.exe" | cut -d' ' -f1), onnxruntime.dll sha256 $(sha256sum "$ort/build/onnxruntime.dll" | cut -d' ' -f1)"
} > "$out/PACKED.txt"
cp "$here/run.sh" "$out/run.sh"
cat "$out/PACKED.txt" >&2
du -sh "$out" >&2
