#!/bin/bash
# Packs what the installed dmlconform needs to run the real DirectML on a Linux machine with an NVIDIA GPU and no Wine
# and no network: the wheel itself (built from the sdist by the package's own build, so it carries the Windows
# programs), dmlconform's cache of fetched DirectML releases, a pruned Wine 8.0 with a ready prefix, Xvfb and the X
# libraries Wine loads, the Vulkan/GL loader packages and a Vulkan float-controls check (vkcheck). Run it on Debian 12
# with the README's "Real DirectML" packages installed, from the project root with the project's venv active; copy
# the project with the bundle to the GPU machine and run examples/dml_harness/device/run.sh there.
#
#   bash examples/dml_harness/device/pack.sh [BUNDLE] [VERSION...]   (default BUNDLE: .gl, which git must ignore;
#                                                                      VERSIONs: onnxruntime-directml releases to
#                                                                      carry, default the default one)
# Why each piece (examples/dml_harness/device/README.md): the loader .debs because without them vkCreateInstance fails
# with VK_ERROR_INCOMPATIBLE_DRIVER; ntdll.dll and apisetschema.dll because the loader takes them itself (else "failed
# to load .../ntdll.dll.so", or LoadLibrary error 126 for DirectML.dll); Wine's modules stripped of debug info (a
# prefix's 695 MB become ~60 MB).
set -euo pipefail
root=$(pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$root/.gl}" && cd "${1:-$root/.gl}" && pwd)
shift || true
versions=("$@")
W=/usr/lib/x86_64-linux-gnu/wine
log() { echo "pack.sh: $*" >&2; }
command -v dmlconform >/dev/null || { log "activate the project's venv first"; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
rm -rf "$out/whl" "$out"/*.deb "$out"/cache.tar*; mkdir -p "$out/whl"

log "1/6 the wheel, from the sdist (the package's own build cross-compiles the Windows programs)"
python3 -m pip install -q build
DMLCONFORM_WINDOWS_PROGRAMS=require python3 -m build --outdir "$work/dist" . >/dev/null
cp "$work"/dist/dmlconform-*.whl "$out/whl/"
python3 -m venv "$work/venv" && "$work/venv/bin/pip" install -q "$work"/dist/dmlconform-*.whl
dml() { "$work/venv/bin/dmlconform" "$@"; }

log "2/6 DirectML releases into a cache of the bundle's own"
export DMLCONFORM_CACHE="$work/cache"
dml fetch directml "${versions[@]}" >/dev/null
# One archive per release (~10-20 MB each): a call to a machine that carries little can take them one at a time.
for release in "$work"/cache/directml/*/; do
    tar -C "$work/cache" -cf - "directml/$(basename "$release")" | xz -T0 -6 > "$out/cache-$(basename "$release").tar.xz"
done

log "3/6 loader packages"
(cd "$out" && apt-get download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null)

log "4/6 the Windows modules the programs load (WINEDEBUG=+loaddll), from a prefix the package makes"
export DMLCONFORM_WINE_PREFIX="$work/prefix"
# The runner keeps only the last lines of a harness's stderr: the programs start through a wrapper that sends theirs,
# Wine's module log with it, to a file. Their command lines are the package's own (directml/start.py).
command_of() {
    cd "$work" && WINEDEBUG=+loaddll "$work/venv/bin/python" -c "import sys; from dmlconform.directml.start import Device, \
harness_start, host_start; d = Device.parse('lavapipe'); log = lambda line: print(line, file=sys.stderr); \
s = harness_start(None, None, d, log) if sys.argv[1] == 'harness' else host_start('dml', None, None, d, log); \
print(s.launch.command_line())" "$1"
}
for program in harness host; do
    printf '#!/bin/bash\nexec %s "$@" 2>>%s\n' "$(command_of $program)" "$work/loaddll.log" > "$work/$program.sh"
    cd "$root"
    chmod +x "$work/$program.sh"
done
(cd "$work" && dml run "$root/test_vectors/seed" --backend native --harness "$work/harness.sh" >/dev/null 2>&1) || true
(cd "$work" && dml run "$root/test_vectors/seed" -k relu --backend onnxruntime --ep dml --harness "$work/host.sh" \
    --timeout 300 >/dev/null 2>&1) || true
grep -qi 'directml.dll' "$work/loaddll.log" || { log "the harness did not load DirectML.dll under Wine"; exit 1; }
grep -qi 'onnxruntime.dll' "$work/loaddll.log" || { log "the ONNX Runtime host did not load onnxruntime.dll"; exit 1; }
grep -o 'Loaded L"[^"]*"' "$work/loaddll.log" | sed 's/Loaded L"//; s/"$//; s/\\\\/\//g' |
    awk -F/ '{print tolower($NF)}' | sort -u > "$work/keep.txt"
# Loaded by the loader itself, by wineboot's helpers, or by onnxruntime.dll.
printf '%s\n' ntdll.dll apisetschema.dll start.exe conhost.exe cmd.exe rundll32.exe reg.exe regedit.exe \
  winemenubuilder.exe msvcp140.dll msvcp_win.dll vcruntime140.dll vcruntime140_1.dll ucrtbase.dll wow64.dll \
  wow64cpu.dll wow64win.dll dbghelp.dll bcrypt.dll crypt32.dll secur32.dll ntdsapi.dll netapi32.dll imagehlp.dll \
  cfgmgr32.dll powrprof.dll d3d11.dll d3dcompiler_47.dll dwmapi.dll mscoree.dll msvcp140_1.dll msvcp140_2.dll \
  msvcp140_atomic_wait.dll concrt140.dll psapi.dll >> "$work/keep.txt"
sort -u -o "$work/keep.txt" "$work/keep.txt"

log "5/6 the Wine tree, the pruned prefix, Xvfb and the unix libraries they load"
t=$work/tree
mkdir -p "$t/usr/lib/wine" "$t$W/x86_64-windows" "$t/usr/share/X11" "$t/usr/bin" "$t/opt/wlibs"
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
tar -C "$t" -cf - . | xz -T0 -7 > "$out/wine.tar.xz"

log "6/6 vkcheck and the stack record"
[ -f /usr/include/vulkan/vulkan.h ] ||
    flock /tmp/apt.lock apt-get install -y --no-install-recommends libvulkan-dev >/dev/null
gcc -O1 -o "$out/vkcheck" "$here/vkcheck.c" -ldl
{
    echo "packed: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release; echo "$PRETTY_NAME")"
    echo "wine: $(/usr/lib/wine/wine64 --version) (Debian $(dpkg-query -W -f='${Version}' wine64))"
    echo "vkd3d: 1.6 (Wine 8.0's bundled copy: libs/vkd3d/config.h PACKAGE_VERSION of Debian's wine 8.0~repack-4)"
    echo "wheel: $(basename "$out"/whl/dmlconform-*.whl) sha256 $(sha256sum "$out"/whl/dmlconform-*.whl | cut -d' ' -f1)"
    for r in "$work"/cache/directml/*/release.json; do
        echo "directml: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("onnxruntime-directml", r["package_version"] + ": DirectML.dll", r["directml_version"], "sha256", r["files"]["DirectML.dll"])' "$r")"
    done
    echo "xvfb: $(dpkg-query -W -f='${Version}' xvfb)"
} > "$out/PACKED.txt"
cp "$here/run.sh" "$out/run.sh"
cat "$out/PACKED.txt" >&2
du -sh "$out" >&2
