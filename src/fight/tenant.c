/*
 * tenant.c - one tenant process and its latency pipe (see internal.h):
 * fork, the pipe's write end left open in the child and named by
 * TESSERA_FIGHT_FD, exec of the worker or of `/bin/sh -c CMD`; then
 * non-blocking reads fed to the line reader, and a stop that drains the
 * pipe and reaps the child (SIGKILL when SIGTERM is not enough).
 */
#include "fight/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "util/time.h"

/* In the child: never returns. */
static void child(int wfd, char *const argv[], const char *cmd, char *const env[])
{
    char num[16];
    snprintf(num, sizeof(num), "%d", wfd);
    setenv("TESSERA_FIGHT_FD", num, 1);
    for (size_t i = 0; env && env[i]; i++)
        putenv(env[i]);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    signal(SIGPIPE, SIG_DFL);
    if (cmd)
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    else
        execv(argv[0], argv);
    fprintf(stderr, "tessera: fight: cannot run '%s': %s\n", cmd ? "/bin/sh" : argv[0],
            strerror(errno));
    _exit(127);
}

ts_status fight__tenant_start(struct fight_tenant *t, const char *name, char *const argv[],
                              const char *cmd, char *const env[], struct ts_error *err)
{
    memset(t, 0, sizeof(*t));
    t->fd = -1;
    t->pid = -1;
    fight_reader_init(&t->rd, name, &t->s);
    int p[2];
    if (pipe(p) != 0)
        return ts_err(err, TS_IO, "%s: pipe: %s", name, strerror(errno));
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return ts_err(err, TS_IO, "%s: fork: %s", name, strerror(errno));
    }
    if (pid == 0) {
        close(p[0]);
        child(p[1], argv, cmd, env);
    }
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    t->pid = pid;
    t->fd = p[0];
    return TS_OK;
}

ts_status fight__tenant_pump(struct fight_tenant *t, struct ts_error *err)
{
    char buf[4096];
    while (t->fd >= 0) {
        ssize_t n = read(t->fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return TS_OK;
        if (n <= 0) {
            close(t->fd);
            t->fd = -1;
            return n == 0 ? fight_reader_finish(&t->rd, err)
                          : ts_err(err, TS_IO, "%s: read: %s", t->rd.name, strerror(errno));
        }
        ts_status st = fight_reader_feed(&t->rd, buf, (size_t)n, err);
        if (st != TS_OK)
            return st;
    }
    return TS_OK;
}

static int reap(struct fight_tenant *t, int wait_ms)
{
    for (int waited = 0; !t->reaped; waited += 10) {
        pid_t r = waitpid(t->pid, &t->status, WNOHANG);
        if (r == t->pid || (r < 0 && errno == ECHILD))
            t->reaped = 1;
        else if (waited >= wait_ms)
            return 0;
        else
            poll(NULL, 0, 10);
    }
    return 1;
}

void fight__tenant_stop(struct fight_tenant *t, int sig)
{
    if (t->pid <= 0)
        return;
    if (sig && !t->reaped)
        kill(t->pid, sig);
    double until = ts_clock_msf(CLOCK_MONOTONIC) + 3000;
    while (t->fd >= 0 && ts_clock_msf(CLOCK_MONOTONIC) < until) {
        struct pollfd pfd = {t->fd, POLLIN, 0};
        poll(&pfd, 1, 50);
        if (fight__tenant_pump(t, NULL) != TS_OK)
            break;
    }
    if (!reap(t, 3000)) {
        kill(t->pid, SIGKILL);
        reap(t, 5000);
    }
}

void fight__tenant_release(struct fight_tenant *t)
{
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    fight_series_release(&t->s);
}
