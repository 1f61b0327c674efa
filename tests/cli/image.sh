#!/bin/bash
# labels: nosan
# image.sh - the container image (scripts/build-image, `make image`) built
# from this build's tessera and shim, unpacked the way a runtime does (OCI
# layout: index.json -> manifest -> config and layers) and run from the
# unpacked root in a chroot as the image's user: the entrypoint prints the
# project's version and plans the worked example exactly as the build's own
# binary does; its webhook serves TLS and answers two reviews as expected;
# the shim, preloaded from the image into a probe on the
# stand-in driver, shows the card at its limit. The image holds exactly the
# files its manifest lists, each library byte for byte the file of the Debian
# package the manifest names; the copyright file of each of those packages
# (where it puts it), tessera's, and the common licenses they point to; no
# shell; under 30 MB. Bad arguments exit 2
# naming the culprit. Runs in the plain build only: the image is built from
# the release binary, and a sanitized one would need libasan inside.
# Needs root (chroot, buildah's storage) and buildah (scripts/install-deps
# check): without them the test fails. Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

image_prereqs image || { finish; exit; }
envfile="$(dirname "$TESSERA")/shim-test.env"
[ -f "$envfile" ] || { bad "no $envfile (tests/shim not built)"; finish; exit; }
# shellcheck disable=SC1090
. "$envfile"
VERSION=$(sed -n 's/^project(tessera VERSION \([0-9.]*\) .*/\1/p' "$TESSERA_SRC/CMakeLists.txt")
BUILD="$TESSERA_SRC/scripts/build-image"
IMG="$TMP/built/tessera.oci.tar"
ROOT="$TMP/root"
mkdir -p "$TMP/built"

# Bad arguments: exit 2, the message names what is wrong; nothing written.
expect_rc 2 "$BUILD" "$TESSERA" "$TMP/no-shim.so" "$VERSION" "$IMG"
expect_in "$TMP/err" "$TMP/no-shim.so: no such file"
expect_rc 2 "$BUILD" "$TESSERA" "$SHIM" "0.2" "$IMG"
expect_in "$TMP/err" "version '0.2' is not MAJOR.MINOR.PATCH"
expect_rc 2 "$BUILD" "$TESSERA" "$SHIM" "$VERSION" "$TMP/built/image.tar"
expect_in "$TMP/err" "$TMP/built/image.tar: the archive's name must end in .oci.tar"
expect_rc 2 "$BUILD" "$TESSERA" "$SHIM"
check "a refused build left files: $(ls "$TMP/built")" [ -z "$(ls -A "$TMP/built")" ]

start=$(date +%s)
expect_rc 0 "$BUILD" "$TESSERA" "$SHIM" "$VERSION" "$IMG"
echo "image: built in $(($(date +%s) - start)) s: $(cat "$TMP/out")"

# Unpack: the one manifest of index.json, its config, its layers in order.
/usr/bin/python3 - "$IMG" "$ROOT" "$TMP" <<'PY' || bad "the archive does not unpack"
import json, sys, tarfile
archive, root, tmp = sys.argv[1:]
oci = tarfile.open(archive)
blob = lambda d: oci.extractfile("blobs/sha256/" + d.split(":")[1]).read()
index = json.loads(oci.extractfile("index.json").read())
assert len(index["manifests"]) == 1, index
entry = index["manifests"][0]
manifest = json.loads(blob(entry["digest"]))
config = json.loads(blob(manifest["config"]["digest"]))
with open(tmp + "/files", "w") as files:
    for layer in manifest["layers"]:
        with tarfile.open(fileobj=oci.extractfile("blobs/sha256/" + layer["digest"][7:])) as t:
            for m in t.getmembers():
                kind = ("f" if m.isfile() else "l " + m.linkname if m.issym()
                        else "d" if m.isdir() else "?")
                files.write("/%s %s\n" % (m.name.lstrip("./").rstrip("/"), kind))
            t.extractall(root)
