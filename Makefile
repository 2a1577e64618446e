# Thin wrapper over CMake so README's commands work:
#   make demo          -- build tmem and run the demo
#   make test          -- configure, build and run every test
#   make install       -- install to PREFIX (default /usr/local)
#   make release       -- a Release build in build-release (no debug machinery)
#   make fuzz          -- build the libFuzzer targets (clang) and run each briefly
#   make fuzz-smoke    -- the same, 30 s per target
#   make soak          -- the long soak (SOAK_SECONDS, default 600; docs/reliability.md)
# WERROR=ON turns warnings into errors (developers, CI: .ci/run sets it).
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PREFIX ?= /usr/local
FUZZ_SECONDS ?= 10
SOAK_SECONDS ?= 600
WERROR ?=
CONFIGURE = cmake -S . -B $(BUILD) $(CMAKE_FLAGS) $(if $(WERROR),-DTMEM_WERROR=$(WERROR)) >/dev/null

.PHONY: all build configure test demo install release test-asan test-tsan fuzz fuzz-smoke soak clean

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

clean:
	rm -rf build build-asan build-tsan build-release
