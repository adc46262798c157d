# fcgi/: the FastCGI application. Every .c but main.c goes into libfcgi.a
# (router, pipeline, auth, JSON, metrics, pool, handlers), so the unit tests
# and the fuzzer link the code the binary runs.
FCGI_OBJS := $(call objs_of,$(call component_srcs,fcgi))
FCGI_MAIN := $(BUILD)/fcgi/main.o
ALL_OBJS  += $(FCGI_OBJS) $(FCGI_MAIN)
LIBS      += $(BUILD)/libfcgi.a
BINS      += $(BINDIR)/agenttest-fcgi

$(BUILD)/libfcgi.a: $(FCGI_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

$(BINDIR)/agenttest-fcgi: $(FCGI_MAIN) $(BUILD)/libfcgi.a $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(FCGI_MAIN) $(BUILD)/libfcgi.a $(BUILD)/libcommon.a $(LDLIBS)