c = config["config"]
labels = c.get("Labels", {})
with open(tmp + "/config", "w") as out:
    ref = entry.get("annotations", {}).get("org.opencontainers.image.ref.name")
    for key, value in [("ref", ref),
                       ("entrypoint", " ".join(c.get("Entrypoint", []))), ("user", c.get("User")),
                       ("os", config.get("os")), ("arch", config.get("architecture")),
                       ("layers", len(manifest["layers"]))] + sorted(labels.items()):
        out.write("%s=%s\n" % (key, value))
PY
cfg() { sed -n "s/^$1=//p" "$TMP/config"; }

# The configuration: tag and labels from the project's version, run as 65532.
check "image tag '$(cfg ref)', expected tessera:$VERSION" [ "$(cfg ref)" = "tessera:$VERSION" ]
check "label version '$(cfg org.opencontainers.image.version)'" \
    [ "$(cfg org.opencontainers.image.version)" = "$VERSION" ]
check "label title '$(cfg org.opencontainers.image.title)'" \
    [ "$(cfg org.opencontainers.image.title)" = tessera ]
check "entrypoint '$(cfg entrypoint)'" [ "$(cfg entrypoint)" = /usr/bin/tessera ]
check "user '$(cfg user)', expected 65532:65532" [ "$(cfg user)" = 65532:65532 ]
check "os/arch $(cfg os)/$(cfg arch)" \
    [ "$(cfg os)/$(cfg arch)" = "linux/$(dpkg --print-architecture)" ]
check "the image's user is not in its /etc/passwd" \
    grep -qx 'tessera:x:65532:65532:.*' "$ROOT/etc/passwd"
check "the image's group is not in its /etc/group" grep -qx 'tessera:x:65532:' "$ROOT/etc/group"

# No shell, no other program: /usr/bin holds tessera alone, nothing named like a shell.
check "programs besides tessera: $(ls "$ROOT/usr/bin")" [ "$(ls "$ROOT/usr/bin")" = tessera ]
check "the image has a /bin/sh" [ ! -e "$ROOT/bin/sh" ] && [ ! -L "$ROOT/bin/sh" ]
shells=$(grep -E '/(sh|bash|dash|ash|zsh|busybox|toybox)( |$)' "$TMP/files")
check "the image has shells: $shells" [ -z "$shells" ]

# Exactly the files the manifest lists (in the image and beside the archive).
grep ' f$' "$TMP/files" | cut -d' ' -f1 | sort >"$TMP/regular"
cut -f1 "$ROOT/usr/share/doc/tessera/image-manifest" | sort >"$TMP/listed"
check "files not as listed: $(diff "$TMP/listed" "$TMP/regular" | grep '^[<>]' | tr '\n' ' ')" \
    cmp -s "$TMP/listed" "$TMP/regular"
check "the manifest beside the archive differs from the image's" \
    cmp -s "$TMP/built/tessera.manifest" "$ROOT/usr/share/doc/tessera/image-manifest"
others=$(grep -v -E ' (f|d|l .*)$' "$TMP/files")
check "entries neither file, folder nor link: $others" [ -z "$others" ]

# The libraries: exactly those the two programs load (ldd here), each the
# file its package installed (dpkg's own md5sums), at the version named.
for elf in "$TESSERA" "$SHIM"; do ldd "$elf"; done |
    awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
    xargs readlink -f | sort -u >"$TMP/ldd"
grep '/lib/' "$TMP/listed" | grep -v '^/opt/tessera/' >"$TMP/libs"
check "libraries not as ldd finds: $(diff "$TMP/ldd" "$TMP/libs" | grep '^[<>]' | tr '\n' ' ')" \
    cmp -s "$TMP/ldd" "$TMP/libs"
