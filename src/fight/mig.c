/*
 * mig.c - MIG device UUIDs from `nvidia-smi -L` (see fight.h), so the MIG
 * phase can give each tenant its own instance with CUDA_VISIBLE_DEVICES.
 * Both UUID forms are taken: "MIG-<uuid>" (R470 and later) and the older
 * "MIG-GPU-<uuid>/<gi>/<ci>"; a UUID is the text after "(UUID: " on a line
 * that starts (after blanks) with "MIG ", up to ')'.
 */
#include "fight/fight.h"

#include <string.h>

/* Copy the UUID of one line into out; 1 when the line names a MIG device. */
static int line_uuid(const char *line, size_t len, char out[FIGHT_UUID_MAX])
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (len - i < 4 || memcmp(line + i, "MIG ", 4) != 0)
        return 0;
    static const char key[] = "(UUID: ";
    for (; i + sizeof(key) - 1 <= len; i++) {
        if (memcmp(line + i, key, sizeof(key) - 1) != 0)
            continue;
        size_t start = i + sizeof(key) - 1, end = start;
        while (end < len && line[end] != ')' && line[end] != ' ')
            end++;
        if (end == len || line[end] != ')' || end - start < 5 ||
            end - start >= FIGHT_UUID_MAX || memcmp(line + start, "MIG-", 4) != 0)
            return 0;
        memcpy(out, line + start, end - start);
        out[end - start] = '\0';
        return 1;
    }
    return 0;
}

size_t fight_mig_parse(const char *text, char uuids[][FIGHT_UUID_MAX], size_t max)
{
    size_t n = 0;
    while (*text && n < max) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) : strlen(text);
        if (line_uuid(text, len, uuids[n]))
            n++;
        text += len + (nl ? 1 : 0);
    }
    return n;
}
