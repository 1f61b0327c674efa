/*
 * resolve.c - how the shim finds the real driver and how applications find
 * the shim, whichever way they reach the driver:
 *   1. direct symbols: the application (or libcudart) calls cuMemAlloc_v2;
 *      being preloaded, our definition wins the symbol lookup;
 *   2. dlsym(handle, "cuMemAlloc_v2"): we interpose dlsym itself, ask the
 *      real one (found with dlvsym(RTLD_NEXT, "dlsym", <glibc version>)) and
 *      hand out our definition when the answer is a real function we hook;
 *   3. cuGetProcAddress / _v2 (libcudart since CUDA 12): same translation on
 *      the pointer the real driver returns, so the driver's own choice of
 *      version (cuMemAlloc at 12000 -> cuMemAlloc_v2, _ptsz variants) holds.
 * The real functions are resolved once under pthread_once from
 * libcuda.so.1 (RTLD_NOLOAD first, then a normal dlopen). A hook whose real
 * function is missing returns an error, never calls through NULL.
 * dlsym(RTLD_NEXT, ...) goes untouched to the real dlsym with the caller's
 * return address (a few lines of assembly below, x86-64 and arm64).
 */
#include "shim/shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Code that runs inside the real dlsym's callers, possibly before a
 * sanitizer runtime is initialised: never instrumented. */
#define SHIM_RAW __attribute__((no_sanitize("address", "undefined", "thread")))

typedef void *(*dlsym_fn)(void *, const char *);

static dlsym_fn real_dlsym;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void *driver;
static void *real[SHIM_HOOK_COUNT];
static struct shim_config config;
static _Thread_local int in_init;

#define SHIM_HOOK(name) #name,
static const char *const names[SHIM_HOOK_COUNT] = {
#include "shim/hooks.def"
};
#undef SHIM_HOOK
#define SHIM_HOOK(name) (void *)&name,
static void *const ours[SHIM_HOOK_COUNT] = {
#include "shim/hooks.def"
};
#undef SHIM_HOOK

void shim__log(const char *fmt, ...)
{
    char buf[512];
    int n = snprintf(buf, sizeof(buf), "tessera-cuda: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(buf) - 2)
        len = sizeof(buf) - 2;
    buf[len++] = '\n';
    ssize_t w = write(2, buf, len);
    (void)w;
}

uint64_t shim__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The real dlsym. No pthread_once here: a sanitizer runtime asks dlsym for
 * its own interceptors (pthread_once among them) before it is set up, so
 * this path uses a plain atomic; two threads racing find the same answer. */
SHIM_RAW static dlsym_fn find_real_dlsym(void)
{
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"};
    dlsym_fn fn = __atomic_load_n(&real_dlsym, __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]) && !fn; i++)
        fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    __atomic_store_n(&real_dlsym, fn, __ATOMIC_RELEASE);
    return fn;
}

static int needs_region(const struct shim_config *c)
{
    return !c->fail_closed && (c->limited || c->sm_percent < 100);
}

static void init(void)
{
    in_init = 1;
    find_real_dlsym();
    shim__config_load(&config);
    driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!driver)
        driver = dlopen("libcuda.so.1", RTLD_LAZY);
    for (int i = 0; i < SHIM_HOOK_COUNT && driver && real_dlsym; i++)
        real[i] = real_dlsym(driver, names[i]);
    if (needs_region(&config) && shim__region_open(config.region, config.memory_bytes) != 0)
        config.fail_closed = 1;
    if (!config.fail_closed && config.sm_percent < 100 && driver)
        shim__sm_init(config.sm_percent);
    if (!config.fail_closed && config.limited && config.backstop != SHIM_BACKSTOP_OFF && driver)
        shim__backstop_init(&config);
    in_init = 0;
}

void *shim__real(enum shim_hook_id id)
{
    pthread_once(&init_once, init);
    return real[id];
}

const struct shim_config *shim__config(void)
{
    pthread_once(&init_once, init);
    return &config;
}

void *shim__driver_sym(const char *name)
{
    return driver && real_dlsym ? real_dlsym(driver, name) : NULL;
}

void *shim__translate(void *p)
{
    if (!p || in_init)
        return p;
    pthread_once(&init_once, init);
    for (int i = 0; i < SHIM_HOOK_COUNT; i++)
        if (real[i] == p)
            return ours[i];
    return p;
}

/* The hook named name, or -1. No lock, no allocation. */
SHIM_RAW static int hook_named(const char *name)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < SHIM_HOOK_COUNT; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* Our definition for a real function p found under name: by name first
 * (the driver may hand out another address than its exported symbol),
 * then by address. */
static void *ours_for(const char *name, void *p)
{
    int i = hook_named(name);
    if (!p || in_init)
        return p;
    return i >= 0 ? ours[i] : shim__translate(p);
}

/* dlsym for every handle but RTLD_NEXT: the real answer, translated. */
SHIM_RAW __attribute__((used)) void *shim__dlsym(void *handle, const char *name)
{
    dlsym_fn fn = find_real_dlsym();
    void *p = fn ? fn(handle, name) : NULL;
    if (p && name[0] == 'c' && name[1] == 'u')
        p = ours_for(name, p);
    return p;
}

SHIM_RAW __attribute__((used)) void *shim__real_dlsym(void) { return (void *)find_real_dlsym(); }

/* dlsym(RTLD_NEXT, name) for a name the shim hooks: our definition when
 * the driver has the function (whoever asks, a library loaded after the
 * shim must not reach the driver uncharged); NULL for every other name,
 * which then goes to the real dlsym with the caller's return address. */
