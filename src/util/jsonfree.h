/*
 * jsonfree.h - freeing what jansson's json_dumps returned with the free
 * function jansson allocated it with (the webhook gives jansson its own
 * allocator; libc free on such text would be wrong).
 */
#ifndef TS_JSONFREE_H
#define TS_JSONFREE_H

#include <jansson.h>

static inline void json_free_text(char *text)
{
    json_free_t release = NULL;
    json_get_alloc_funcs(NULL, &release);
    if (text && release)
        release(text);
}

#endif
