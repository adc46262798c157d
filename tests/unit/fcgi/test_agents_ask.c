/*
 * test_agents_ask.c: the pure parts of POST /api/agents/{id}/ask
 * (fcgi/handlers/agents_ask.c, included to reach its statics): which
 * budget is named as used up, the model ids, the request body, the parse
 * of an answer (text blocks joined, usage read, priced by the built-in
 * table, bit-exact), the depth limit on an answer, and the cut of an
 * upstream message on a UTF-8 boundary. The handler itself is tested on a
 * real stack (tests/e2e/test_agents_ask.py).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fcgi/handlers/agents_ask.c"

static void test_left_names_the_first_budget_used_up(void **state)
{
	(void)state;
	char why[160] = "";
	struct ask_budget lim = { .tokens = 100, .requests = 2, .usd = 1.0 };
	struct ask_budget room = { .tokens = 99, .requests = 1, .usd = 0.5 };
	ask_left(&lim, &room, "agent", why, sizeof why);
	assert_string_equal(why, "");
	struct ask_budget all = { .tokens = 100, .requests = 2, .usd = 1.0 };
	ask_left(&lim, &all, "agent", why, sizeof why);
	assert_string_equal(why, "agent requests: 2 of 2 used");
	ask_left(&lim, &all, "owner daily", why, sizeof why);   /* the first one named stays */
	assert_string_equal(why, "agent requests: 2 of 2 used");
	why[0] = '\0';
	struct ask_budget tok = { .tokens = 150, .requests = 0, .usd = 2.0 };
	ask_left(&lim, &tok, "owner daily", why, sizeof why);
	assert_string_equal(why, "owner daily tokens: 150 of 100 used");
	why[0] = '\0';
	struct ask_budget usd = { .tokens = 0, .requests = 0, .usd = 1.0 };
	ask_left(&lim, &usd, "agent", why, sizeof why);
	assert_string_equal(why, "agent usd: 1.000000 of 1.000000 used");
}

static void test_model_ids(void **state)
{
	(void)state;
	assert_string_equal(ask_model_id("sonnet"), "claude-sonnet-4-5");
	assert_string_equal(ask_model_id("opus"), "claude-opus-4-5");
	assert_string_equal(ask_model_id("haiku"), "claude-haiku-4-5");
}

static void test_body_is_a_plain_messages_request(void **state)
{
	(void)state;
	char *b = ask_body("claude-haiku-4-5", "ctx \"quoted\"", "why?\n");
	json_object *o = json_tokener_parse(b), *v;
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "model", &v));
	assert_string_equal(json_object_get_string(v), "claude-haiku-4-5");
	assert_true(json_object_object_get_ex(o, "max_tokens", &v));
	assert_int_equal(json_object_get_int(v), ASK_MAX_TOKENS);
	assert_true(json_object_object_get_ex(o, "system", &v));
	assert_string_equal(json_object_get_string(v), "ctx \"quoted\"");
	assert_false(json_object_object_get_ex(o, "stream", &v));
	assert_true(json_object_object_get_ex(o, "messages", &v));
	assert_int_equal(json_object_array_length(v), 1);
	json_object *m = json_object_array_get_idx(v, 0), *f;
	assert_true(json_object_object_get_ex(m, "role", &f));
	assert_string_equal(json_object_get_string(f), "user");
	assert_true(json_object_object_get_ex(m, "content", &f));
	assert_string_equal(json_object_get_string(f), "why?\n");
	json_object_put(o);
	free(b);
}

/* An answer body as a buf, parsed. */
static json_object *parse(const char *s)
{
	struct buf b = BUF_INIT;
	buf_puts(&b, s);
	json_object *o = ask_parse(&b);
	buf_free(&b);
	return o;
}

static void test_answer_text_usage_and_price(void **state)
{
	(void)state;
	struct llm_prices p;
	llm_prices_default(&p);
	json_object *o = parse("{\"type\":\"message\",\"model\":\"claude-sonnet-4-5-20250929\",\"content\":["
			       "{\"type\":\"text\",\"text\":\"first\"},{\"type\":\"tool_use\",\"name\":\"x\",\"input\":{}},"
			       "{\"type\":\"text\",\"text\":\"second\"}],\"usage\":{\"input_tokens\":1234,\"output_tokens\":56,"
			       "\"cache_creation_input_tokens\":1000,\"cache_read_input_tokens\":2000}}");
	assert_non_null(o);
	struct ask_usage u = { 0 };
	struct buf text = BUF_INIT;
	ask_answer(o, &p, "claude-sonnet-4-5", &u, &text);
	assert_string_equal(buf_cstr(&text), "first\n\nsecond");
	assert_int_equal(u.input, 1234);
	assert_int_equal(u.output, 56);
	assert_int_equal(u.cache_write, 1000);
	assert_int_equal(u.cache_read, 2000);
	/* (1234*3 + 56*15 + 1000*3.75 + 2000*0.3) / 1e6: every partial sum is exact */
	assert_true(u.usd == 8892.0 / 1e6);
	json_object_put(o);
	buf_free(&text);

	/* an answer naming a model the table lacks is priced as the model asked for */
	o = parse("{\"model\":\"mystery\",\"content\":[],\"usage\":{\"input_tokens\":1000000,\"output_tokens\":-5}}");
	memset(&u, 0, sizeof u);
	ask_answer(o, &p, "claude-haiku-4-5", &u, &text);
	assert_string_equal(buf_cstr(&text), "");
	assert_int_equal(u.output, 0);   /* a negative count is no count */
	assert_true(u.usd == 1.0);
	json_object_put(o);
	buf_free(&text);
	llm_prices_free(&p);
}

static void test_parse_refuses_non_objects_and_deep_nesting(void **state)
{
	(void)state;
	assert_null(parse("[1,2]"));
	assert_null(parse("{\"a\":"));
	assert_null(parse(""));
	char deep[41];
	memset(deep, '[', 40);
	deep[40] = '\0';
	assert_null(parse(deep));
	json_object *o = parse("{\"a\":1}");
	assert_non_null(o);
	json_object_put(o);
}

static void test_cut_keeps_whole_characters(void **state)
{
	(void)state;
	char out[6];
	ask_cut("abc", out, sizeof out);
	assert_string_equal(out, "abc");
	ask_cut("abcdefgh", out, sizeof out);
	assert_string_equal(out, "abcde");
	ask_cut("abcd\xc3\xa9z", out, sizeof out);   /* é would be split at byte 5: cut before it */
	assert_string_equal(out, "abcd");
	ask_cut("ab\xe2\x82\xac" "cd", out, sizeof out);   /* € fits in bytes 2..4 */
	assert_string_equal(out, "ab\xe2\x82\xac");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_left_names_the_first_budget_used_up),
		cmocka_unit_test(test_model_ids),
		cmocka_unit_test(test_body_is_a_plain_messages_request),
		cmocka_unit_test(test_answer_text_usage_and_price),
		cmocka_unit_test(test_parse_refuses_non_objects_and_deep_nesting),
		cmocka_unit_test(test_cut_keeps_whole_characters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
