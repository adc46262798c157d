# sandbox/: the client library (libsandbox.a: sbx_* API, supervision,
# cgroups, confinement steps, seccomp policy) and the agenttest-sandbox
# helper. sandbox/host/ is Python (the strategy host) and is not compiled.
SBX_SRCS     := $(call component_srcs,sandbox)
SBX_OBJS     := $(call objs_of,$(SBX_SRCS))
SBX_MAIN_OBJS := $(call objs_of,sandbox/main.c)
ALL_OBJS     += $(SBX_OBJS) $(SBX_MAIN_OBJS)
LIBS         := $(BUILD)/libsandbox.a $(LIBS)
ifneq ($(wildcard sandbox/main.c),)
BINS         += $(BINDIR)/agenttest-sandbox
endif

$(BUILD)/libsandbox.a: $(SBX_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

$(BINDIR)/agenttest-sandbox: $(SBX_MAIN_OBJS) $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(SBX_MAIN_OBJS) -Wl,--start-group $(LIBS) -Wl,--end-group $(LDLIBS)
