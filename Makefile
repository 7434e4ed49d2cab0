# Convenience front end to CMake. Every target first runs scripts/setup.sh (apt packages).
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all setup build demo test test-fast test-asan bench clean

all: build

setup:
	@./scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The main job on a signal the tool makes itself: generate 48 carriers, receive them all
# (polyrx rx), BER per carrier against the sent bits and the theory.
demo: build
	@./scripts/demo.sh $(BUILD)/polyrx

# Every test (ctest), then the sanitizer build of the tests.
test: test-fast test-asan

test-fast: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# AddressSanitizer + UndefinedBehaviorSanitizer build of the library and tests (CPU only;
# tests named *_slow are statistical runs that take too long under the sanitizers), then the CUDA
# channelizer's host side and test_chan_cuda under the sanitizers against a fake CUDA runtime
# (tests/fakecuda, where nvcc is found: ~1 minute).
test-asan: setup
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOLYRX_CUDA=OFF \
	  -DPOLYRX_SANITIZE=address,undefined >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j$(JOBS) -E '_slow$$'
	@if command -v nvcc >/dev/null 2>&1; then tests/fakecuda/run_chan_cuda.sh $(ASAN_BUILD); \
	else echo "test_chan_cuda under ASan (tests/fakecuda): skipped: no nvcc"; fi

bench: build
	@./bench/run_cpu.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) demo-out
