# draengine - build, test and run.
#
#   make            build build/draengine and the Lua module build/lua/draengine/core.so
#   make run        the main job on its built-in default
#   make test       the busted specs (ends with "N passed, N failed")
#   make test-asan  the same specs under AddressSanitizer + UBSan + LeakSanitizer
#   make fuzz       libFuzzer targets, one after the other (fuzz-cel, fuzz-manifest,
#                   fuzz-allocate, fuzz-kubeconfig, fuzz-watch, fuzz-policy, fuzz-json;
#                   clang; FUZZ_SECONDS each)
#   make bench-instructions  policy overhead in callgrind instructions (needs valgrind)
#   make deps       check the Debian packages the build needs (installs them as root)
#
# Design: one static library (engine/ + drivers/) linked into the command and
# into the Lua module, so specs drive exactly the code the command runs.

DEBIAN_PACKAGES := gcc make pkg-config liblua5.4-dev lua5.4 lua-busted libjansson-dev \
                   libcurl4-openssl-dev libssl-dev libyaml-dev libpcre2-dev python3 openssl chromium

PKGS    := lua5.4 jansson libcurl openssl yaml-0.1 libpcre2-8
CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -g $(OPT) -Wall -Wextra -Werror -fPIC \
               -Wno-missing-field-initializers -Wshadow -Wstrict-prototypes \
               -fno-strict-aliasing -pthread
SANITIZE ?=
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS  = $(CFLAGS_BASE) $(SANITIZE) $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDLIBS  = $(PKG_LIBS) -lm -pthread

LIB_SRC := $(sort $(wildcard engine/base/*.c engine/model/*.c engine/cel/*.c engine/alloc/*.c \
            engine/policy/*.c engine/sched/*.c engine/ctrl/*.c drivers/*/*.c))
