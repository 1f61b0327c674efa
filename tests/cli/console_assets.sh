#!/bin/bash
# console_assets.sh - the console's files as `tessera console` serves them under
# /ui/: each file of src/serve/ui/ byte for byte with its content type and the
# security headers (a CSP allowing only this origin and no inline code, no
# framing, nosniff); /ui redirects to /ui/, /ui/ is the sign-in page, an
# unknown file is 404 with the same headers. The files themselves hold no
# inline script or style, no event-handler attribute, no innerHTML, eval or
# document.write, and name no outside URL (nothing is fetched from elsewhere).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
UI=src/serve/ui
PORT=$(free_port)
URL=https://127.0.0.1:$PORT
scripts/make-test-cert "$TMP/c" >/dev/null
"$TESSERA" token new --operator | sed -n 2p >"$TMP/tokens"
"$TESSERA" console -f examples/four-h100.yaml --tls-cert "$TMP/c/tls.crt" \
    --tls-key "$TMP/c/tls.key" --listen 127.0.0.1:$PORT --tokens "$TMP/tokens" \
    2>"$TMP/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do
    curl -sf --cacert "$TMP/c/ca.crt" $URL/readyz >/dev/null 2>&1 && break
    sleep 0.1
done
get() { # PATH -> $TMP/body, $TMP/head; prints the status
    curl -s --cacert "$TMP/c/ca.crt" -D "$TMP/head" -o "$TMP/body" -w '%{http_code}' "$URL$1"
}
header() { # NAME: its value in $TMP/head
    grep -i "^$1:" "$TMP/head" | head -1 | cut -d: -f2- | sed 's/^ //; s/\r$//'
}
secure() { # WHAT: the security headers are on the answer in $TMP/head
    local csp
    csp=$(header Content-Security-Policy)
    for part in "default-src 'self'" "script-src 'self'" "style-src 'self'" \
        "frame-ancestors 'none'" "object-src 'none'" "base-uri 'none'"; do
        case "$csp" in *"$part"*) ok ;; *) bad "$1: CSP '$csp' lacks $part" ;; esac
    done
    case "$csp" in *unsafe-inline* | *unsafe-eval* | *"*"*) bad "$1: CSP '$csp' too wide" ;;
    *) ok ;; esac
    check "$1: nosniff" [ "$(header X-Content-Type-Options)" = nosniff ]
    check "$1: X-Frame-Options" [ "$(header X-Frame-Options)" = DENY ]
}
typeof() { # FILE: the content type a browser must get for it
    case $1 in
    *.html) echo "text/html; charset=utf-8" ;; *.js) echo "text/javascript; charset=utf-8" ;;
    *.css) echo "text/css; charset=utf-8" ;; *.svg) echo "image/svg+xml" ;;
    *) echo "unknown" ;;
    esac
}

n=0
for f in "$UI"/*; do
    name=$(basename "$f")
    check "/ui/$name: status" [ "$(get "/ui/$name")" = 200 ]
    check "/ui/$name: bytes differ from $f" cmp -s "$TMP/body" "$f"
    check "/ui/$name: type '$(header Content-Type)'" [ "$(header Content-Type)" = "$(typeof "$f")" ]
    secure "/ui/$name"
    n=$((n + 1))
done
check "only $n files in $UI" [ "$n" -ge 10 ]
check "/ui/ status" [ "$(get /ui/)" = 200 ]
check "/ui/ is the sign-in page" cmp -s "$TMP/body" "$UI/index.html"
secure /ui/
check "/ui redirects" [ "$(get /ui)" = 308 ]
check "/ui redirects to /ui/" [ "$(header Location)" = /ui/ ]
for path in /ui/nope.js /ui/../CMakeLists.txt /ui/%2e%2e/README.md /ui/fleet.html/x /uix; do
    code=$(get "$path")
    check "$path: $code, expected 404" [ "$code" = 404 ]
done
get /ui/nope.js >/dev/null
secure "/ui/nope.js (404)"

# The files: no inline code anywhere, nothing from outside.
for f in "$UI"/*.html; do
    check "$f: inline <script>" [ -z "$(grep -n '<script>\|<script [^s]*>' "$f" | grep -v 'src=')" ]
    check "$f: <style> or style=" [ -z "$(grep -n '<style\|style=' "$f")" ]
    check "$f: on...= handler" [ -z "$(grep -niE ' on[a-z]+=' "$f")" ]
done
for f in "$UI"/*.js; do
    markup='innerHTML|outerHTML|eval\(|document\.write|insertAdjacentHTML|new Function'
    check "$f: innerHTML, outerHTML, eval, document.write or insertAdjacentHTML" \
        [ -z "$(grep -nE "$markup" "$f")" ]
    check "$f: setAttribute('style' or an on... attribute" \
        [ -z "$(grep -nE "setAttribute\\(['\"](style|on)" "$f")" ]
done
check "an outside URL in $UI" \
    [ -z "$(grep -nE 'https?://' "$UI"/* | grep -v 'http://www.w3.org/2000/svg')" ]
finish
