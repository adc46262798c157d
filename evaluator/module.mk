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
	$(AR) rcs $@ $^

$(BINDIR)/agenttest: $(CLI_OBJS) $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) -Wl,--start-group $(LIBS) -Wl,--end-group $(LDLIBS)
