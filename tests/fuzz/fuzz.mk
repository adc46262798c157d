# Fuzz builds: libFuzzer drivers compiled with clang and
# -fsanitize=fuzzer,address,undefined, each linked with the common/ and fcgi/
# sources it exercises (compiled with the same sanitizers; no libfcgi, no
# database). Used by tests/fuzz/run.sh:  make -f tests/fuzz/fuzz.mk
.SUFFIXES:
.DELETE_ON_ERROR:
FUZZ_CC    ?= clang
FUZZ_BUILD ?= build/fuzz
PKGS        = json-c libsodium libmariadb
FUZZ_FLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
              -fno-sanitize-recover=undefined -std=c11 -Wall -Wextra -Werror -Wno-unused-parameter \
              -D_GNU_SOURCE -I. -Icommon -DAGENTTEST_VERSION='"fuzz"' -DAGENTTEST_COMMIT='"fuzz"' \
              $(shell pkg-config --cflags $(PKGS))
FUZZ_LIBS  := $(shell pkg-config --libs $(PKGS)) -lm

FUZZ_COMMON := $(wildcard common/*.c)
FUZZ_FCGI   := fcgi/app.c fcgi/ctx.c fcgi/request.c fcgi/router.c fcgi/json.c fcgi/auth.c fcgi/hosts.c fcgi/metrics.c \
               fcgi/handlers/health.c fcgi/handlers/agents_count.c fcgi/handlers/metrics.c
FUZZ_OBJS   := $(patsubst %.c,$(FUZZ_BUILD)/%.o,$(FUZZ_COMMON) $(FUZZ_FCGI))
FUZZERS     := fuzz_request fuzz_json fuzz_config fuzz_klines

all: $(addprefix $(FUZZ_BUILD)/,$(FUZZERS))

$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -c $< -o $@

# the klines parsers: evaluator code, no fcgi/
$(FUZZ_BUILD)/fuzz_klines: $(FUZZ_BUILD)/tests/fuzz/fuzz_klines.o $(FUZZ_BUILD)/evaluator/klines.o \
		$(FUZZ_BUILD)/evaluator/klines_scan.o $(FUZZ_BUILD)/common/xalloc.o
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(FUZZ_LIBS)

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/tests/fuzz/fuzz_%.o $(FUZZ_OBJS)
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(FUZZ_LIBS)

.PHONY: all
