/*
 * sm.c - the SM share side of the enforcement (enforce.c): judged over a
 * window (--sm-window-ms) from NVML's per-process samples. Not judged yet:
 * see docs/agent.md, "Enforcement".
 */
#include "agent/internal.h"

void agent__sm_round(struct agent_watch *w, struct agent__round *r)
{
    (void)w;
    r->sm_judged = 0;
}
