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
	rm -f $@ && $(AR) rcs $@ $^

# The handlers use the evaluator (hashes, canonical JSON, engine config) and
# common/ (which holds the contract shared with the runner: the wake-up
# datagram notify.h, the check service's wire format check_wire.h, uuid.h).
# No runner and no sandbox code is linked: the pool never starts a sandbox,
# so an accidental rdb_*/job_*/sbx_* reference fails the link, and
# `make boundaries` (run by stage 05-lint) refuses a runner or sandbox
# header included from fcgi/ and librunner.a/libsandbox.a on this link line.
FCGI_EXTRA_LIBS := $(BUILD)/libevaluator.a

$(BINDIR)/agenttest-fcgi: $(FCGI_MAIN) $(BUILD)/libfcgi.a $(BUILD)/libcommon.a $(FCGI_EXTRA_LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(FCGI_MAIN) -Wl,--start-group $(BUILD)/libfcgi.a $(FCGI_EXTRA_LIBS) \
	  $(BUILD)/libcommon.a -Wl,--end-group $(LDLIBS)
