/*
 * test_agent_check.c - the agent's checks before a card changes (src/agent/
 * check.c): a created instance must sit at a placement the card lists for
 * its profile, the target (kept plus created) must not overlap, destroyed
 * instances free their slices, an unknown profile is refused; a pending
 * MIG mode change is reported. Geometry of an H100 (3g.40gb at 0:4 or 4:4,
 * 1g.10gb at any of 0..6).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/internal.h"
#include "helpers.h"

/* GPU 0 holding 3g.40gb (GI 1) at 0:4 and 1g.10gb (GI 13) at 6:1. */
static void h100(struct inv_gpu *g)
{
    memset(g, 0, sizeof *g);
    g->mig_current = g->mig_pending = 1;
    g->nprof = 2;
    g->prof[0] = (struct inv_profile){.id = 9, .name = "3g.40gb", .slices = 3, .npl = 2};
    g->prof[0].pl[0] = (struct inv_placement){0, 4};
    g->prof[0].pl[1] = (struct inv_placement){4, 4};
    g->prof[1] = (struct inv_profile){.id = 19, .name = "1g.10gb", .slices = 1, .npl = 7};
    for (int i = 0; i < 7; i++)
        g->prof[1].pl[i] = (struct inv_placement){i, 1};
    g->ngi = 2;
    g->gi[0] = (struct inv_gi){.id = 1, .profile_id = 9, .profile = "3g.40gb", .pl = {0, 4}};
    g->gi[1] = (struct inv_gi){.id = 13, .profile_id = 19, .profile = "1g.10gb", .pl = {6, 1}};
}

static void create(struct reconf_diff *d, int profile_id, const char *name, int start, int size)
{
    struct reconf_step *s = &d->step[d->nstep++];
    memset(s, 0, sizeof *s);
    s->kind = RECONF_CREATE;
    s->profile_id = profile_id;
    snprintf(s->profile, sizeof s->profile, "%s", name);
    s->pl = (struct inv_placement){start, size};
}

static void destroy(struct reconf_diff *d, int gi_id)
{
    struct reconf_step *s = &d->step[d->nstep++];
    memset(s, 0, sizeof *s);
    s->kind = RECONF_DESTROY;
    s->gi_id = gi_id;
}

static ts_status check(const struct inv_gpu *g, const struct reconf_diff *d, char *msg)
{
    struct ts_error e = {0};
    ts_status st = agent__check_change(g, d, &e);
    snprintf(msg, TS_MSG_MAX, "%s", e.msg);
    return st;
}

static void test_placements(void **state)
{
    (void)state;
    struct inv_gpu *g = calloc(1, sizeof *g);
    struct reconf_diff *d = calloc(1, sizeof *d);
    char msg[TS_MSG_MAX];
    h100(g);
    /* a 1g.10gb in the free slice 4: fine */
    create(d, 19, "1g.10gb", 4, 1);
    assert_int_equal(check(g, d, msg), TS_OK);
    /* 3g.40gb at slice 2 is not one of the card's placements */
    memset(d, 0, sizeof *d);
    destroy(d, 1);
    create(d, 9, "3g.40gb", 2, 4);
    assert_int_equal(check(g, d, msg), TS_INVALID);
    assert_string_equal(msg, "GPU 0 cannot hold 3g.40gb at 2:4: its placements for 3g.40gb "
                             "are 0:4, 4:4; nothing was changed");
    /* a profile the card does not offer */
    memset(d, 0, sizeof *d);
    create(d, 15, "1g.20gb", 4, 2);
    assert_int_equal(check(g, d, msg), TS_INVALID);
    assert_string_equal(msg, "GPU 0 offers no profile 1g.20gb (ID 15)");
    free(g);
    free(d);
}

static void test_overlaps(void **state)
{
    (void)state;
    struct inv_gpu *g = calloc(1, sizeof *g);
    struct reconf_diff *d = calloc(1, sizeof *d);
    char msg[TS_MSG_MAX];
    h100(g);
    /* slice 3 belongs to the kept 3g.40gb at 0:4 */
    create(d, 19, "1g.10gb", 3, 1);
    assert_int_equal(check(g, d, msg), TS_INVALID);
    assert_string_equal(msg, "GPU 0: 1g.10gb at 3:1 would overlap 3g.40gb at 0:4 (kept); "
                             "nothing was changed");
    /* ... unless the 3g.40gb is destroyed first */
    memset(d, 0, sizeof *d);
    destroy(d, 1);
    create(d, 19, "1g.10gb", 3, 1);
    assert_int_equal(check(g, d, msg), TS_OK);
    /* two created instances on the same slice */
    memset(d, 0, sizeof *d);
    create(d, 19, "1g.10gb", 5, 1);
    create(d, 19, "1g.10gb", 5, 1);
    assert_int_equal(check(g, d, msg), TS_INVALID);
    assert_string_equal(msg, "GPU 0: 1g.10gb at 5:1 would overlap 1g.10gb at 5:1 (also created); "
                             "nothing was changed");
    /* 3g.40gb at 4:4 over the kept 1g.10gb at 6:1 */
    memset(d, 0, sizeof *d);
    create(d, 9, "3g.40gb", 4, 4);
    assert_int_equal(check(g, d, msg), TS_INVALID);
    assert_non_null(strstr(msg, "3g.40gb at 4:4 would overlap 1g.10gb at 6:1 (kept)"));
    free(g);
    free(d);
}

static void test_mode_pending(void **state)
{
    (void)state;
    struct inv_gpu *g = calloc(1, sizeof *g);
    char why[TS_MSG_MAX];
    h100(g);
    assert_int_equal(agent__mode_pending(g, why, sizeof why), 0);
    g->mig_pending = 0;
    assert_int_equal(agent__mode_pending(g, why, sizeof why), 1);
    assert_non_null(strstr(why, "MIG mode change pending (current enabled, pending disabled)"));
    g->mig_current = 0;
    g->mig_pending = 1;
    assert_int_equal(agent__mode_pending(g, why, sizeof why), 1);
    assert_non_null(strstr(why, "(current disabled, pending enabled)"));
    free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placements),
        cmocka_unit_test(test_overlaps),
        cmocka_unit_test(test_mode_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
