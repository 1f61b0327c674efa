/*
 * test_text.c - util/text.h: which bytes are valid UTF-8 (each rule of
 * RFC 3629: overlong forms, surrogates, beyond U+10FFFF, cut sequences) and
 * what each output escapes, with the expected strings written out by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "util/text.h"

static void test_utf8(void **state)
{
    (void)state;
    assert_int_equal(ts_utf8_seq("a"), 1);
    assert_int_equal(ts_utf8_seq("\xc3\xa9"), 2);         /* e acute */
    assert_int_equal(ts_utf8_seq("\xe2\x82\xac"), 3);     /* euro sign */
    assert_int_equal(ts_utf8_seq("\xf0\x9f\x98\x80"), 4); /* U+1F600 */
    assert_int_equal(ts_utf8_seq("\xc0\xaf"), 0);         /* overlong '/' */
    assert_int_equal(ts_utf8_seq("\xe0\x80\xaf"), 0);     /* overlong, 3 bytes */
    assert_int_equal(ts_utf8_seq("\xed\xa0\x80"), 0);     /* surrogate U+D800 */
    assert_int_equal(ts_utf8_seq("\xf4\x90\x80\x80"), 0); /* U+110000 */
    assert_int_equal(ts_utf8_seq("\xe2\x82"), 0);         /* cut short */
    assert_int_equal(ts_utf8_seq("\x80"), 0);             /* stray continuation */
    assert_int_equal(ts_utf8_seq("\xff"), 0);
    assert_true(ts_utf8_valid("h100 \xe2\x82\xac"));
    assert_false(ts_utf8_valid("ok\xff"));
}

static void expect(void (*fn)(struct ts_sbuf *, const char *), const char *in, const char *want)
{
    struct ts_sbuf b;
    ts_sbuf_init(&b, 4096);
    fn(&b, in);
    assert_string_equal(ts_sbuf_str(&b), want);
    ts_sbuf_release(&b);
}

static void test_plain(void **state)
{
    (void)state;
    expect(ts_text_plain, "a\nb", "a\\x0ab");
    expect(ts_text_plain, "\x1b[31m", "\\x1b[31m");
    expect(ts_text_plain,
           "\xc2\x9b"
           "2J",
           "\\xc2\\x9b2J"); /* C1 CSI */
    expect(ts_text_plain, "x\xff\xc3\xa9\x7f", "x\\xff\xc3\xa9\\x7f");
    expect(ts_text_plain, "tab\there", "tab\\x09here");
}

static void test_html(void **state)
{
    (void)state;
    expect(ts_text_html, "<img src=x onerror=\"a('b')\">&",
           "&lt;img src=x onerror=&quot;a(&#39;b&#39;)&quot;&gt;&amp;");
    expect(ts_text_html, "\xff<", "\\xff&lt;");
}

static void test_csv(void **state)
{
    (void)state;
    expect(ts_text_csv, "plain", "plain");
    expect(ts_text_csv, "a,b", "\"a,b\"");
    expect(ts_text_csv, "say \"hi\"", "\"say \"\"hi\"\"\"");
    expect(ts_text_csv, "=1+1", "\"'=1+1\"");
    expect(ts_text_csv, "+1", "\"'+1\"");
    expect(ts_text_csv, "-2", "\"'-2\"");
    expect(ts_text_csv, "@SUM(A1)", "\"'@SUM(A1)\"");
    expect(ts_text_csv, "\t=x", "\"'\\x09=x\"");
    expect(ts_text_csv, "a\r\nb", "\"a\\x0d\\x0ab\"");
    expect(ts_text_csv, "1-2", "1-2"); /* a dash inside is no formula */
}

static void test_pad_json(void **state)
{
    (void)state;
    struct ts_sbuf b;
    ts_sbuf_init(&b, 64);
    ts_text_pad(&b, "a\n", 6);
    assert_string_equal(ts_sbuf_str(&b), "a\\x0a ");
    ts_sbuf_release(&b);
    json_t *j = ts_text_json("m\xff\n");
    assert_non_null(j);
    assert_string_equal(json_string_value(j), "m\\xff\n");
    json_decref(j);
    j = ts_text_json("\xc3\xa9");
    assert_string_equal(json_string_value(j), "\xc3\xa9");
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8), cmocka_unit_test(test_plain),    cmocka_unit_test(test_html),
        cmocka_unit_test(test_csv),  cmocka_unit_test(test_pad_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
