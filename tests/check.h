/*
 * check.h - CHECK for the test programs that are not cmocka tests (the
 * stand-in's and the shim's probes, one source file each): a failed
 * condition prints "FAIL: file:line: message" and counts in failures, which
 * the program turns into its exit status.
 */
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                 \
    do {                                                 \
        if (!(cond)) {                                   \
            printf("FAIL: %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                         \
            printf("\n");                                \
            failures++;                                  \
        }                                                \
    } while (0)

#endif
