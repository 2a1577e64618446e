# Thin wrapper over CMake so README's two commands work:
#   make demo   -- build and run the main job
#   make test   -- configure, build and run every test
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build test demo test-asan test-tsan fuzz clean

all: build

build:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	./$(BUILD)/tmem demo

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DTMEM_SANITIZE='address;undefined' -DCMAKE_BUILD_TYPE=Debug"

# Multi-threaded tests under ThreadSanitizer.
test-tsan:
	cmake -S . -B build-tsan -DTMEM_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build build-tsan -j $(JOBS)
	ctest --test-dir build-tsan --output-on-failure -j $(JOBS) -L tsan

clean:
	rm -rf build build-asan build-tsan
