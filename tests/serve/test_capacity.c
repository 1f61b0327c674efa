/*
 * test_capacity.c - the request bodies' budget (serve/capacity.c) shared
 * fairly: an address outside --reserve-for holds at most
 * SERVE_BODIES_PER_CLIENT, all of them together at most what
 * SERVE_BODIES_RESERVED leaves, while a --reserve-for address may fill the
 * rest; what is given back can be taken again, by anyone; without
 * --reserve-for nothing is kept; and the minimum body rate.
 */
#include "helpers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include "serve/internal.h"

#define MIB ((size_t)1 << 20)

static struct serve_metrics metrics;

static void init(const char *reserve)
{
    const char *nets[] = {reserve};
    struct serve_options o = {.reserve_for = nets, .nreserve_for = reserve ? 1 : 0};
    struct ts_error e = {0};
    memset(&metrics, 0, sizeof(metrics));
    assert_int_equal(serve_capacity_init(&o, &metrics, &e), TS_OK);
}

static struct serve_client client(const char *ip)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, ip, &sa.sin_addr), 1);
    struct serve_client c;
    serve_client_of((const struct sockaddr *)&sa, &c);
    return c;
}

static void test_share_per_address(void **state)
{
    (void)state;
    init("10.0.0.1/32");
    struct serve_client a = client("192.0.2.1"), b = client("192.0.2.2");
    assert_int_equal(SERVE_BODIES_PER_CLIENT, 7 * MIB);
    assert_true(serve_body_take(&a, 6 * MIB));
    assert_false(serve_body_take(&a, 2 * MIB)); /* 8 MiB: over its share */
    assert_true(serve_body_take(&a, 1 * MIB));  /* exactly its share */
    assert_false(serve_body_take(&a, 1));
    assert_true(serve_body_take(&b, 7 * MIB)); /* another address has its own */
    assert_int_equal(atomic_load(&metrics.bodies_refused), 2);
    serve_body_give(&a, 6 * MIB);
    assert_true(serve_body_take(&a, 6 * MIB)); /* given back, taken again */
    serve_body_give(&a, 7 * MIB);
    serve_body_give(&b, 7 * MIB);
}

static void test_reserved_part(void **state)
{
    (void)state;
    init("10.0.0.0/24");
    struct serve_client api = client("10.0.0.7");
    assert_true(api.reserved);
    const char *ips[] = {"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5"};
    struct serve_client c[5];
    for (int i = 0; i < 5; i++)
        c[i] = client(ips[i]);
    for (int i = 0; i < 3; i++)
        assert_true(serve_body_take(&c[i], 7 * MIB)); /* 21 MiB */
    assert_true(serve_body_take(&c[3], 4 * MIB));     /* 25 MiB: the general part */
    assert_false(serve_body_take(&c[4], 1));          /* the rest is the API server's */
    assert_true(serve_body_take(&api, 7 * MIB));      /* one maximal review */
    assert_false(serve_body_take(&api, 1));           /* the whole budget */
    serve_body_give(&api, 7 * MIB);
    assert_true(serve_body_take(&api, 5 * MIB));
    assert_true(serve_body_take(&api, 2 * MIB)); /* not held to a share */
    serve_body_give(&c[0], 7 * MIB);
    assert_true(serve_body_take(&c[4], 7 * MIB)); /* what one gave back */
    serve_body_give(&api, 7 * MIB);
    for (int i = 1; i < 5; i++)
        serve_body_give(&c[i], i == 3 ? 4 * MIB : 7 * MIB);
}

static void test_nothing_reserved(void **state)
{
    (void)state;
    init(NULL);
    const char *ips[] = {"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5"};
    struct serve_client c[5];
    for (int i = 0; i < 5; i++) {
        c[i] = client(ips[i]);
        assert_false(c[i].reserved);
    }
    for (int i = 0; i < 4; i++)
        assert_true(serve_body_take(&c[i], 7 * MIB));
    assert_true(serve_body_take(&c[4], 4 * MIB)); /* 32 MiB: the whole budget */
    assert_false(serve_body_take(&c[4], 1));
    for (int i = 0; i < 5; i++)
        serve_body_give(&c[i], i == 4 ? 4 * MIB : 7 * MIB);
}

static void test_rate(void **state)
{
    (void)state;
    assert_false(serve_body_too_slow(0.9, 0));      /* the first second is free */
    assert_true(serve_body_too_slow(1.0, 1));       /* a byte a second */
    assert_false(serve_body_too_slow(1.0, 65536));  /* 64 KiB/s */
    assert_true(serve_body_too_slow(4.0, 200000));  /* 49 KiB/s */
    assert_false(serve_body_too_slow(4.0, 300000)); /* 73 KiB/s */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_share_per_address),
        cmocka_unit_test(test_reserved_part),
        cmocka_unit_test(test_nothing_reserved),
        cmocka_unit_test(test_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
