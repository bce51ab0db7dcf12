# ember: top-level entry points. Every target runs scripts/setup.sh first (it returns at
# once when the Debian packages are already there), then configures and builds with CMake.
#
#   make            build (Release, -O3, portable: x86-64-v2 + per-ISA kernels chosen at run time)
#   make test       build and run every test (CTest)
#   make demo       build and train the main example (a CNN on Fashion-MNIST, 2 epochs)
#   make demo-lm    build and train the second main job: a character-level transformer on the
#                   fortunes text (a few minutes, 2 threads), then sample from it (docs/char_lm.md)
#   make bench      build and run the benchmarks: ember and PyTorch each in its own process,
#                   5 interleaved rounds (BENCH_FLAGS="--only softmax --rounds 7", see bench/run.py)
#   make bench-train  one epoch of the main job in ember and in PyTorch, side by side
#   make bench-infer  inference latency: ember eager / artifact / compiled against PyTorch eager /
#                   TorchScript, batch 1 and 64 (BENCH_FLAGS="--only cnn --rounds 7", see bench/infer.py)
#   make bench-serve  load test (wrk): ember-serve with and without dynamic batching against a
#                   FastAPI + uvicorn + torch server of the same CNN (BENCH_FLAGS="--soak 1000000")
#   make bench-quant  int8 (dynamic and static) against float32 in ember and PyTorch (quantize_dynamic,
#                   FX static), MLP and CNN at batch 1 and 64 (BENCH_FLAGS="--only cnn --rounds 7",
#                   see bench/quant.py)
#   make bench-profiler  profiler overhead on the training step: ember::profiler against torch.profiler
#   make bench-amp  mixed precision: the training step in fp32 and with bf16 autocast, and a bf16
#                   against fp32 GEMM (GFLOP/s), ember and PyTorch; says which ISA path ran
#   make bench-python  Python overhead: tiny ops, an MLP step and a Python training epoch, ember vs torch
#   make bench-guards  cost of the training guards (docs/guards.md) on the main job's step: all on vs off
#   make bench-lm   the char_lm transformer in ember and in PyTorch: training step and generation
#                   tokens/s (torch with and without a KV cache), ratios ember/torch (bench/char_lm.py)
#   make bench-distributed  all-reduce bandwidth 1 KB-256 MB on 2 and 4 ranks: ember (Gloo) against
#                   torch.distributed's gloo backend, each in its own processes, then the DDP
#                   training step (MLP, CNN) against torch DDP (bench/distributed.py; BENCH_FLAGS="--only ddp")
#   make sanitize   build with -fsanitize=address,undefined in build-asan/ and run the tests
#   make fuzz       the op fuzzer under ASan+UBSan for FUZZ_SECONDS (default 3600), seed FUZZ_SEED
#
# Options: NATIVE=ON adds -march=native (not portable); WERROR=ON turns warnings into errors;
# JOBS=N sets build parallelism; CMAKE_FLAGS=... passes anything else to CMake.

BUILD_DIR ?= build
ASAN_DIR ?= build-asan
JOBS ?= $(shell nproc)
NATIVE ?= OFF
WERROR ?= OFF
CMAKE_FLAGS ?=
CTEST_FLAGS ?= --output-on-failure --timeout 900

CONFIGURE = cmake -S . -DCMAKE_BUILD_TYPE=Release -DEMBER_NATIVE=$(NATIVE) -DEMBER_WERROR=$(WERROR) $(CMAKE_FLAGS)

.PHONY: all setup build test demo demo-lm bench bench-train bench-infer bench-serve bench-quant bench-profiler bench-amp bench-distributed \
	bench-python bench-guards bench-lm sanitize fuzz clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@$(CONFIGURE) -B $(BUILD_DIR) > $(BUILD_DIR).configure.log 2>&1 || (cat $(BUILD_DIR).configure.log; exit 1)
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -j $(JOBS)

DEMO_FLAGS ?=
demo: build
	@./$(BUILD_DIR)/examples/fashion_mnist --epochs 2 --out $(BUILD_DIR)/demo $(DEMO_FLAGS)

