# proffs - see README.md. `make V=1` shows commands; all output goes to build/.
# SAN=1 builds an ASan+UBSan variant into build-san/.

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-7s %s\n' $(1) $(2)
endif

CC      ?= cc
CLANG   ?= clang
BPFTOOL ?= bpftool
PROTOC_C ?= protoc-c

ifeq ($(SAN),1)
BUILD   ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
OPT     := -O1
else
BUILD   ?= build
SANFLAGS :=
OPT     := -O2
endif

GEN     := $(BUILD)/gen
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo 0.1)

CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
	   -D_GNU_SOURCE -DFUSE_USE_VERSION=35 -DPROFFS_VERSION='"$(VERSION)"' $(SANFLAGS) \
	   -I. -Istore -Ifs -Isampler -Ibpf -I$(GEN) \
	   $(shell pkg-config --cflags fuse3 libbpf)
LDLIBS  := $(shell pkg-config --libs fuse3 libbpf) -lelf -lz -lzstd -llmdb -lprotobuf-c -lpthread -lm
LDFLAGS += $(SANFLAGS)

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_SKELS  := $(patsubst bpf/%.bpf.c,$(GEN)/%.skel.h,$(BPF_SRCS))
PROTO_C    := $(GEN)/profile.pb-c.c
LIB_SRCS   := $(wildcard store/*.c fs/*.c sampler/*.c)
LIB_OBJS   := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(BUILD)/obj/gen/profile.pb-c.o
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
TOOL_SRCS  := $(wildcard tests/tools/*.c)
TOOL_BINS  := $(patsubst tests/tools/%.c,$(BUILD)/tests/%,$(TOOL_SRCS))
HELPER_SRCS := $(wildcard tests/helpers/*.c)
HELPER_BINS := $(patsubst tests/helpers/%.c,$(BUILD)/tests/%,$(HELPER_SRCS))
FUZZ_SRCS  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS  := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))

.PHONY: all test test-fast run bench fuzz clean deps
all: $(BUILD)/proffs $(UNIT_BINS) $(TOOL_BINS) $(HELPER_BINS)

deps:
	$(Q)scripts/deps.sh

$(BUILD)/proffs: $(BUILD)/obj/main.o $(BUILD)/lib.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/lib.a: $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/obj/%.o: %.c $(PROTO_C) $(BPF_SKELS) $(wildcard */*.h) | $(BUILD)/obj
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) && $(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/gen/profile.pb-c.o: $(PROTO_C)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) && $(CC) $(filter-out -Werror -Wextra,$(CFLAGS)) -c -o $@ $<

$(PROTO_C): store/profile.proto
	$(call msg,PROTOC,$<)
	$(Q)mkdir -p $(GEN) && $(PROTOC_C) --c_out=$(GEN) --proto_path=store store/profile.proto

# BPF: one object and one skeleton per bpf/*.bpf.c (libbpf-tools style).
BPF_ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
$(GEN)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h)
	$(call msg,BPF,$<)
	$(Q)mkdir -p $(GEN) && $(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Ibpf -I$(GEN) -c $< -o $@
$(GEN)/%.skel.h: $(GEN)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/lib.a
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) && $(CC) $(CFLAGS) -Itests -o $@ $< $(BUILD)/lib.a $(LDFLAGS) $(LDLIBS)

$(BUILD)/tests/%: tests/helpers/%.c
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) && $(CC) -O2 -g -fno-omit-frame-pointer -Wall -Werror -o $@ $< $(HELPER_LDLIBS_$*)

$(BUILD)/obj:
	$(Q)mkdir -p $@

# Fuzz targets: clang + libFuzzer, always with ASan/UBSan.
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -DFUSE_USE_VERSION=35 -I. -Istore -Ifs -Isampler -I$(GEN) \
	       $(shell pkg-config --cflags fuse3 libbpf)
FUZZ_LIB_SRCS := $(wildcard store/*.c fs/*.c)
$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB_SRCS) $(PROTO_C)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(dir $@) && $(CLANG) $(FUZZ_CFLAGS) -DPROFFS_VERSION='"fuzz"' -o $@ $< \
	   $(filter-out %/cmd_mount.c %/fuse_ops.c,$(FUZZ_LIB_SRCS)) $(PROTO_C) $(LDLIBS)

FUZZ_TIME ?= 60
fuzz: $(FUZZ_BINS)
	$(Q)for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p $(BUILD)/corpus/$$n; \
	  echo "fuzz $$n for $(FUZZ_TIME)s"; \
	  $$f -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=2048 $(BUILD)/corpus/$$n tests/fuzz/corpus/$$n || exit 1; done

# The test suite: a normal pass, then the sanitizer pass, then a short fuzz run.
test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory SAN=1 all
	$(Q)$(MAKE) --no-print-directory $(FUZZ_BINS)
	$(Q)tests/run.sh

run: deps all
	$(BUILD)/proffs run $(RUN_ARGS)

bench: deps all
	$(Q)scripts/bench/run.sh

clean:
	rm -rf build build-san

# tests/tools/*.c: programs linked with the library that tests call
# (generators, fuzz drivers); not run by the runner themselves.
$(BUILD)/tests/%: tests/tools/%.c $(BUILD)/lib.a
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@) && $(CC) $(CFLAGS) -Itests -o $@ $< $(BUILD)/lib.a $(LDFLAGS) $(LDLIBS)

# The BPF object and skeleton are intermediates of a pattern chain; keep
# them, or make deletes them after every build and rebuilds everything that
# includes a skeleton the next time.
.SECONDARY: $(BPF_SKELS) $(patsubst %.skel.h,%.bpf.o,$(BPF_SKELS))
