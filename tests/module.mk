# Unit tests: tests/unit/<component>/test_*.c, one cmocka binary each, linked
# against every component library (order-independent thanks to --start-group).
UNIT_SRCS  := $(shell find tests/unit -name 'test_*.c' 2>/dev/null | sort)
UNIT_TESTS := $(patsubst %.c,$(BUILD)/%,$(UNIT_SRCS))
UNIT_LIB_SRCS := $(filter-out $(UNIT_SRCS),$(shell find tests/unit -name '*.c' 2>/dev/null | sort))
UNIT_LIB_OBJS := $(call objs_of,$(UNIT_LIB_SRCS))
ALL_OBJS   += $(UNIT_SRCS:%.c=$(BUILD)/%.o) $(UNIT_LIB_OBJS)

$(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(UNIT_LIB_OBJS) $(LIBS)
	$(CC) $(LDFLAGS) -o $@ $< $(UNIT_LIB_OBJS) -Wl,--start-group $(LIBS) -Wl,--end-group $(LDLIBS) -lcmocka

unit-tests: $(UNIT_TESTS)
