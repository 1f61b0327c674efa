# tessera - the two commands a newcomer needs:
#   make demo    install what the demo runs, build, run the worked example,
#                then serve the console until Ctrl-C (DEMO_NONINTERACTIVE=1: stop)
#   make check   install what the tests need, build (normal + ASan/UBSan + fuzz
#                targets), run every test, the end-to-end tests against a real
#                Kubernetes control plane, and replay the fuzz corpora
# and, for maintainers: make check-quick (the edit-compile-test loop: plain
# build, unit and not-slow CLI tests), make bench, make fuzz, make format, make clean,
# make screenshots (the console's pages as PNGs, README's two into docs/img/),
# make image (the OCI image build/tessera-image.oci.tar), make image-arm64
# (the same for arm64, cross-compiled: build-arm64/tessera-image-arm64.oci.tar),
# make deb (the Debian package build/tessera_VERSION_ARCH.deb).
# Each installs only its own group of packages (scripts/install-deps GROUP).
JOBS     ?= $(shell nproc)
# Tests wait more than they compute (servers starting, Prometheus scraping):
# ctest runs three times as many as there are cores; a test labelled timing
# takes two of those slots. On 2 cores the plain stage took 325 s at -j6 and
# 417-486 s at -j4 (its CPU: 490-510 s either way); 225-227 s at -j6 in a built
# folder since the test CPU cuts of 2026-12-06. (Not --test-load: ctest
# then starts nothing at all while the load average is over it, as on a
# machine busy with something else.)
CTEST_PAR ?= -j $(shell expr 3 \* $(JOBS))
BUILD    := build
ASAN     := build-asan
CROSS    := build-arm64
FUZZ     := build-fuzz
E2E_BIN  := build-e2e/bin
TESSERA  := $(BUILD)/tessera
FUZZ_SECONDS ?= 600

.PHONY: all deps deps-build deps-demo deps-check deps-bench deps-fuzz deps-package deps-cross \
        build demo \
        check check-quick check-format check-build check-asan check-fuzz check-e2e e2e e2e-build \
        check-beside-builds \
        bench fuzz image image-arm64 deb \
        format clean docs screenshots

all: build

deps:
	@scripts/install-deps all

deps-build deps-demo deps-check deps-bench deps-fuzz deps-package deps-cross:
	@scripts/install-deps $(@:deps-%=%)

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps-build $(BUILD)/build.ninja
	ninja -C $(BUILD)

# The demo needs only the tessera binary, not the tests: a fresh clone's
# make demo builds that alone.
demo: deps-demo deps-build $(BUILD)/build.ninja
	ninja -C $(BUILD) tessera
	@echo "== tessera render -f examples/four-h100.yaml --out-dir out --force"
	@$(TESSERA) render -f examples/four-h100.yaml --out-dir out --force
	@echo "== tessera plan -f examples/four-h100.yaml --svg out/fleet.svg"
	@$(TESSERA) plan -f examples/four-h100.yaml --svg out/fleet.svg
	@echo
	@echo "The fleet as a picture: out/fleet.svg"
	@echo "Apply with: kubectl apply -k out (read out/README.md first)"
	@echo
	@scripts/demo-webhook $(TESSERA)
	@echo
	@scripts/demo-meter $(TESSERA) out
	@echo
	@scripts/demo-replan $(TESSERA) out
	@echo
	@scripts/demo-console $(TESSERA) out

# The container image and the Debian package, from the release build's tessera
# and shim (scripts/build-image, scripts/build-deb; docs/image.md).
image deb: deps-package deps-build $(BUILD)/build.ninja
	ninja -C $(BUILD) $@

# The arm64 image, cross-compiled by Debian's cross compiler against the arm64
# libraries (cmake/toolchain-aarch64-linux-gnu.cmake; docs/image.md), then
# checked (scripts/check-image-arch): its configuration says arm64, every ELF
# file in it is AArch64 and finds its libraries in it, and its entrypoint, run
# under qemu in the unpacked image, prints what this machine's build prints.
$(CROSS)/build.ninja:
	cmake -S . -B $(CROSS) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/toolchain-aarch64-linux-gnu.cmake

image-arm64: deps-package deps-build deps-cross $(BUILD)/build.ninja $(CROSS)/build.ninja
	ninja -C $(BUILD) tessera
	ninja -C $(CROSS) image
	scripts/check-image-arch arm64 $(CROSS)/tessera-image-arm64.oci.tar $(TESSERA)

check: deps-check check-format check-beside-builds check-asan check-fuzz