SHIM_RAW __attribute__((used)) void *shim__next_hook(const char *name)
{
    int i = hook_named(name);
    if (i < 0 || in_init)
        return NULL;
    pthread_once(&init_once, init);
    return real[i] ? ours[i] : NULL;
}

/* dlsym itself. RTLD_NEXT means "after the object that called dlsym", and
 * the real dlsym finds its caller from its return address, so for
 * RTLD_NEXT the entry point jumps to the real dlsym with the caller's
 * return address untouched (a C wrapper would make the shim the caller, and
 * a library after the shim asking RTLD_NEXT for its own wrapped function,
 * as sanitizer runtimes do, would get itself back). Other handles go to
 * shim__dlsym. */
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "    cmpq $-1, %rdi\n"
        "    jne shim__dlsym\n"
        "    pushq %rdi\n"
        "    pushq %rsi\n"
        "    subq $8, %rsp\n"
        "    movq %rsi, %rdi\n"
        "    call shim__next_hook\n"
        "    testq %rax, %rax\n"
        "    jnz 2f\n"
        "    call shim__real_dlsym\n"
        "    addq $8, %rsp\n"
        "    popq %rsi\n"
        "    popq %rdi\n"
        "    testq %rax, %rax\n"
        "    jz 1f\n"
        "    jmp *%rax\n"
        "1:  ret\n"
        "2:  addq $24, %rsp\n"
        "    ret\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        "dlsym:\n"
        "    cmn x0, #1\n"
        "    b.ne shim__dlsym\n"
        "    stp x29, x30, [sp, #-32]!\n"
        "    stp x0, x1, [sp, #16]\n"
        "    mov x0, x1\n"
        "    bl shim__next_hook\n"
        "    cbnz x0, 2f\n"
        "    bl shim__real_dlsym\n"
        "    mov x16, x0\n"
        "    ldp x0, x1, [sp, #16]\n"
        "    ldp x29, x30, [sp], #32\n"
        "    cbz x16, 1f\n"
        "    br x16\n"
        "1:  mov x0, #0\n"
        "    ret\n"
        "2:  ldp x29, x30, [sp], #32\n"
        "    ret\n"
        ".size dlsym, .-dlsym\n");
#else
/* Elsewhere RTLD_NEXT is answered as if the shim had asked (documented). */
SHIM_EXPORT void *dlsym(void *handle, const char *name) { return shim__dlsym(handle, name); }
#endif

/* The versioned entry points among the hooks: "cuX" names cuX<suffix> from
 * version `since` on (cudaTypedefs.h's PFN_cuX_v<version> names), the
 * newest first; the legacy cuX below the oldest. */
static const struct {
    const char *base;
    int since;
    const char *suffix;
} versioned[] = {
    {"cuCtxCreate", 12050, "_v4"},
    {"cuCtxCreate", 11040, "_v3"},
    {"cuCtxCreate", 3020, "_v2"},
    {"cuMemAlloc", 3020, "_v2"},
    {"cuMemAllocPitch", 3020, "_v2"},
    {"cuMemFree", 3020, "_v2"},
    {"cuArrayCreate", 3020, "_v2"},
    {"cuArray3DCreate", 3020, "_v2"},
    {"cuMemGetInfo", 3020, "_v2"},
    {"cuDeviceTotalMem", 3020, "_v2"},
    {"cuGetProcAddress", 12000, "_v2"},
    {"cuIpcOpenMemHandle", 11000, "_v2"},
    {"cuCtxDestroy", 4000, "_v2"},
    {"cuDevicePrimaryCtxRelease", 11000, "_v2"},
    /* cuda.h: #define cuGraphInstantiate cuGraphInstantiateWithFlags (12.0) */
    {"cuGraphInstantiate", 12000, "WithFlags"},
    {"cuGraphInstantiate", 11000, "_v2"},
};

/* The hook the driver means by (symbol, version, flags), or -1. */
static int hook_for(const char *symbol, int version, cuuint64_t flags)
{
    char want[96];
    size_t n = strlen(symbol);
    int i = -1;
    if (n + 16 > sizeof(want)) /* room for the longest suffix */
        return -1;
    memcpy(want, symbol, n + 1);
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
        memcpy(want + n, "_ptsz", 6);
        if ((i = hook_named(want)) >= 0)
            return i;
        want[n] = '\0';
    }
    for (size_t k = 0; k < sizeof(versioned) / sizeof(versioned[0]); k++)
        if (strcmp(symbol, versioned[k].base) == 0 && version >= versioned[k].since) {
            memcpy(want + n, versioned[k].suffix, strlen(versioned[k].suffix) + 1);
            break;
        }
    return hook_named(want);
}

/* What cuGetProcAddress(_v2) hands out for p: ours by name and version,
 * else by address, else p. */
static void *proc_result(const char *symbol, void *p, int version, cuuint64_t flags)
{
    int i = symbol && p ? hook_for(symbol, version, flags) : -1;
    if (i >= 0 && real[i])
        return ours[i];
    return shim__translate(p);
}

SHIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                      cuuint64_t flags)
{
    __typeof__(&cuGetProcAddress) fn = SHIM_REAL(cuGetProcAddress);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = proc_result(symbol, *pfn, cudaVersion, flags);
    return r;
}

SHIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *symbolStatus)
{
    __typeof__(&cuGetProcAddress_v2) fn = SHIM_REAL(cuGetProcAddress_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = proc_result(symbol, *pfn, cudaVersion, flags);
    return r;
}
