/*
 * Protocol codec and pipe I/O (evaluator/runner/drive/protocol.c): a table of malformed
 * frames that must be rejected before any payload is trusted, deadlines,
 * stderr draining, large frames through real pipes, several frames in one
 * write and the read-ahead that may hold the next frame.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <stdlib.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <cmocka.h>

#include "evaluator/runner/drive/protocol.h"
#include "xalloc.h"

struct malformed {
	const char *name;
	uint8_t     hdr[PROTO_HEADER_LEN];
	enum proto_status want;
};

static void test_header_roundtrip(void **s)
{
	(void)s;
	uint8_t h[PROTO_HEADER_LEN];
	struct proto_hdr d;
	proto_header_encode(h, PROTO_OUTPUT, 12, 800);
	assert_memory_equal(h, "ATP1\x83\x00\x00\x00\x0c\x00\x00\x00\x20\x03\x00\x00", 16);
	assert_int_equal(proto_header_decode(h, &d, 100, 800), PROTO_OK);
	assert_int_equal(d.type, PROTO_OUTPUT);
	assert_int_equal(d.meta_len, 12);
	assert_int_equal(d.body_len, 800);
}

static void test_malformed_headers(void **s)
{
	(void)s;
	static const struct malformed table[] = {
		{ "bad magic", "ATP2\x83\0\0\0\0\0\0\0\0\0\0\0", PROTO_MALFORMED },
		{ "zero magic", "\0\0\0\0\x83\0\0\0\0\0\0\0\0\0\0\0", PROTO_MALFORMED },
		{ "flags set", "ATP1\x83\0\x01\0\0\0\0\0\0\0\0\0", PROTO_MALFORMED },
		{ "request type from host", "ATP1\x01\0\0\0\0\0\0\0\0\0\0\0", PROTO_MALFORMED },
		{ "type above 0xff", "ATP1\x83\x01\0\0\0\0\0\0\0\0\0\0", PROTO_MALFORMED },
		{ "meta over cap", "ATP1\x8f\0\0\0\x01\0\x01\0\0\0\0\0", PROTO_TOO_BIG },
		{ "meta 4 GiB", "ATP1\x8f\0\0\0\xff\xff\xff\xff\0\0\0\0", PROTO_TOO_BIG },
		{ "body over cap", "ATP1\x83\0\0\0\0\0\0\0\x09\0\0\0", PROTO_TOO_BIG },
		{ "body 4 GiB", "ATP1\x83\0\0\0\0\0\0\0\xff\xff\xff\xff", PROTO_TOO_BIG },
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		struct proto_hdr d;
		enum proto_status st = proto_header_decode(table[i].hdr, &d, 65536, 8);
		if (st != table[i].want)
			fail_msg("%s: got %s want %s", table[i].name, proto_status_str(st),
				 proto_status_str(table[i].want));
	}
}

/* A connection reading from the read end of a pipe we write raw bytes to. */
struct fake {
	int to_us[2];  /* "host stdout" */
	int from_us[2];/* "host stdin" */
	int log[2];    /* "host stderr" */
	struct proto_conn c;
};

static void fake_open(struct fake *f, double timeout)
{
	assert_int_equal(pipe(f->to_us), 0);
	assert_int_equal(pipe(f->from_us), 0);
	assert_int_equal(pipe(f->log), 0);
	proto_conn_init(&f->c, f->from_us[1], f->to_us[0], f->log[0], timeout > 0 ? proto_now() + timeout : 0);
}

static void fake_close(struct fake *f)
{
	for (int i = 0; i < 2; i++) {
		if (f->to_us[i] >= 0)
			close(f->to_us[i]);
		if (f->from_us[i] >= 0)
			close(f->from_us[i]);
		if (f->log[i] >= 0)
			close(f->log[i]);   /* ours, even after the conn saw its end */
	}
	proto_conn_free(&f->c);
}

/* Write raw bytes as the host, then close its stdout. */
static enum proto_status recv_raw(const void *raw, size_t n, uint32_t body_cap, struct proto_hdr *h)
{
	struct fake f;
	fake_open(&f, 2.0);
	assert_int_equal(write(f.to_us[1], raw, n), (ssize_t)n);
	close(f.to_us[1]);
	f.to_us[1] = -1;
	struct buf meta = BUF_INIT;
	double body[4];
	enum proto_status st = proto_recv(&f.c, h, &meta, body, PROTO_MAX_META_IN, body_cap);
	buf_free(&meta);
	fake_close(&f);
	return st;
}