while IFS=$'\t' read -r path pkg version; do
    [ "$pkg" = tessera ] && continue
    [ "$(deb_version "$pkg")" = "$version" ] && ok ||
        bad "$path: $pkg is not installed at $version"
    [ "$path" = /etc/ssl/certs/ca-certificates.crt ] && continue
    sum=$(md5sum <"$ROOT$path" | cut -d' ' -f1)
    grep -qs -E "^$sum  (usr/)?${path#/usr/}$" /var/lib/dpkg/info/"$pkg"{,:*}.md5sums &&
        ok || bad "$path is not $pkg's file (md5sums)"
done <"$ROOT/usr/share/doc/tessera/image-manifest"
cmp -s /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/ca-certificates.crt" && ok ||
    bad "the image's CA bundle is not this machine's"

# Copyright: each Debian package the manifest names has its copyright file in
# the image, where /usr/share/doc/PKG leads inside the image, listed in the
# manifest and the same as this machine's; tessera's is there, from the
# source tree; each license in /usr/share/common-licenses that one of them
# points to (and this machine has) is there too.
MANIFEST="$ROOT/usr/share/doc/tessera/image-manifest"
# inside PATH: PATH resolved within the image (its links followed there), or "".
inside() { case $(readlink -f "$ROOT$1") in "$ROOT"/*) readlink -f "$ROOT$1" ;; *) echo ;; esac; }
for p in $(cut -f2 "$MANIFEST" | grep -vx tessera | sort -u); do
    f=/usr/share/doc/$p/copyright
    real=$(inside "$f")
    if [ -z "$real" ] || [ ! -f "$real" ]; then bad "$p: no $f in the image"; continue; fi
    cmp -s "$real" "$f" && ok || bad "$p: the image's $f is not this machine's"
    cut -f1 "$MANIFEST" | grep -qxF "${real#"$ROOT"}" && ok ||
        bad "$p: ${real#"$ROOT"} is not in the manifest"
done
check "the image has no copyright file of libc6" [ -f "$(inside /usr/share/doc/libc6/copyright)" ]
cmp -s "$TESSERA_SRC/scripts/package/copyright" "$ROOT/usr/share/doc/tessera/copyright" && ok ||
    bad "the image's /usr/share/doc/tessera/copyright is not scripts/package/copyright"
check "the manifest does not give tessera's copyright file to tessera $VERSION" \
    grep -qxF "/usr/share/doc/tessera/copyright"$'\t'tessera$'\t'"$VERSION" "$MANIFEST"
find "$ROOT/usr/share/doc" -name copyright -exec grep -ho \
    '/usr/share/common-licenses/[A-Za-z0-9.+-]*[A-Za-z0-9+]' {} + | sort -u >"$TMP/licenses"
check "no copyright file points to /usr/share/common-licenses" grep -qx \
    /usr/share/common-licenses/GPL-3 "$TMP/licenses"
while read -r license; do
    [ -e "$license" ] || continue
    real=$(inside "$license")
    [ -n "$real" ] && cmp -s "$real" "$license" && ok || bad "the image lacks $license"
done <"$TMP/licenses"

size=$(du -sb "$ROOT" | cut -f1)
echo "image: $(wc -l <"$TMP/listed") files, $size bytes unpacked, $(stat -c %s "$IMG") archived"
check "the image is $size bytes unpacked, over 30 MB" [ "$size" -lt 30000000 ]

# inroot ENV... -- ARGS...: the entrypoint with ARGS, chrooted into the image
# as its user, with only ENV in the environment.
cat >"$TMP/inroot.py" <<'PY'
import os, sys
root, entry, user, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
cut = args.index("--")
env = dict(a.split("=", 1) for a in args[:cut])
argv = args[cut + 1:]
argv = argv if argv and argv[0].startswith("/") else [entry] + argv
uid, gid = (int(x) for x in user.split(":"))
os.chroot(root)
os.chdir("/")
os.setgroups([])
os.setgid(gid)
os.setuid(uid)
os.execve(argv[0], argv, env)
PY
inroot() { /usr/bin/python3 "$TMP/inroot.py" "$ROOT" "$(cfg entrypoint)" "$(cfg user)" "$@"; }

expect_rc 0 inroot -- --version
expect_in "$TMP/out" "$VERSION"
cp "$TESSERA_SRC/examples/four-h100.yaml" "$ROOT/tmp/"
expect_rc 0 inroot -- plan -f /tmp/four-h100.yaml
"$TESSERA" plan -f "$TESSERA_SRC/examples/four-h100.yaml" >"$TMP/plan.host" 2>&1
check "the image's plan differs from the build's: $(diff "$TMP/plan.host" "$TMP/out" | head -3)" \
    cmp -s "$TMP/plan.host" "$TMP/out"
check "the plan is empty" [ -s "$TMP/plan.host" ]
expect_rc 2 inroot -- plan -f /tmp/absent.yaml
expect_in "$TMP/err" "/tmp/absent.yaml"

# The webhook from the image (TLS by the image's GnuTLS): ready, and it
# admits a plain pod and refuses a privileged one as the fixtures expect.
"$TESSERA_SRC/scripts/make-test-cert" "$TMP/cert" >/dev/null
cp "$TMP/cert/tls.crt" "$TMP/cert/tls.key" "$ROOT/tmp/"
chmod 0644 "$ROOT/tmp/tls.key"
PORT=$(free_port)
# (python3 execs the server: $! is the server)
/usr/bin/python3 "$TMP/inroot.py" "$ROOT" "$(cfg entrypoint)" "$(cfg user)" -- serve \
    -f /tmp/four-h100.yaml --tls-cert /tmp/tls.crt --tls-key /tmp/tls.key \
    --listen "127.0.0.1:$PORT" >/dev/null 2>"$TMP/serve.log" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do
    curl -sf --cacert "$TMP/cert/ca.crt" "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
    sleep 0.1
done
expect_rc 0 curl -sf --cacert "$TMP/cert/ca.crt" "https://127.0.0.1:$PORT/readyz"
for review in 001-pod-no-gpu-tenant-ns 004-pod-privileged-container; do
    curl -s --cacert "$TMP/cert/ca.crt" -H 'Content-Type: application/json' \
        --data-binary @"$TESSERA_FIXTURES/admission/$review.json" \
        "https://127.0.0.1:$PORT/validate" >"$TMP/answer" 2>&1
    allowed=$(/usr/bin/python3 -c 'import json, sys
print(str(json.load(open(sys.argv[1]))["response"]["allowed"]).lower())' "$TMP/answer" 2>&1)
    want=$(sed -n 2p "$TESSERA_FIXTURES/admission/$review.expect")
    check "$review: allowed=$allowed, expected $want ($(head -c 200 "$TMP/serve.log"))" \
        [ "$allowed" = "$want" ]
done
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null

# The shim from the image, preloaded into the probe on the stand-in driver
# (both copied in for the test): the card shows the 1 MiB limit, 16 GiB without.
mkdir -p "$ROOT/probe"
cp "$PROBE" "$ROOT/probe/shim_probe"
cp "$(readlink -f "$STANDIN_DIR/libcuda.so.1")" "$ROOT/probe/libcuda.so.1"
printf 'version = 1\nmemoryLimit = 1Mi\nregion = /probe/cuda.region\n' >"$ROOT/probe/limits"
chown -R 65532:65532 "$ROOT/probe"
probe_env=(LD_LIBRARY_PATH=/probe TESSERA_STANDIN_GPU=/probe/gpu.lock)
expect_rc 0 inroot "${probe_env[@]}" LD_PRELOAD=/opt/tessera/lib/libtessera-cuda.so \
    TESSERA_CUDA_LIMITS_FILE=/probe/limits -- /probe/shim_probe info
expect_in "$TMP/out" "rc=0 free=1048576 total=1048576 device_total=1048576"
check "the shim made no region" [ -s "$ROOT/probe/cuda.region" ]
expect_rc 0 inroot "${probe_env[@]}" -- /probe/shim_probe info
expect_in "$TMP/out" "total=17179869184 device_total=17179869184"
finish