# The plain build's tests (as check-build), then the end-to-end scenarios, while
# the sanitized and fuzz builds compile beside them at the lowest priority: the
# tests leave about 40% of the cores idle while they wait on servers, which is
# what nice 19 takes (their output in $(ASAN)/beside.log). When the tests end,
# what is left of those builds is stopped (their own session: setsid) and
# check-asan and check-fuzz finish it at normal priority: on a machine busy
# with other work, nice 19 would get almost nothing.
check-beside-builds: deps-check build e2e-build $(ASAN)/build.ninja $(FUZZ)/build.ninja
	@setsid sh -c 'nice -n 19 ninja -C $(ASAN) && nice -n 19 ninja -C $(FUZZ)' \
	    >$(ASAN)/beside.log 2>&1 & \
	builds=$$!; \
	(cd $(BUILD) && ctest --output-on-failure $(CTEST_PAR)); rc=$$?; \
	scripts/test-skips $(BUILD); \
	[ $$rc -ne 0 ] || { TESSERA=$(CURDIR)/$(TESSERA) tests/e2e/run; rc=$$?; }; \
	kill -TERM -$$builds 2>/dev/null && echo "check: the builds beside the tests go on at normal priority"; \
	wait $$builds 2>/dev/null; exit $$rc

# The code style (.clang-format): check-format fails on a file that differs,
# format rewrites them.
check-format: deps-check
	scripts/check-format

format:
	scripts/check-format --fix

# The test control plane (kube-apiserver, controller-manager, scheduler,
# kubectl, etcd, KWOK, Kueue) from the Go module proxy, pinned in
# tests/e2e/*/go.mod: minutes the first time, seconds once Go's cache is warm.
e2e-build:
	tests/e2e/build $(E2E_BIN)

# kubectl for the tests that read deploy/ with kustomize is the one built here
check-build: build e2e-build
	cd $(BUILD) && ctest --output-on-failure $(CTEST_PAR)
	scripts/test-skips $(BUILD)

# The edit-compile-test loop: the plain build, the unit tests and the CLI
# tests not labelled slow (CONTRIBUTING.md), in under 2 minutes.
check-quick: build
	cd $(BUILD) && ctest --output-on-failure $(CTEST_PAR) -LE slow
	scripts/test-skips $(BUILD)

# The end-to-end tests (tests/e2e/run): every scenario against one control
# plane on loopback, in a network namespace of their own.
check-e2e e2e: deps-check build e2e-build
	TESSERA=$(CURDIR)/$(TESSERA) tests/e2e/run

$(ASAN)/build.ninja:
	cmake -S . -B $(ASAN) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTESSERA_SANITIZE=ON

# The sanitized stage reruns every test but those labelled timing (they judge
# time, which the sanitizers' slowdown distorts) and nosan (packaging, browsers,
# generated files: the code they drive runs sanitized in the tests each names).
check-asan: deps-check $(ASAN)/build.ninja
	ninja -C $(ASAN)
	cd $(ASAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --output-on-failure $(CTEST_PAR) -LE '^(timing|nosan)$$'
	scripts/test-skips $(ASAN)

$(FUZZ)/build.ninja:
	CC=clang cmake -S . -B $(FUZZ) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_FUZZ=ON

check-fuzz: deps-check $(FUZZ)/build.ninja
	ninja -C $(FUZZ)
	cd $(FUZZ) && ctest --output-on-failure $(CTEST_PAR)

# Real fuzzing: every target for FUZZ_SECONDS, new finds kept in the corpus.
fuzz: deps-fuzz $(FUZZ)/build.ninja
	ninja -C $(FUZZ)
	@for f in $(FUZZ)/fuzz/fuzz_*; do \
	    name=$$(basename $$f | sed 's/^fuzz_//'); \
	    echo "== fuzzing $$name for $(FUZZ_SECONDS) s"; \
	    mkdir -p fuzz/corpus/$$name fuzz/findings; \
	    $$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -artifact_prefix=fuzz/findings/ \
	        fuzz/corpus/$$name || exit 1; \
	done

bench: deps-bench build
	bench/run

# The console's pages as PNGs: the browser test (Debian's chromium driven by
# playwright-core) writes each page under build/screenshots/; README's fleet
# map and client-a's page are copied into docs/img/.
screenshots: deps-check build
	TESSERA=$(CURDIR)/$(TESSERA) TESSERA_SRC=$(CURDIR) \
	    TESSERA_FIXTURES=$(CURDIR)/tests/fixtures bash tests/cli/console_browser.sh
	cp $(BUILD)/screenshots/fleet.png docs/img/console-fleet.png
	cp $(BUILD)/screenshots/tenant.png docs/img/console-tenant.png

clean:
	rm -rf $(BUILD) $(ASAN) $(FUZZ) $(CROSS) build-e2e out
