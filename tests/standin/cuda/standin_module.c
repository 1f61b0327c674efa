/*
 * standin_module.c - the stand-in driver's modules and libraries (test
 * code): cuModuleLoad, cuModuleLoadData, cuModuleLoadDataEx,
 * cuModuleLoadFatBinary, cuLibraryLoadData and cuLibraryLoadFromFile take
 * the card's memory for the image's code and __device__ globals at load,
 * as the real driver does, and cuModuleUnload / cuLibraryUnload give it
 * back. Which memory an image takes is read from the stand-in's own module
 * image format (standin.h: STANDIN_MODULE_MAGIC); any other image (PTX, a
 * cubin, the fight harness's kernels) loads and takes nothing.
 */
#include "standin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODULE_MAGIC 0x4d4f4431u  /* "MOD1" */
#define LIBRARY_MAGIC 0x4c494231u /* "LIB1" */
#define IMAGE_FILE_MAX (1u << 20)

struct CUmod_st {
    uint32_t magic;
    uint64_t bytes; /* taken from the card at load */
};
struct CUlib_st {
    uint32_t magic;
    uint64_t bytes;
};

/* One "global NAME BYTES" or "code BYTES" line's bytes into *sum; -1 when
 * the line is neither or the sum would overflow. */
static int image_line(const char *s, uint64_t *sum)
{
    char name[64];
    unsigned long long v;
    int used = 0;
    if (sscanf(s, "global %63s %llu%n", name, &v, &used) != 2 &&
        sscanf(s, "code %llu%n", &v, &used) != 1)
        return -1;
    if (s[used] != '\0' && s[used] != '\n')
        return -1;
    if (v > UINT64_MAX - *sum)
        return -1;
    *sum += v;
    return 0;
}

uint64_t standin_image_bytes(const void *image, int *bad)
{
    const char *s = image;
    uint64_t sum = 0;
    size_t k = strlen(STANDIN_MODULE_MAGIC);
    *bad = 0;
    if (strncmp(s, STANDIN_MODULE_MAGIC, k) != 0 || s[k] != '\n')
        return 0; /* not ours: code the stand-in does not model */
    for (s += k + 1; *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : s + strlen(s)) {
        if (*s == '\n' || *s == '#')
            continue;
        if (image_line(s, &sum) != 0) {
            *bad = 1;
            return 0;
        }
    }
    return sum;
}

/* The bytes of an image the card must hold: CUDA_SUCCESS with *n, else
 * CUDA_ERROR_INVALID_IMAGE or out of memory (nothing taken). */
static CUresult take_image(const void *image, uint64_t *n)
{
    int bad;
    *n = standin_image_bytes(image, &bad);
    if (bad)
        return CUDA_ERROR_INVALID_IMAGE;
    if (*n && standin_take_mem(*n) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    uint64_t n;
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = take_image(image, &n);
    if (r != CUDA_SUCCESS)
        return r;
    *module = calloc(1, sizeof(struct CUmod_st));
    if (!*module) {
        standin_give_mem(n);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    (*module)->magic = MODULE_MAGIC;
    (*module)->bytes = n;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                   CUjit_option *options, void **optionValues)
{
    (void)numOptions, (void)options, (void)optionValues;
    return cuModuleLoadData(module, image);
}

EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    return cuModuleLoadData(module, fatCubin);
}

/* A file's bytes, NUL-terminated (caller frees); NULL when unreadable. */
static char *read_image(const char *path)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    char *buf = f ? malloc(IMAGE_FILE_MAX + 1) : NULL;
    size_t n = buf ? fread(buf, 1, IMAGE_FILE_MAX, f) : 0;
    if (f)
        fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    if (!module || !fname)
        return CUDA_ERROR_INVALID_VALUE;
    char *image = read_image(fname);
    if (!image)
        return CUDA_ERROR_FILE_NOT_FOUND;
    CUresult r = cuModuleLoadData(module, image);
    free(image);
    return r;
}

EXPORT CUresult cuModuleUnload(CUmodule module)
{
    if (!module || module->magic != MODULE_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    module->magic = 0;
    standin_give_mem(module->bytes);
    free(module);
    return CUDA_SUCCESS;
}

/* ---- libraries (context-independent loading, one context here) ----------- */

EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                  void **jitOptionsValues, unsigned int numJitOptions,
                                  CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                  unsigned int numLibraryOptions)
{
    (void)jitOptions, (void)jitOptionsValues, (void)numJitOptions;
    (void)libraryOptions, (void)libraryOptionValues, (void)numLibraryOptions;
    uint64_t n;
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = take_image(code, &n);
    if (r != CUDA_SUCCESS)
        return r;
    *library = calloc(1, sizeof(struct CUlib_st));
    if (!*library) {
        standin_give_mem(n);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    (*library)->magic = LIBRARY_MAGIC;
    (*library)->bytes = n;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                      CUjit_option *jitOptions, void **jitOptionsValues,
                                      unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                      void **libraryOptionValues, unsigned int numLibraryOptions)
{
    if (!library || !fileName)
        return CUDA_ERROR_INVALID_VALUE;
    char *image = read_image(fileName);
    if (!image)
        return CUDA_ERROR_FILE_NOT_FOUND;
    CUresult r = cuLibraryLoadData(library, image, jitOptions, jitOptionsValues, numJitOptions,
                                   libraryOptions, libraryOptionValues, numLibraryOptions);
    free(image);
    return r;
}

EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    if (!library || library->magic != LIBRARY_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    library->magic = 0;
    standin_give_mem(library->bytes);
    free(library);
    return CUDA_SUCCESS;
}
