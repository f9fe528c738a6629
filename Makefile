# proffs - see README.md. `make V=1` shows commands; all output goes to build/.
# SAN=1 builds an ASan+UBSan variant into build-san/.
#
# Flags: ours are in PROFFS_CFLAGS and always apply; CFLAGS (default
# "-O2 -g", "-O1 -g" with SAN=1) is the user's to override, so
# `make CFLAGS=-O0` changes optimisation without losing -I/-D.
# pkg-config is asked lazily and once per make (the first compile), so a
# fresh machine's `make test` runs deps.sh before anything needs fuse3.

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-7s %s\n' $(1) $(2)
endif

.DELETE_ON_ERROR:

CC      ?= cc
CLANG   ?= clang
BPFTOOL ?= bpftool
PROTOC_C ?= protoc-c

ifeq ($(SAN),1)
BUILD   ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
CFLAGS  ?= -O1 -g
else
BUILD   ?= build
SANFLAGS :=
CFLAGS  ?= -O2 -g
endif

comma   := ,
GEN     := $(BUILD)/gen
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo 0.1)

# Evaluated on first use, then remembered (a recursive variable that
# redefines itself as simple).
PKG_CFLAGS = $(eval PKG_CFLAGS := $$(shell pkg-config --cflags fuse3 libbpf))$(PKG_CFLAGS)
PKG_LIBS   = $(eval PKG_LIBS := $$(shell pkg-config --libs fuse3 libbpf))$(PKG_LIBS)

