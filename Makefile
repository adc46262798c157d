# agenttest: root build.
#
# Non-recursive make. Every component folder has a `module.mk` that adds its
# sources and targets; this file holds the flags, the generic rules and the
# user-facing targets. Conventions a module follows:
#   - every .c of a component except `main.c` / `*_main.c` goes into
#     $(BUILD)/lib<component>.a, so unit tests and fuzzers link the same code;
#   - binaries land in $(BINDIR) (bin/ for the normal build);
#   - unit tests are tests/unit/<component>/test_*.c, one binary each,
#     linked against every component library (see tests/module.mk).
#
# Knobs: SANITIZER=address,undefined builds into build/san (bin: build/san/bin);
# CC=clang works; PREFIX and DESTDIR for `make install`.

.DEFAULT_GOAL := build
SHELL := /bin/bash
.SUFFIXES:
.DELETE_ON_ERROR:

PREFIX    ?= /usr/local
DESTDIR   ?=
SANITIZER ?=
PYTHON    ?= /usr/bin/python3
NPROC     := $(shell nproc 2>/dev/null || echo 2)

VERSION := $(shell cat VERSION)
COMMIT  := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

ifeq ($(SANITIZER),)
  BUILD  ?= build/release
  BINDIR ?= bin
  OPT    := -O2 -g -D_FORTIFY_SOURCE=2
else
  BUILD  ?= build/san
  BINDIR ?= $(BUILD)/bin
  OPT    := -O1 -g -fno-omit-frame-pointer -fsanitize=$(SANITIZER) -fno-sanitize-recover=all
endif

PKGS = json-c libsodium libmariadb libseccomp libcurl fcgi
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS))

WARN := -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes \
        -Wshadow -Wcast-qual -Wpointer-arith -Wformat=2 -Wvla \
        -Wno-unused-parameter
HARDEN_CFLAGS  := -fstack-protector-strong -fstack-clash-protection -fPIC
HARDEN_LDFLAGS := -Wl,-z,relro,-z,now -Wl,--as-needed

CPPFLAGS += -D_GNU_SOURCE -I. -Icommon \
            -DAGENTTEST_VERSION='"$(VERSION)"' -DAGENTTEST_COMMIT='"$(COMMIT)"'
# Scores must be the same bits on every x86-64 machine for the same binary:
# no fused multiply-add contraction (GCC's default in ISO C mode, clang's is
# "on"), no -march (no CPU-specific instructions), no -ffast-math.
# docs/challenges.md, "Reproducibility".
FP_CFLAGS := -ffp-contract=off
CFLAGS   += -std=c11 $(WARN) $(OPT) $(FP_CFLAGS) $(HARDEN_CFLAGS) $(PKG_CFLAGS)
LDFLAGS  += $(OPT) $(HARDEN_LDFLAGS) -pie
LDLIBS   += $(PKG_LIBS) -lm

# Filled in by the modules.
BINS       :=
LIBS       :=
UNIT_TESTS :=
ALL_OBJS   :=

# Objects of a component folder (recursive), minus its main files.
# $(call component_srcs,dir)
component_srcs = $(filter-out %/main.c %_main.c,$(shell find $(1) -name '*.c' -not -path '*/host/*' 2>/dev/null | sort))
objs_of = $(patsubst %.c,$(BUILD)/%.o,$(1))

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

include common/module.mk
-include fcgi/module.mk
-include evaluator/module.mk
-include sandbox/module.mk
include tests/module.mk

# Prerequisites expand when a rule is read, so a module included early does
# not see the libraries of modules included after it. Declare here, once all
# modules are read, that every binary needs every library: without this a
# parallel build (-j) could link before a late library was archived.
$(BINS) $(UNIT_TESTS): $(LIBS)

-include $(ALL_OBJS:.o=.d)

.PHONY: build deps run start stop status test bench fuzz install clean lint boundaries unit-tests

build: $(BINS)

deps:
	@scripts/deps.sh

# The whole stack in the foreground on the embedded defaults; Ctrl-C stops it.
run: deps
	@$(MAKE) --no-print-directory -j$(NPROC) build
	@scripts/stack.sh run

start: deps
	@$(MAKE) --no-print-directory -j$(NPROC) build
	@scripts/stack.sh start

stop:
	@scripts/stack.sh stop

status:
	@scripts/stack.sh status

# Every test: unit (plain and sanitized), fuzz smoke, sandbox corpus,
# end-to-end against the real stack, browser. Prints "N passed, N failed".
test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) build
	@tests/run.sh

bench: deps
	@$(MAKE) --no-print-directory -j$(NPROC) build
	@tests/bench/run.sh

fuzz: deps
	@tests/fuzz/run.sh long

lint: boundaries
	cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability,performance \
	  --inline-suppr --suppress=missingIncludeSystem -I common -I . common fcgi evaluator sandbox
	mandoc -Tlint -Wwarning sandbox/agenttest-sandbox.1

# The component boundaries of DESIGN, on the sources and the linked binaries
# (scripts/check-boundaries.sh says which).
boundaries: $(BINDIR)/agenttest-fcgi $(BUILD)/librunner.a $(BUILD)/libsandbox.a $(BUILD)/libevaluator.a
	@scripts/check-boundaries.sh $(BUILD) $(BINDIR)

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/agenttest
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	scripts/install-data.sh "$(DESTDIR)" "$(PREFIX)"

clean:
	rm -rf build bin
