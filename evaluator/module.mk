# evaluator/: the trusted core (datasets, backtest engine, metrics, labels,
# hashes) as libevaluator.a with no I/O policy, plus the programs that drive
# it: the `agenttest` CLI (evaluator/cli/) and the runner (evaluator/runner/).
EVAL_CORE_SRCS := $(filter-out evaluator/cli/% evaluator/runner/%,$(call component_srcs,evaluator))
EVAL_CORE_OBJS := $(call objs_of,$(EVAL_CORE_SRCS))
CLI_OBJS       := $(call objs_of,$(shell find evaluator/cli -name '*.c' | sort))
ALL_OBJS       += $(EVAL_CORE_OBJS) $(CLI_OBJS)
LIBS           := $(BUILD)/libevaluator.a $(LIBS)
BINS           += $(BINDIR)/agenttest

$(BUILD)/libevaluator.a: $(EVAL_CORE_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(BINDIR)/agenttest: $(CLI_OBJS) $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) -Wl,--start-group $(LIBS) -Wl,--end-group $(LDLIBS)

# The job runner (evaluator/runner/: queue, job kinds, the sandbox drivers in
# drive/, check service, dataset cache, market fetcher): everything but
# main.c goes into librunner.a so tests/unit/runner/ links the same code.
RUNNER_SRCS := $(filter-out %/main.c,$(shell find evaluator/runner -name '*.c' 2>/dev/null | sort))
RUNNER_OBJS := $(call objs_of,$(RUNNER_SRCS))
RUNNER_MAIN := $(BUILD)/evaluator/runner/main.o
ALL_OBJS    += $(RUNNER_OBJS) $(RUNNER_MAIN)
LIBS        := $(BUILD)/librunner.a $(LIBS)
BINS        += $(BINDIR)/agenttest-runner

$(BUILD)/librunner.a: $(RUNNER_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(BINDIR)/agenttest-runner: $(RUNNER_MAIN) $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(RUNNER_MAIN) \
	  -Wl,--start-group $(LIBS) -Wl,--end-group $(LDLIBS) -lpthread

# libagenttest_eval.so: libevaluator's sources (plus common/) in a shared
# library for the Python SDK and the tests (ctypes). Compiled apart with
# -fvisibility=hidden so that only functions marked with a visibility("default")
# attribute (CH_API in evaluator/challenges/challenges.h) are exported. The
# exporting objects are linked whole; everything else comes from an archive,
# so only what they use is pulled in (and -z defs proves it resolves).
EVAL_SHLIB       := $(BUILD)/libagenttest_eval.so
EVAL_SHLIB_ROOTS := $(patsubst %.c,$(BUILD)/shlib/%.o,$(filter evaluator/challenges/%,$(EVAL_CORE_SRCS)))
EVAL_SHLIB_REST  := $(patsubst %.c,$(BUILD)/shlib/%.o,$(filter-out evaluator/challenges/%,$(EVAL_CORE_SRCS)) $(call component_srcs,common))
ALL_OBJS         += $(EVAL_SHLIB_ROOTS) $(EVAL_SHLIB_REST)
BINS             += $(EVAL_SHLIB)

$(BUILD)/shlib/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fvisibility=hidden -MMD -MP -c $< -o $@

$(BUILD)/shlib/libeval_rest.a: $(EVAL_SHLIB_REST)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(EVAL_SHLIB): $(EVAL_SHLIB_ROOTS) $(BUILD)/shlib/libeval_rest.a
	@mkdir -p $(@D)
	$(CC) -shared $(OPT) $(HARDEN_LDFLAGS) -Wl,-z,defs -o $@ $(EVAL_SHLIB_ROOTS) \
	  -Wl,--start-group $(BUILD)/shlib/libeval_rest.a -Wl,--end-group $(LDLIBS)

# The egress proxy of LLM agents (evaluator/runner/egress/, docs/agents.md):
# its files but main.c are in librunner.a; the in-box relay
# (egress/relay/main.c) is a static, dependency-free program that runs
# inside the agent's sandbox.
EGRESS_MAIN := $(BUILD)/evaluator/runner/egress/main.o
RELAY_MAIN  := $(BUILD)/evaluator/runner/egress/relay/main.o
ALL_OBJS    += $(EGRESS_MAIN) $(RELAY_MAIN)
BINS        += $(BINDIR)/agenttest-egress $(BINDIR)/agenttest-relay

$(BINDIR)/agenttest-egress: $(EGRESS_MAIN) $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(EGRESS_MAIN) -Wl,--start-group $(LIBS) -Wl,--end-group $(LDLIBS)

$(BINDIR)/agenttest-relay: $(RELAY_MAIN)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(RELAY_MAIN)
