/*
 * fuzz_promq.c - libFuzzer target for the reader of Prometheus' raw-sample
 * answers (meter/promq.h: a range vector's matrix), read once with the
 * window of the seeds (1700000000 to 1700000060 s: the window checks, the
 * previous window's last ms left out) and once with any time. Invariants
 * (abort when broken): an answer taken gives text the exposition parser
 * reads without one error, one sample per line, every time inside the
 * window and each series' times rising, the answer merged with itself twice
 * the lines; an answer refused says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "meter/expo.h"
#include "meter/promq.h"

static int on_sample(void *ctx, const struct meter_sample *s)
{
    (void)s;
    ++*(long *)ctx;
    return 0;
}

static void on_error(void *ctx, long line, int column, const char *msg)
{
    (void)ctx;
    (void)line;
    (void)column;
    (void)msg;
    abort(); /* a line promq made that the parser refuses */
}

static const struct meter_promq_window WINDOW = {1700000000000LL, 1700000060000LL};

/* Every line's timestamp (its last field) inside w. */
static void check_times(const struct ts_sbuf *out, const struct meter_promq_window *w)
{
    for (size_t i = 0, start = 0; w && i < out->len; i++) {
        if (out->data[i] != '\n')
            continue;
        size_t sp = i;
        while (sp > start && out->data[sp - 1] != ' ')
            sp--;
        long long ts = strtoll(out->data + sp, NULL, 10);
        if (ts < w->from_ms || ts > w->to_ms)
            abort();
        start = i + 1;
    }
}

static ts_status count_lines(void *ctx, const char *text, size_t len, struct ts_error *err)
{
    (void)err;
    for (size_t i = 0; i < len; i++)
        *(long *)ctx += text[i] == '\n';
    return TS_OK;
}

/* The answer merged with itself (two selectors' answers): twice the lines. */
static void twice(const char *data, size_t size, const struct meter_promq_window *w, long lines)
{
    struct meter_promq_answer *ans = NULL;
    struct ts_error e = {0};
    if (meter_promq_parse(data, size, "fuzz", w, &ans, &e) != TS_OK)
        abort(); /* meter_promq_text took it */
    struct meter_promq_answer *both[2] = {ans, ans};
    long n = 0;
    if (meter_promq_emit(both, 2, count_lines, &n, &e) != TS_OK || n != 2 * lines)
        abort();
    meter_promq_answer_free(ans);
}

static void one(const uint8_t *data, size_t size, const struct meter_promq_window *w)
{
    struct ts_sbuf out;
    struct ts_error e = {0};
    ts_sbuf_init(&out, 1 << 24);
    ts_status st = meter_promq_text((const char *)data, size, "fuzz", w, &out, &e);
    if (st != TS_OK && !e.msg[0])
        abort();
    if (st == TS_OK && out.len) {
        long samples = 0, lines = 0;
        for (size_t i = 0; i < out.len; i++)
            lines += out.data[i] == '\n';
        struct meter_expo *p = meter_expo_new(on_sample, on_error, &samples);
        if (p) {
            meter_expo_feed(p, out.data, out.len);
            meter_expo_finish(p);
            meter_expo_free(p);
            if (samples != lines)
                abort();
        }
        check_times(&out, w);
        twice((const char *)data, size, w, lines);
    }
    ts_sbuf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size, &WINDOW);
    one(data, size, NULL);
    return 0;
}
