# sandbox/: the client library (libsandbox.a: sbx_* API, supervision,
# cgroups, confinement steps, seccomp policy) and the agenttest-sandbox
# helper. sandbox/host/ is Python (the strategy host) and is not compiled.
SBX_SRCS     := $(call component_srcs,sandbox)
SBX_OBJS     := $(call objs_of,$(SBX_SRCS))
SBX_MAIN_OBJS := $(call objs_of,sandbox/main.c)
ALL_OBJS     += $(SBX_OBJS) $(SBX_MAIN_OBJS)
LIBS         := $(BUILD)/libsandbox.a $(LIBS)
BINS         += $(BINDIR)/agenttest-sandbox

$(BUILD)/libsandbox.a: $(SBX_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

# The helper runs as root: it links only what it needs.
$(BINDIR)/agenttest-sandbox: $(SBX_MAIN_OBJS) $(BUILD)/libsandbox.a $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(SBX_MAIN_OBJS) $(BUILD)/libsandbox.a $(BUILD)/libcommon.a $(LDLIBS)

# The C half of the Python zygote (sandbox/zygote/zygote.py loads it with
# ctypes); it links the same confinement objects as the helper.
BINS += $(BINDIR)/agenttest-zygote.so
$(BINDIR)/agenttest-zygote.so: $(BUILD)/sandbox/zygote_so.o $(BUILD)/libsandbox.a $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS:-pie=) -o $@ $(BUILD)/sandbox/zygote_so.o $(BUILD)/libsandbox.a $(BUILD)/libcommon.a -lseccomp -lsodium -lm

# The escape corpus driver (tests/sandbox/): the real sbx_* API end to end.
SBX_DRIVE := $(BUILD)/tests/sandbox/sbx-drive
ALL_OBJS  += $(BUILD)/tests/sandbox/sbx_drive.o
$(SBX_DRIVE): $(BUILD)/tests/sandbox/sbx_drive.o $(BUILD)/libsandbox.a $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/libsandbox.a $(BUILD)/libcommon.a $(LDLIBS)
sandbox-tests: $(SBX_DRIVE) $(BINDIR)/agenttest-sandbox $(BINDIR)/agenttest-zygote.so
.PHONY: sandbox-tests
# A static program for the helper's verdict table (OK, RE, SG, TO, ML, SY, OL).
$(BUILD)/tests/sandbox/verdict_prog: tests/sandbox/verdict_prog.c
	@mkdir -p $(@D)
	$(CC) -static -O2 -o $@ $<
sandbox-tests: $(BUILD)/tests/sandbox/verdict_prog