CLI_SRC := $(sort $(wildcard engine/cli/*.c bench/*.c))
LUA_SRC := $(sort $(wildcard lua/*.c))

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
LUA_OBJ := $(LUA_SRC:%.c=$(BUILD)/obj/%.o)
DEPFILES := $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(LUA_OBJ:.o=.d)

BIN    := $(BUILD)/draengine
LIBA   := $(BUILD)/libdraengine.a
LUAMOD := $(BUILD)/lua/draengine/core.so
STAMP  := $(BUILD)/.deps-ok

.PHONY: all deps run test test-asan fuzz-cel bench clean conformance bench-serve bench-instructions bench-kube-faults e2e e2e-run-only k8s bench-e2e
all: $(BIN) $(LUAMOD)

# ---- Debian packages ------------------------------------------------------
# Installs missing packages with apt-get when run as root; otherwise stops and
# prints the exact command. The stamp keeps this off the incremental path.
$(STAMP):
	@missing=""; for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$missing"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null || \
	      { echo "apt-get install failed for:$$missing" >&2; exit 1; }; \
	  else \
	    echo "missing Debian packages; run:" >&2; \
	    echo "  sudo apt-get install -y$$missing" >&2; exit 1; \
	  fi; \
	fi
	@mkdir -p $(BUILD) && touch $@

deps: $(STAMP)

# ---- build -----------------------------------------------------------------
Q := $(if $(V),,@)
$(BUILD)/obj/%.o: %.c | $(STAMP)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC $<")
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIBA): $(LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIBA)
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(CFLAGS) -rdynamic -o $@ $(CLI_OBJ) $(LIBA) $(LDLIBS)

$(LUAMOD): $(LUA_OBJ) $(LIBA)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(CFLAGS) -shared -o $@ $(LUA_OBJ) -Wl,--whole-archive $(LIBA) -Wl,--no-whole-archive \
	  $(filter-out -llua5.4,$(LDLIBS))

-include $(DEPFILES)

# The policy SDK (lua/draengine/*.lua) is embedded into sdk.o with .incbin.
$(BUILD)/obj/engine/policy/sdk.o: $(wildcard lua/draengine/*.lua)

# ---- run -------------------------------------------------------------------
run: all
	./$(BIN) run

# ---- tests -----------------------------------------------------------------
# busted runs under lua5.4 with the module path pointing at this build; the
# summary handler prints the final "N passed, N failed" line.  The specs'
# temporary files live in one directory per run, removed when busted ends
# (spec/support/tmp.lua).
BUSTED = DRAENGINE_BIN=$(abspath $(BIN)) DRAENGINE_ROOT=$(CURDIR) \
         LUA_CPATH="$(abspath $(BUILD))/lua/?.so;;" LUA_PATH="$(CURDIR)/lua/?.lua;$(CURDIR)/spec/?.lua;;" \
         lua5.4 /usr/bin/busted --lua=lua5.4 --helper=spec/support/tmp.lua -o spec/support/summary.lua \
         $(BUSTED_ARGS) $(SPEC_DIR)
SPEC_DIR ?= spec
# (mktemp and rm run without test-asan's LD_PRELOAD: LeakSanitizer would
# fail them for what they do not free at exit)
RUN_BUSTED = d=$$(LD_PRELOAD= mktemp -d "$${TMPDIR:-/tmp}/draengine-spec.XXXXXX") && \
             DRAENGINE_SPEC_TMP=$$d $(BUSTED); rc=$$?; LD_PRELOAD= rm -rf "$$d"; exit $$rc

test: all
	@$(RUN_BUSTED)

ASAN_BUILD := build-asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=86 \
            LSAN_OPTIONS=suppressions=$(CURDIR)/spec/support/lsan.supp:print_suppressions=0 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)"

test-asan: | $(STAMP)
	@$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) OPT=-O1 SANITIZE="$(ASAN_FLAGS)" all
	@$(ASAN_ENV) DRAENGINE_ASAN=1 $(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) test-run-only

test-run-only:
	@$(RUN_BUSTED)

# ---- end to end: a real Kubernetes 1.37 control plane ----------------------
# spec/e2e/cluster.py builds (once, cached outside the repo) and starts etcd,
# kube-apiserver and kube-controller-manager on 127.0.0.1, runs the *_e2e.lua
# specs against them and stops everything; E2E_KEEP=1 keeps the logs.
k8s:
	@spec/e2e/k8s/build.sh >/dev/null

e2e: all k8s
	@python3 spec/e2e/cluster.py run $(if $(E2E_KEEP),--keep) -- \
	  $(MAKE) --no-print-directory e2e-run-only

# Throughput beside the real kube-scheduler (spec/e2e/bench): BENCH lines.
bench-e2e: all k8s
	@spec/e2e/bench $(BENCH_E2E_ARGS)

e2e-run-only:
	@$(MAKE) --no-print-directory test-run-only SPEC_DIR=spec/e2e BUSTED_ARGS="--pattern=_e2e $(E2E_ARGS)"

# `draengine serve` against the test API server: 1,000 pods, wall time.
# A reflector against a faulty test API server: requests per second per
# fault with the default backoff, and the peak RSS of 4 x 48 MiB lists.
bench-kube-faults: all
	@DRAENGINE_BIN=$(abspath $(BIN)) DRAENGINE_ROOT=$(CURDIR) LUA_CPATH="$(abspath $(BUILD))/lua/?.so;;" \
	  LUA_PATH="$(CURDIR)/lua/?.lua;$(CURDIR)/spec/?.lua;;" lua5.4 spec/support/kube_faults_bench.lua

# The policy overhead in instructions (callgrind; valgrind must be installed,
# it is not among DEBIAN_PACKAGES since make test does not need it):
# gpu-nic-5000 with the shipped policies on / off, the facts per device and
# the first pod.  About 15 minutes on one core.
bench-instructions: all
	@bench/instructions.sh $(BIN)

bench-serve: all
	@DRAENGINE_BIN=$(abspath $(BIN)) DRAENGINE_ROOT=$(CURDIR) LUA_CPATH="$(abspath $(BUILD))/lua/?.so;;" \
	  LUA_PATH="$(CURDIR)/lua/?.lua;$(CURDIR)/spec/?.lua;;" lua5.4 spec/support/serve_bench.lua

# ---- fuzzing ---------------------------------------------------------------
# libFuzzer targets (clang), one per input the engine takes from outside:
#   fuzz-cel         CEL parser, checker, cost estimator, evaluator
#   fuzz-manifest    YAML/JSON manifests through to the device graph
#   fuzz-allocate    manifests as `allocate` reads them, then every pod scheduled
#   fuzz-kubeconfig  the kubeconfig loader
#   fuzz-watch       the watch-stream line cutter and event decoder
#   fuzz-policy      the policy loader and the hooks it accepts
#   fuzz-json        draengine's JSON reader against jansson's, differentially
# Each runs FUZZ_SECONDS (default 600) on build-fuzz/corpus-NAME, seeded from
# spec/fuzz/corpus-NAME (kept small: minimised inputs and regressions).
# `make fuzz` runs them one after the other (each uses one core).
FUZZ_SECONDS ?= 600
FUZZ_FLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined $(PKG_CFLAGS)
FUZZ_RUN = -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1

.PHONY: fuzz fuzz-lib fuzz-manifest fuzz-allocate fuzz-kubeconfig fuzz-watch fuzz-policy fuzz-json
fuzz-lib: | $(STAMP)
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=clang OPT=-O1 \
	  SANITIZE="-fsanitize=fuzzer-no-link,address,undefined" build-fuzz/libdraengine.a

build-fuzz/fuzz-%: spec/fuzz/fuzz_%.c spec/fuzz/fuzz_util.h fuzz-lib
	clang $(FUZZ_FLAGS) -o $@ $< build-fuzz/libdraengine.a $(LDLIBS)

fuzz-cel: build-fuzz/fuzz-cel
	@mkdir -p build-fuzz/corpus-cel
	python3 spec/fuzz/seed_cel.py ../shared/conformance/cel build-fuzz/corpus-cel spec/fuzz/corpus-cel
	./build-fuzz/fuzz-cel $(FUZZ_RUN) -max_len=4096 build-fuzz/corpus-cel

fuzz-manifest fuzz-allocate fuzz-kubeconfig fuzz-watch fuzz-policy fuzz-json: fuzz-%: build-fuzz/fuzz-%
	@mkdir -p build-fuzz/corpus-$*
	./build-fuzz/fuzz-$* $(FUZZ_RUN) -max_len=65536 build-fuzz/corpus-$* spec/fuzz/corpus-$*

fuzz:
	@for t in cel manifest allocate kubeconfig watch policy json; do \
	  $(MAKE) --no-print-directory fuzz-$$t || exit 1; done

# ---- conformance -----------------------------------------------------------
conformance: all
	python3 ../shared/conformance/check-cel --bin $(BIN) ../shared/conformance/cel | tail -1
	python3 ../shared/conformance/check-alloc --bin $(BIN) ../shared/conformance/alloc | tail -1

clean:
	rm -rf build build-asan build-fuzz
