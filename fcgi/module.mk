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

# The runs handlers (issue 5) use the evaluator (hashes, canonical JSON) and
# from librunner.a only the wake-up datagram (notify.c) and the check
# service's wire format (check_wire.c): the submission check is asked of the
# runner. The pool never starts a sandbox, so libsandbox.a is not linked at
# all (an accidental sbx_* reference fails the link).
FCGI_EXTRA_LIBS := $(BUILD)/librunner.a $(BUILD)/libevaluator.a

$(BINDIR)/agenttest-fcgi: $(FCGI_MAIN) $(BUILD)/libfcgi.a $(BUILD)/libcommon.a $(FCGI_EXTRA_LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(FCGI_MAIN) -Wl,--start-group $(BUILD)/libfcgi.a $(FCGI_EXTRA_LIBS) \
	  $(BUILD)/libcommon.a -Wl,--end-group $(LDLIBS)