DEFS    := -D_GNU_SOURCE -DFUSE_USE_VERSION=314
WARN    := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
PROFFS_CFLAGS = -std=gnu11 $(WARN) $(DEFS) $(SANFLAGS) -I. -I$(BUILD) $(PKG_CFLAGS)
LDLIBS  = $(PKG_LIBS) -ldw -lelf -lz -lzstd -llmdb -lprotobuf-c -liberty -lpthread -lm
LDFLAGS += $(SANFLAGS)

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_SKELS  := $(patsubst bpf/%.bpf.c,$(GEN)/%.skel.h,$(BPF_SRCS))
# Test-only BPF programs (tests/bpf/*.bpf.c): skeletons for unit tests.
TEST_BPF_SKELS := $(patsubst tests/bpf/%.bpf.c,$(GEN)/%.skel.h,$(wildcard tests/bpf/*.bpf.c))
PROTO_C    := $(GEN)/profile.pb-c.c
PUSH_PROTO_C := $(GEN)/push.pb-c.c
GENERATED  := $(PROTO_C) $(PUSH_PROTO_C) $(BPF_SKELS) $(TEST_BPF_SKELS) $(GEN)/version.h
LIB_SRCS   := $(wildcard store/*/*.c fs/*/*.c sampler/*.c sampler/*/*.c)
LIB_OBJS   := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(BUILD)/obj/gen/profile.pb-c.o \
	      $(BUILD)/obj/gen/push.pb-c.o
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
TOOL_SRCS  := $(wildcard tests/tools/*.c)
TOOL_BINS  := $(patsubst tests/tools/%.c,$(BUILD)/tests/%,$(TOOL_SRCS))
HELPER_SRCS := $(wildcard tests/helpers/*.c)
HELPER_BINS := $(patsubst tests/helpers/%.c,$(BUILD)/tests/%,$(HELPER_SRCS))
FUZZ_SRCS  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS  := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))

.PHONY: all test run bench fuzz clean deps
all: $(BUILD)/proffs $(UNIT_BINS) $(TOOL_BINS) $(HELPER_BINS)

deps:
	$(Q)scripts/deps.sh

$(BUILD)/proffs: $(BUILD)/obj/main.o $(BUILD)/lib.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/lib.a: $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# Each object depends on the headers it includes (-MMD); the generated
# headers must exist before the first compile, which cannot know yet.
$(BUILD)/obj/%.o: %.c | $(GENERATED)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) && $(CC) $(PROFFS_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/gen/profile.pb-c.o: $(PROTO_C)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) && $(CC) $(filter-out -Werror -Wextra,$(PROFFS_CFLAGS)) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/gen/push.pb-c.o: $(PUSH_PROTO_C)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) && $(CC) $(filter-out -Werror -Wextra,$(PROFFS_CFLAGS)) $(CFLAGS) -c -o $@ $<

# The version `proffs version` prints: rewritten only when git describe
# says something new, so what includes it is rebuilt then and only then.
$(GEN)/version.h: FORCE
	$(Q)mkdir -p $(GEN) && v='#define PROFFS_VERSION "$(VERSION)"'; \
	  [ -f $@ ] && [ "$$(cat $@)" = "$$v" ] || echo "$$v" >$@
.PHONY: FORCE
FORCE:

$(GEN)/push.pb-c.h: $(PUSH_PROTO_C)
$(PUSH_PROTO_C): sampler/push/push.proto
	$(call msg,PROTOC,$<)
	$(Q)mkdir -p $(GEN) && $(PROTOC_C) --c_out=$(GEN) --proto_path=sampler/push $<

$(GEN)/profile.pb-c.h: $(PROTO_C)
$(PROTO_C): store/profile/profile.proto
	$(call msg,PROTOC,$<)
	$(Q)mkdir -p $(GEN) && $(PROTOC_C) --c_out=$(GEN) --proto_path=store/profile $<

# BPF: one object and one skeleton per bpf/*.bpf.c (libbpf-tools style).
BPF_ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
$(GEN)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h)
	$(call msg,BPF,$<)
	$(Q)mkdir -p $(GEN) && $(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I. -I$(BUILD) -c $< -o $@
$(GEN)/%.bpf.o: tests/bpf/%.bpf.c $(wildcard bpf/*.h)
	$(call msg,BPF,$<)
	$(Q)mkdir -p $(GEN) && $(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I. -I$(BUILD) -c $< -o $@
$(GEN)/%.skel.h: $(GEN)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(BUILD)/tests/test_hotspot_bpf: $(GEN)/hs_iter.skel.h $(GEN)/hs_cost.skel.h

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/lib.a | $(GENERATED)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) $(BUILD)/dep && $(CC) $(PROFFS_CFLAGS) $(CFLAGS) -MMD -MP -MF $(BUILD)/dep/$*.d -o $@ $< $(BUILD)/lib.a $(LDFLAGS) $(LDLIBS)

# tests/tools/*.c: programs linked with the library that tests call
# (generators, fuzz drivers); not run by the runner themselves.
$(BUILD)/tests/%: tests/tools/%.c $(BUILD)/lib.a | $(GENERATED)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) $(BUILD)/dep && $(CC) $(PROFFS_CFLAGS) $(CFLAGS) -MMD -MP -MF $(BUILD)/dep/$*.d -o $@ $< $(BUILD)/lib.a $(LDFLAGS) $(LDLIBS)

# Workloads built like Debian's own binaries: no frame pointers.
HELPER_CFLAGS_truth_nofp := -O2 -g -fomit-frame-pointer
HELPER_CFLAGS_qsortcb := -O2 -g -fomit-frame-pointer
HELPER_CFLAGS_forker_nofp := -O2 -g -fomit-frame-pointer
HELPER_CFLAGS_bigframes := -O2 -g -fomit-frame-pointer
HELPER_CFLAGS_remap := -O2 -g -fomit-frame-pointer
HELPER_CFLAGS_hangfs = -O2 -g $(shell pkg-config --cflags fuse3)
HELPER_LDLIBS_hangfs = $(shell pkg-config --libs fuse3)

# Ground-truth workloads: their own flags (frame pointers unless the
# helper's HELPER_CFLAGS_name says otherwise), never sanitized.
$(BUILD)/tests/%: tests/helpers/%.c
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) && $(CC) $(or $(HELPER_CFLAGS_$*),-O2 -g -fno-omit-frame-pointer) -Wall -Werror -o $@ $< $(HELPER_LDLIBS_$*)

# truth as a distribution ships a program (issue 30's tests): stripped,
# its debug file beside it (objcopy --only-keep-debug). Built with
# -frecord-gcc-switches and a define of its own so that its build id is
# its own: an unstripped truth sampled at the same time (another test's)
# must not lend it its symbol table.
all: $(BUILD)/tests/truth_stripped
$(BUILD)/tests/truth_stripped: tests/helpers/truth.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@) && $(CC) -O2 -g -fno-omit-frame-pointer -frecord-gcc-switches \
		-DTRUTH_STRIPPED -Wall -Werror -o $@.full $< && \
	  objcopy --only-keep-debug $@.full $@.debug && strip -o $@ $@.full && rm $@.full

# Go workloads (tests/helpers/go), built by Debian's Go offline, its caches
# under build/: stripped as release builds are (-s -w: no .symtab, no
# DWARF) and not.
GO_HELPERS := $(BUILD)/tests/gohot_stripped $(BUILD)/tests/gohot_full $(BUILD)/tests/gocgo_stripped
GOENV := GOFLAGS=-mod=mod GOCACHE=$(abspath $(BUILD))/gocache GOPATH=$(abspath $(BUILD))/gopath \
	GOPROXY=off GOTOOLCHAIN=local GOTELEMETRY=off
# (the normal build's only: the sanitizer build runs no workload of its own)
ifneq ($(SAN),1)
all: $(GO_HELPERS)
endif
$(BUILD)/tests/gohot_stripped: tests/helpers/go/gohot.go tests/helpers/go/go.mod
	$(call msg,GO,$@)
	$(Q)mkdir -p $(dir $@) && cd tests/helpers/go && $(GOENV) go build -ldflags='-s -w' -o $(abspath $@) .
$(BUILD)/tests/gocgo_stripped: tests/helpers/gocgo/main.go tests/helpers/gocgo/go.mod
	$(call msg,GO,$@)
	$(Q)mkdir -p $(dir $@) && cd tests/helpers/gocgo && CGO_ENABLED=1 $(GOENV) go build -ldflags='-s -w' -o $(abspath $@) .
$(BUILD)/tests/gohot_full: tests/helpers/go/gohot.go tests/helpers/go/go.mod
	$(call msg,GO,$@)
	$(Q)mkdir -p $(dir $@) && cd tests/helpers/go && $(GOENV) go build -o $(abspath $@) .

# Java workloads of sampler/java/'s tests: Known.class (for JDK 17 and
# newer) and its JNI library, built like Debian's libraries (no frame
# pointers); Unload.class with the template of its generations.
JDK17 ?= /usr/lib/jvm/java-17-openjdk-amd64
JAVA_HELPERS := $(BUILD)/tests/java/Known.class $(BUILD)/tests/java/libknownjni.so \
	$(BUILD)/tests/java/Unload.class
all: $(JAVA_HELPERS)
$(BUILD)/tests/java/Known.class: tests/helpers/java/Known.java
	$(call msg,JAVAC,$<)
	$(Q)mkdir -p $(dir $@) && $(JDK17)/bin/javac --release 17 -d $(dir $@) $<
$(BUILD)/tests/java/Unload.class: tests/helpers/java/Unload.java tests/helpers/java/Wk0000.java
	$(call msg,JAVAC,$<)
	$(Q)mkdir -p $(dir $@) && $(JDK17)/bin/javac --release 17 -d $(dir $@) $^
$(BUILD)/tests/java/libknownjni.so: tests/helpers/java/known_jni.c
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) && $(CC) -O2 -g -fomit-frame-pointer -fPIC -shared -Wall -Werror \
		-I$(JDK17)/include -I$(JDK17)/include/linux -o $@ $<

# Fuzz targets: clang + libFuzzer, always with ASan/UBSan, over the
# FUSE-free part of the library and the sampler's parsers of files that
# local users write (perf maps, ELF, Python interpreters) and of other
# processes' memory (Python line tables and strings).
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined $(DEFS) -I. -I$(BUILD) $(PKG_CFLAGS)
FUZZ_LIB_SRCS := $(filter-out fs/fuse/%,$(wildcard store/*/*.c fs/*/*.c)) \
	sampler/symbols/perfmap.c sampler/symbols/elfsym.c \
	sampler/symbols/debugfile.c sampler/symbols/dwline.c sampler/symbols/gopclntab.c \
	sampler/scrape/scrape_target.c sampler/scrape/scrape_delta.c \
	sampler/unwind/table.c sampler/unwind/twin.c sampler/http/curl_lazy.c \
	sampler/python/linetable.c sampler/python/pycode.c sampler/python/layout.c \
	sampler/python/interp.c sampler/push/retry_after.c sampler/runtime/rtcache.c \
	sampler/ruby/rbline.c sampler/ruby/rbcode.c sampler/ruby/rblayout.c sampler/ruby/rbfile.c \
	sampler/v8/v8file.c sampler/v8/v8layout.c sampler/v8/v8pos.c sampler/v8/v8name.c sampler/v8/v8str.c sampler/v8/v8walk.c \
	sampler/java/hsdecode.c sampler/java/hsmem.c sampler/java/vmtables.c \
	sampler/java/hslayout.c sampler/java/hsvm.c sampler/java/hsperf.c sampler/java/hsname.c sampler/java/hswalk.c
# The library part is compiled once (fuzzer-no-link: instrumented, no
# main) and linked into every target; compiling it per target was ~500
# compiles, the larger part of make test's build.
FUZZ_OBJS := $(patsubst %.c,$(BUILD)/fuzzobj/%.o,$(FUZZ_LIB_SRCS)) $(BUILD)/fuzzobj/gen/profile.pb-c.o
$(BUILD)/fuzzobj/%.o: %.c | $(GENERATED)
	$(call msg,FUZZCC,$<)
	$(Q)mkdir -p $(dir $@) && $(CLANG) $(subst fuzzer$(comma),fuzzer-no-link$(comma),$(FUZZ_CFLAGS)) -MMD -MP -c -o $@ $<
$(BUILD)/fuzzobj/gen/profile.pb-c.o: $(PROTO_C)
	$(call msg,FUZZCC,$<)
	$(Q)mkdir -p $(dir $@) && $(CLANG) $(subst fuzzer$(comma),fuzzer-no-link$(comma),$(FUZZ_CFLAGS)) -c -o $@ $<
$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(dir $@) && $(CLANG) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_OBJS) $(LDLIBS)

FUZZ_TIME ?= 60
fuzz: $(FUZZ_BINS)
	$(Q)for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p $(BUILD)/corpus/$$n; \
	  echo "fuzz $$n for $(FUZZ_TIME)s"; \
	  $$f -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=2048 $(BUILD)/corpus/$$n tests/fuzz/corpus/$$n || exit 1; done

# The test suite: a normal pass, then the sanitizer pass, then a short fuzz run.
test: deps
	$(Q)$(MAKE) --no-print-directory -j2 all
	$(Q)$(MAKE) --no-print-directory -j2 SAN=1 all
	$(Q)$(MAKE) --no-print-directory -j2 $(FUZZ_BINS)
	$(Q)tests/run.sh

run: deps
	$(Q)$(MAKE) --no-print-directory all
	$(BUILD)/proffs run $(RUN_ARGS)

bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/bench/run.sh

clean:
	rm -rf build build-san

# The BPF object and skeleton are intermediates of a pattern chain; keep
# them, or make deletes them after every build and rebuilds everything that
# includes a skeleton the next time.
.SECONDARY: $(BPF_SKELS) $(patsubst %.skel.h,%.bpf.o,$(BPF_SKELS)) $(TEST_BPF_SKELS) \
	$(patsubst %.skel.h,%.bpf.o,$(TEST_BPF_SKELS)) $(FUZZ_OBJS)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