DEMO_LM_FLAGS ?=
demo-lm: build
	@./$(BUILD_DIR)/examples/char_lm --epochs 3 --steps-per-epoch 200 --out $(BUILD_DIR)/demo-lm $(DEMO_LM_FLAGS)
	@./$(BUILD_DIR)/examples/char_lm --out $(BUILD_DIR)/demo-lm --sample "A fool" --length 300

BENCH_FLAGS ?=
bench: build
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target ember_benchmarks
	@/usr/bin/python3 bench/run.py --build $(BUILD_DIR) $(BENCH_FLAGS)

bench-train: build
	@/usr/bin/python3 bench/train_fashion_mnist.py --build $(BUILD_DIR)

bench-infer: build
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target bench_infer
	@/usr/bin/python3 bench/infer.py --build $(BUILD_DIR) $(BENCH_FLAGS)

bench-serve: build
	@/usr/bin/python3 bench/serve/run.py --build $(BUILD_DIR) $(BENCH_FLAGS)
bench-quant: build
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target bench_quant
	@/usr/bin/python3 bench/quant.py --build $(BUILD_DIR) $(BENCH_FLAGS)

bench-profiler: build
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target bench_profiler
	@/usr/bin/python3 bench/profiler.py --build $(BUILD_DIR) $(BENCH_FLAGS)

bench-amp: build
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target bench_amp bench_profiler fashion_mnist
	@/usr/bin/python3 bench/amp.py --build $(BUILD_DIR) $(BENCH_FLAGS)

bench-python: build
	@/usr/bin/python3 bench/python.py --build $(BUILD_DIR) $(BENCH_FLAGS)

bench-guards: build
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target bench_profiler
	@/usr/bin/python3 bench/guards.py --build $(BUILD_DIR) $(BENCH_FLAGS)

bench-lm: build
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target bench_char_lm
	@/usr/bin/python3 bench/char_lm.py --build $(BUILD_DIR) $(BENCH_FLAGS)

bench-distributed: build
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target bench_distributed_ember
	@/usr/bin/python3 bench/distributed.py --build $(BUILD_DIR) $(BENCH_FLAGS)

sanitize: setup
	@cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_SANITIZE=address,undefined \
	  -DEMBER_NATIVE=$(NATIVE) -DEMBER_WERROR=$(WERROR) -DEMBER_BUILD_PARITY=OFF -DEMBER_BUILD_BENCH=OFF -DEMBER_BUILD_PYTHON=OFF \
	  $(CMAKE_FLAGS) > $(ASAN_DIR).configure.log 2>&1 || (cat $(ASAN_DIR).configure.log; exit 1)
	@cmake --build $(ASAN_DIR) -j $(JOBS)
	@cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 ctest $(CTEST_FLAGS) -j $(JOBS) -E install

FUZZ_SECONDS ?= 3600
FUZZ_FILE_SECONDS ?= 600
FUZZ_SEED ?=
FUZZ_ENV = ASAN_OPTIONS=allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:abort_on_error=1 \
  EMBER_FUZZ_SEED=$(FUZZ_SEED)
fuzz: setup
	@cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_SANITIZE=address,undefined \
	  -DEMBER_NATIVE=$(NATIVE) -DEMBER_BUILD_PARITY=OFF -DEMBER_BUILD_BENCH=OFF -DEMBER_BUILD_PYTHON=OFF \
	  $(CMAKE_FLAGS) > $(ASAN_DIR).configure.log 2>&1 || (cat $(ASAN_DIR).configure.log; exit 1)
	@cmake --build $(ASAN_DIR) -j $(JOBS) --target ember_fuzz
	@./$(ASAN_DIR)/tests/ember_fuzz --check-coverage .
	@$(FUZZ_ENV) ./$(ASAN_DIR)/tests/ember_fuzz --seconds $(FUZZ_SECONDS)
	@$(FUZZ_ENV) ./$(ASAN_DIR)/tests/ember_fuzz --files --seconds $(FUZZ_FILE_SECONDS)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(BUILD_DIR).configure.log $(ASAN_DIR).configure.log
