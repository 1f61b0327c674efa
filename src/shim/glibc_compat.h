/*
 * glibc_compat.h - binds the shim's references to the oldest glibc symbol
 * versions, so that libtessera-cuda.so built on a new glibc still loads into
 * tenant images with glibc 2.28 (Debian 10, UBI 8) to 2.33.
 *
 * Why: the static linker binds each reference to the default version of the
 * glibc it links against. glibc 2.34 merged libdl and libpthread into libc and
 * gave the moved functions a new default version (dlopen@@GLIBC_2.34,
 * pthread_create@@GLIBC_2.34, ...); in an image with an older glibc, every
 * program the shim is preloaded into then fails to start ("version
 * `GLIBC_2.34' not found"). Each name below is bound with .symver to the
 * version it had on the architecture's first glibc (x86-64: GLIBC_2.2.5, arm64:
 * GLIBC_2.17), which every later glibc still exports. On glibc < 2.34 those
 * live in libdl.so.2 and libpthread.so.0, which the shim therefore names as
 * dependencies (tessera_glibc_compat in src/shim/CMakeLists.txt, which also
 * forces this header into every source with -include).
 *
 * A .symver for a name a file does not use adds nothing. Names that became
 * new symbols rather than new versions cannot be bound: stat and fstat exist
 * only since 2.33 (before, they were inline wrappers of __xstat), so the shim
 * uses lseek and readlink instead. tests/cli/shim_glibc.sh fails when the
 * built shim needs any glibc version above 2.28 and preloads it into an old
 * Debian root. dlsym is not listed: the shim defines its own.
 */
#ifndef SHIM_GLIBC_COMPAT_H
#define SHIM_GLIBC_COMPAT_H

#include <features.h>

#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))

#if defined(__x86_64__)
#define SHIM_GLIBC_BASE "GLIBC_2.2.5"
#else
#define SHIM_GLIBC_BASE "GLIBC_2.17"
#endif

/* Functions of libdl and libpthread that took a new default version when
 * they moved into libc (2.32: pthread_sigmask, 2.34: the others), and exp,
 * whose default became GLIBC_2.29 (the stand-in driver the tests load into
 * the old root uses it). */
/* one symbol a line: clang-format does not settle on a layout for this macro */
/* clang-format off */
#define SHIM_GLIBC_OLDEST(X) \
    X(dlopen) \
    X(dlclose) \
    X(dlerror) \
    X(dladdr) \
    X(dlinfo) \
    X(dlvsym) \
    X(pthread_create) \
    X(pthread_once) \
    X(pthread_join) \
    X(pthread_detach) \
    X(pthread_kill) \
    X(pthread_sigmask) \
    X(pthread_key_create) \
    X(pthread_key_delete) \
    X(pthread_getspecific) \
    X(pthread_setspecific) \
    X(pthread_mutex_trylock) \
    X(pthread_mutexattr_init) \
    X(pthread_mutexattr_settype) \
    X(pthread_mutexattr_destroy) \
    X(pthread_attr_setstacksize) \
    X(sem_init) \
    X(sem_destroy) \
    X(sem_post) \
    X(sem_wait) \
    X(sem_trywait) \
    X(sem_timedwait) \
    X(exp)
/* clang-format on */

#define SHIM_GLIBC_BIND(name) __asm__(".symver " #name "," #name "@" SHIM_GLIBC_BASE);
SHIM_GLIBC_OLDEST(SHIM_GLIBC_BIND)
#undef SHIM_GLIBC_BIND

#endif
#endif
