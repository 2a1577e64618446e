# Cross-compiling for 64-bit ARM Linux with Debian's gcc-aarch64-linux-gnu
# and libc6-dev-arm64-cross; CTest runs the test binaries under qemu-aarch64
# (package qemu-user). docs/arm64.md: usage, and how the Android NDK's own
# toolchain file (build/cmake/android.toolchain.cmake) takes its place.
#
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
#   ctest --test-dir build-arm64          # every test under qemu-aarch64
#
# TMEM_QEMU_ARGS adds options to the emulator: "-cpu cortex-a53" (plain NEON:
# no fp16 arithmetic, no dotprod, no i8mm), "-p 16384" (16 KiB pages).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(TMEM_CROSS_PREFIX "aarch64-linux-gnu-" CACHE STRING "Prefix of the cross tools")
set(TMEM_CROSS_SYSROOT "/usr/aarch64-linux-gnu" CACHE PATH "Target root (libc, loader) for qemu -L")
set(CMAKE_C_COMPILER ${TMEM_CROSS_PREFIX}gcc)
set(CMAKE_CXX_COMPILER ${TMEM_CROSS_PREFIX}g++)

set(CMAKE_FIND_ROOT_PATH ${TMEM_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(TMEM_QEMU "qemu-aarch64" CACHE STRING "The user-mode emulator CTest runs the tests under")
set(TMEM_QEMU_ARGS "" CACHE STRING "Extra emulator options, e.g. '-cpu cortex-a53' or '-p 16384'")
separate_arguments(_tmem_qemu_args UNIX_COMMAND "${TMEM_QEMU_ARGS}")
set(CMAKE_CROSSCOMPILING_EMULATOR ${TMEM_QEMU} -L ${TMEM_CROSS_SYSROOT} ${_tmem_qemu_args})