static void test_malformed_streams(void **s)
{
	(void)s;
	struct proto_hdr h;
	/* truncated header */
	assert_int_equal(recv_raw("ATP1\x83", 5, 32, &h), PROTO_EOF);
	/* nothing at all */
	assert_int_equal(recv_raw("", 0, 32, &h), PROTO_EOF);
	/* truncated meta */
	assert_int_equal(recv_raw("ATP1\x83\0\0\0\x05\0\0\0\0\0\0\0{\"a\"", 20, 32, &h), PROTO_EOF);
	/* truncated body: 16 bytes announced, 8 sent */
	uint8_t fr[40];
	proto_header_encode(fr, PROTO_OUTPUT, 0, 16);
	memset(fr + 16, 0, 8);
	assert_int_equal(recv_raw(fr, 24, 32, &h), PROTO_EOF);
	/* wrong count: 3 values where the request allows 2 */
	proto_header_encode(fr, PROTO_OUTPUT, 0, 24);
	memset(fr + 16, 0, 24);
	assert_int_equal(recv_raw(fr, 40, 16, &h), PROTO_TOO_BIG);
	assert_int_equal(h.body_len, 24);
	/* a good frame */
	uint8_t ok[16 + 2 + 16];
	proto_header_encode(ok, PROTO_OUTPUT, 2, 16);
	memcpy(ok + 16, "{}", 2);
	double v[2] = { 1.0, 2.5 };
	memcpy(ok + 18, v, 16);
	assert_int_equal(recv_raw(ok, sizeof ok, 16, &h), PROTO_OK);
	assert_int_equal(h.body_len, 16);
}

static void test_timeout_and_log(void **s)
{
	(void)s;
	struct fake f;
	fake_open(&f, 0.2);
	assert_int_equal(write(f.log[1], "Traceback: boom\n", 16), 16);
	struct buf meta = BUF_INIT;
	struct proto_hdr h;
	double t = proto_now();
	assert_int_equal(proto_recv(&f.c, &h, &meta, NULL, PROTO_MAX_META_IN, 0), PROTO_TIMEOUT);
	assert_true(proto_now() - t >= 0.19);
	assert_string_equal(buf_cstr(&f.c.log), "Traceback: boom\n");
	buf_free(&meta);
	fake_close(&f);
}

static void test_log_tail_is_bounded(void **s)
{
	(void)s;
	struct fake f;
	fake_open(&f, 0);
	char chunk[4096];
	memset(chunk, 'x', sizeof chunk);
	for (int i = 0; i < 15; i++) /* 60 KiB, under the pipe buffer */
		assert_int_equal(write(f.log[1], chunk, sizeof chunk), (ssize_t)sizeof chunk);
	chunk[0] = 'E';
	assert_int_equal(write(f.log[1], chunk, 1), 1);
	close(f.log[1]);
	f.log[1] = -1;
	proto_drain_log(&f.c, 1.0);
	assert_true(f.c.log.len <= 2 * PROTO_LOG_TAIL);
	assert_int_equal(f.c.log_total, 15 * 4096 + 1);
	assert_int_equal(f.c.log.data[f.c.log.len - 1], 'E');
	assert_int_equal(f.c.logfd, -1);
	/* the end of the log stops the watch but leaves the descriptor to its
	 * owner (sbx_finish closes a host's): a second close there could hit
	 * another thread's pipe that had taken the number meanwhile */
	assert_true(fcntl(f.log[0], F_GETFD) >= 0);
	fake_close(&f);
}

static void test_send_to_dead_host(void **s)
{
	(void)s;
	signal(SIGPIPE, SIG_IGN);
	struct fake f;
	fake_open(&f, 1.0);
	close(f.from_us[0]);
	f.from_us[0] = -1;
	assert_int_equal(proto_send(&f.c, PROTO_RUN, "{}", 2, NULL, 0), PROTO_EOF);
	assert_int_equal(proto_send(&f.c, PROTO_RUN, NULL, PROTO_MAX_META_OUT + 1, NULL, 0), PROTO_TOO_BIG);
	fake_close(&f);
}

struct writer {
	int     fd;
	double *v;
	size_t  n;
};

/* Thread: write one OUTPUT frame of w->n doubles to w->fd, in pieces. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint8_t h[PROTO_HEADER_LEN];
	proto_header_encode(h, PROTO_OUTPUT, 0, (uint32_t)(w->n * 8));
	if (write(w->fd, h, sizeof h) != (ssize_t)sizeof h)
		return NULL;
	const char *p = (const char *)w->v;
	size_t left = w->n * 8;
	while (left) {
		ssize_t k = write(w->fd, p, left > 100000 ? 100000 : left);
		if (k <= 0)
			break;
		p += k;
		left -= (size_t)k;
	}
	return NULL;
}

static void big_frame(size_t n)
{
	struct fake f;
	fake_open(&f, 30.0);
	struct writer w = { .fd = f.to_us[1], .v = xcalloc(n, sizeof(double)), .n = n };
	for (size_t i = 0; i < n; i++)
		w.v[i] = 1.0 + (double)i * 1e-6;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
	double *got = xcalloc(n, sizeof(double));
	struct buf meta = BUF_INIT;
	struct proto_hdr h;
	assert_int_equal(proto_recv(&f.c, &h, &meta, got, PROTO_MAX_META_IN, (uint32_t)(n * 8)), PROTO_OK);
	pthread_join(th, NULL);
	assert_memory_equal(got, w.v, n * 8);
	free(got);
	free(w.v);
	buf_free(&meta);
	fake_close(&f);
}

static void test_big_frames(void **s)
{
	(void)s;
	big_frame(10000);
	big_frame(1000000);
}

struct reader {
	int     fd;
	struct buf got;
};

/* Thread: read fd to EOF into r->got. */
static void *reader_main(void *arg)
{
	struct reader *r = arg;
	char tmp[65536];
	ssize_t k;
	while ((k = read(r->fd, tmp, sizeof tmp)) > 0)
		buf_append(&r->got, tmp, (size_t)k);
	return NULL;
}

