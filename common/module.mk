# common/: code shared by the FastCGI pool, the CLI and the runner
# (allocation, buffers, logging, configuration, database access, tokens).
COMMON_OBJS := $(call objs_of,$(call component_srcs,common))
ALL_OBJS    += $(COMMON_OBJS)
LIBS        += $(BUILD)/libcommon.a

$(BUILD)/libcommon.a: $(COMMON_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^
