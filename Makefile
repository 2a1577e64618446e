# Thin wrapper over CMake so README's commands work:
#   make demo          -- build tmem and run the demo
#   make test          -- configure, build and run every test
#   make install       -- install to PREFIX (default /usr/local)
#   make release       -- a Release build in build-release (no debug machinery)
#   make fuzz          -- build the libFuzzer targets (clang) and run each briefly
#   make fuzz-smoke    -- the same, 30 s per target
#   make soak          -- the long soak (SOAK_SECONDS, default 600; docs/reliability.md)
#   make test-arm64    -- cross-build for aarch64 in build-arm64, run the tests under qemu-aarch64
#   make test-arm64-pages -- the same tests with 16 KiB and 64 KiB guest pages (docs/arm64.md)
# WERROR=ON turns warnings into errors (developers, CI: .ci/run sets it).
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PREFIX ?= /usr/local
FUZZ_SECONDS ?= 10
SOAK_SECONDS ?= 600
WERROR ?=
CONFIGURE = cmake -S . -B $(BUILD) $(CMAKE_FLAGS) $(if $(WERROR),-DTMEM_WERROR=$(WERROR)) >/dev/null

.PHONY: all build configure test demo install release test-asan test-tsan fuzz fuzz-smoke soak clean \
	test-arm64 test-arm64-build test-arm64-a53 test-arm64-16k test-arm64-64k test-arm64-pages test-arm64-all test-arm64-run

all: build

configure:
	$(CONFIGURE)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The tests always link a library with the fault-injection hooks and internal
# asserts (typedmem_testing), whatever the build type.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# Only what the demo needs: the tmem binary.
demo: configure
	cmake --build $(BUILD) -j $(JOBS) --target tmem
	./$(BUILD)/tmem demo

# What gets installed only (no tests): the libraries, the runtime and tmem.
install: configure
	cmake --build $(BUILD) -j $(JOBS) --target typedmem typedmem_static typedmem_runtime tmem
	cmake --install $(BUILD) --prefix $(PREFIX)

release:
	$(MAKE) build BUILD=build-release CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)"

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DTMEM_SANITIZE='address;undefined' -DCMAKE_BUILD_TYPE=Debug"

# Multi-threaded tests under ThreadSanitizer.
test-tsan:
	$(MAKE) configure BUILD=build-tsan CMAKE_FLAGS="-DTMEM_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug"
	cmake --build build-tsan -j $(JOBS)
	ctest --test-dir build-tsan --output-on-failure -j $(JOBS) -L tsan

# libFuzzer targets (clang; -fno-sanitize-recover=all), each run FUZZ_SECONDS.
fuzz: configure
	@command -v clang >/dev/null 2>&1 || { echo "make fuzz: clang not found (apt-get install clang)"; exit 1; }
	cmake --build $(BUILD) -j $(JOBS) --target fuzz
	sh fuzz/run.sh $(BUILD)/fuzz $(FUZZ_SECONDS)

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=30

# The soak of tests/soak for SOAK_SECONDS (make test runs it for 20 s).
soak: configure
	cmake --build $(BUILD) -j $(JOBS) --target soak_test_soak
	TMEM_SOAK_SECONDS=$(SOAK_SECONDS) TMEM_SOURCE_DIR=$(CURDIR) ./$(BUILD)/soak_test_soak

# ARM64: a cross build (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross) whose
# tests CTest runs under qemu-aarch64 (qemu-user); docs/arm64.md. ARM64_TESTS
# is the CTest regex of what runs (the default: the CI subset, see there);
# ARM64_TESTS=. runs everything. qemu reads QEMU_CPU and QEMU_PAGESIZE from
# the environment, so the page-size and CPU runs reuse the same binaries.
ARM64_BUILD ?= build-arm64
ARM64_TESTS ?= ^(runtime|unit|prop|fault|misuse|regress|stress|tokenizer|examples)/
# what qemu-user cannot run faithfully (docs/arm64.md says why); ARM64_SKIP=
# runs them too
ARM64_SKIP ?= ^(unit/test_(os|pool|heap_block|surface_ipc|watch|cli_core|demo_numbers)|misuse/test_surface_peers|runtime/test_(cli_run|parity))$$
# with qemu's -p (guest pages larger than the host's) also what calls mincore
ARM64_SKIP_PAGES ?= ^(unit/test_(os|pool|heap_block|surface_ipc|watch|cli_core|demo_numbers)|misuse/test_surface_peers|regress/test_demo_small_budget|runtime/test_(cli_run|parity))$$
ARM64_CTEST = ctest --test-dir $(ARM64_BUILD) --output-on-failure -j $(JOBS) -R '$(ARM64_TESTS)' \
	$(if $(ARM64_SKIP),-E '$(ARM64_SKIP)')
test-arm64-build:
	@command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || { echo "make test-arm64: aarch64-linux-gnu-gcc not found (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross)"; exit 1; }
	@command -v qemu-aarch64 >/dev/null 2>&1 || { echo "make test-arm64: qemu-aarch64 not found (apt-get install qemu-user)"; exit 1; }
	cmake -S . -B $(ARM64_BUILD) -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake \
	  $(CMAKE_FLAGS) $(if $(WERROR),-DTMEM_WERROR=$(WERROR)) >/dev/null
	cmake --build $(ARM64_BUILD) -j $(JOBS)

# -cpu max: NEON + fp16 + dotprod + i8mm (the dotprod tiles run)
test-arm64: test-arm64-build
	QEMU_CPU=max $(ARM64_CTEST)

# -cpu cortex-a53: plain ARMv8.0 NEON (the dispatch's other branch)
test-arm64-a53: test-arm64-build
	QEMU_CPU=cortex-a53 $(ARM64_CTEST)

test-arm64-16k: test-arm64-build
	QEMU_CPU=max QEMU_PAGESIZE=16384 $(MAKE) --no-print-directory test-arm64-run ARM64_SKIP='$(ARM64_SKIP_PAGES)'

test-arm64-64k: test-arm64-build
	QEMU_CPU=max QEMU_PAGESIZE=65536 $(MAKE) --no-print-directory test-arm64-run ARM64_SKIP='$(ARM64_SKIP_PAGES)'

test-arm64-run:
	$(ARM64_CTEST)

test-arm64-pages: test-arm64-16k test-arm64-64k

# every test, every CPU and page size
test-arm64-all:
	$(MAKE) test-arm64 test-arm64-a53 test-arm64-pages ARM64_TESTS=. ARM64_SKIP= ARM64_SKIP_PAGES=

clean:
	rm -rf build build-asan build-tsan build-release build-arm64