/* proto_sendv writes exactly the bytes of one proto_send per frame, in
 * order, also when the first frame is larger than the pipe (partial
 * writes across the frame boundary), and refuses more than its maximum. */
static void test_sendv_is_the_frames_in_order(void **s)
{
	(void)s;
	size_t n = 300000;   /* 2.4 MB: many partial writes on a 64 KiB pipe */
	double *v = xcalloc(n, sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = 100.0 + (double)i / 7.0;
	struct fake f;
	fake_open(&f, 30.0);
	struct reader r = { .fd = f.from_us[0], .got = BUF_INIT };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, reader_main, &r), 0);
	static const char dmeta[] = "{\"bars\":300000}", rmeta[] = "{\"bars\":300000,\"params\":{}}";
	struct proto_frame fr[2] = {
		{ PROTO_DATA, dmeta, sizeof dmeta - 1, v, n * 8 },
		{ PROTO_RUN, rmeta, sizeof rmeta - 1, NULL, 0 },
	};
	assert_int_equal(proto_sendv(&f.c, fr, 2), PROTO_OK);
	close(f.from_us[1]);
	f.from_us[1] = -1;
	pthread_join(th, NULL);
	/* the expected bytes: each frame encoded on its own */
	struct buf want = BUF_INIT;
	for (int i = 0; i < 2; i++) {
		uint8_t h[PROTO_HEADER_LEN];
		proto_header_encode(h, fr[i].type, (uint32_t)fr[i].meta_len, (uint32_t)fr[i].body_len);
		buf_append(&want, h, sizeof h);
		buf_append(&want, fr[i].meta, fr[i].meta_len);
		if (fr[i].body_len)
			buf_append(&want, fr[i].body, fr[i].body_len);
	}
	assert_int_equal(r.got.len, want.len);
	assert_memory_equal(r.got.data, want.data, want.len);
	struct proto_frame many[PROTO_SENDV_MAX + 1];
	memset(many, 0, sizeof many);
	assert_int_equal(proto_sendv(&f.c, many, PROTO_SENDV_MAX + 1), PROTO_TOO_BIG);
	buf_free(&want);
	buf_free(&r.got);
	free(v);
	fake_close(&f);
}

/* Two replies written at once: the first proto_recv reads ahead, keeps
 * the second frame for the next call and says so (proto_buffered). */
static void test_read_ahead_keeps_the_next_frame(void **s)
{
	(void)s;
	uint8_t raw[2 * (16 + 2 + 16)];
	double a[2] = { 1.0, 2.5 }, b[2] = { -3.0, 4.25 };
	proto_header_encode(raw, PROTO_OUTPUT, 2, 16);
	memcpy(raw + 16, "{}", 2);
	memcpy(raw + 18, a, 16);
	proto_header_encode(raw + 34, PROTO_OUTPUT, 2, 16);
	memcpy(raw + 50, "{}", 2);
	memcpy(raw + 52, b, 16);
	struct fake f;
	fake_open(&f, 2.0);
	assert_int_equal(write(f.to_us[1], raw, sizeof raw), (ssize_t)sizeof raw);
	struct buf meta = BUF_INIT;
	struct proto_hdr h;
	double got[2];
	assert_int_equal(proto_buffered(&f.c), 0);
	assert_int_equal(proto_recv(&f.c, &h, &meta, got, PROTO_MAX_META_IN, 16), PROTO_OK);
	assert_memory_equal(got, a, 16);
	assert_int_equal(proto_buffered(&f.c), 34);
	assert_int_equal(proto_recv(&f.c, &h, &meta, got, PROTO_MAX_META_IN, 16), PROTO_OK);
	assert_memory_equal(got, b, 16);
	assert_int_equal(proto_buffered(&f.c), 0);
	close(f.to_us[1]);
	f.to_us[1] = -1;
	assert_int_equal(proto_recv(&f.c, &h, &meta, got, PROTO_MAX_META_IN, 16), PROTO_EOF);
	buf_free(&meta);
	fake_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_roundtrip),
		cmocka_unit_test(test_malformed_headers),
		cmocka_unit_test(test_malformed_streams),
		cmocka_unit_test(test_timeout_and_log),
		cmocka_unit_test(test_log_tail_is_bounded),
		cmocka_unit_test(test_send_to_dead_host),
		cmocka_unit_test(test_big_frames),
		cmocka_unit_test(test_sendv_is_the_frames_in_order),
		cmocka_unit_test(test_read_ahead_keeps_the_next_frame),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
