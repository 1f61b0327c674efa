#!/bin/bash
# labels: slow nosan
# image_arch.sh - scripts/check-image-arch, the check `make image-arm64` runs
# on its image, tried here on this machine's image (scripts/build-image from
# this build's tessera and shim): it passes that image as amd64 (entrypoint
# run chrooted as the image's user, version and plan the same as the build's
# binary), and fails it, naming each fault, when asked for arm64 (the
# configuration, the Machine of each ELF file) and when a library is taken out
# of the layer (NEEDED not in the image). Bad arguments exit 2. Like
# image.sh: plain build only, needs root and buildah. Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

image_prereqs image_arch || { finish; exit; }
ARCH=$(dpkg --print-architecture)
if [ "$ARCH" != amd64 ]; then
    echo "image_arch: skipped on $ARCH (the test knows amd64's image)"
    finish
    exit
fi
CHECK="$TESSERA_SRC/scripts/check-image-arch"
SHIM="$(dirname "$TESSERA")/src/shim/libtessera-cuda.so"
IMG="$TMP/tessera.oci.tar"
VERSION=$(sed -n 's/^project(tessera VERSION \([0-9.]*\) .*/\1/p' "$TESSERA_SRC/CMakeLists.txt")
expect_rc 0 "$TESSERA_SRC/scripts/build-image" "$TESSERA" "$SHIM" "$VERSION" "$IMG"

# This machine's image, as this machine's architecture: whole, and it runs.
expect_rc 0 "$CHECK" amd64 "$IMG" "$TESSERA"
expect_in "$TMP/out" "configuration linux/amd64"
expect_in "$TMP/out" "each Advanced Micro Devices X86-64; their loaders and libraries are in"
expect_in "$TMP/out" "tessera plan -f four-h100.yaml: the same $("$TESSERA" plan -f \
    "$TESSERA_SRC/examples/four-h100.yaml" | wc -l) lines"
check "check-image-arch failed something: $(grep FAIL "$TMP/out" | head -3)" \
    [ -z "$(grep FAIL "$TMP/out")" ]

# The same image taken for arm64: the configuration and every ELF file are wrong.
expect_rc 1 "$CHECK" arm64 "$IMG"
expect_in "$TMP/out" "FAIL: the configuration says linux/amd64, not linux/arm64"
expect_in "$TMP/out" "FAIL: /usr/bin/tessera: Machine Advanced Micro Devices X86-64, not AArch64"
expect_in "$TMP/out" "FAIL: /opt/tessera/lib/libtessera-cuda.so: Machine Advanced Micro Devices"

# The layer without libyaml: tessera needs it, the check finds it missing.
/usr/bin/python3 - "$IMG" "$TMP/no-yaml.oci.tar" <<'PY' || bad "could not rewrite the archive"
import io, json, sys, tarfile
src, dst = sys.argv[1:]
with tarfile.open(src) as oci, tarfile.open(dst, "w") as out:
    index = json.load(oci.extractfile("index.json"))
    manifest = json.load(oci.extractfile("blobs/sha256/" + index["manifests"][0]["digest"][7:]))
    layer = "blobs/sha256/" + manifest["layers"][0]["digest"][7:]
    for m in oci.getmembers():
        data = oci.extractfile(m).read() if m.isfile() else None
        if m.name == layer:  # the same name: the check reads, it does not verify digests
            buf = io.BytesIO()
            with tarfile.open(fileobj=io.BytesIO(data)) as t, \
                    tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as new:
                for f in t.getmembers():
                    if "libyaml-0.so" not in f.name:
                        new.addfile(f, t.extractfile(f) if f.isfile() else None)
            data = buf.getvalue()
            m.size = len(data)
        out.addfile(m, io.BytesIO(data) if data is not None else None)
PY
expect_rc 1 "$CHECK" amd64 "$TMP/no-yaml.oci.tar"
expect_in "$TMP/out" "FAIL: /usr/bin/tessera: needs libyaml-0.so.2, not in the image"

# Bad arguments.
expect_rc 2 "$CHECK" sparc "$IMG"
expect_in "$TMP/err" "ARCH: amd64, arm64"
expect_rc 2 "$CHECK" amd64 "$TMP/absent.oci.tar"
expect_in "$TMP/err" "$TMP/absent.oci.tar: no such file"
expect_rc 2 "$CHECK" amd64
finish
