/*
 * kube.c - the enforcement's `evict` (act.c): a small Kubernetes API client
 * over libcurl, answers read with jansson.
 *
 * Where the API is: --kube-api URL, else in-cluster, the way client-go's
 * rest.InClusterConfig finds it: https://$KUBERNETES_SERVICE_HOST:
 * $KUBERNETES_SERVICE_PORT, the service account's token and the cluster's
 * CA from /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}
 * (--kube-token-file, --kube-ca-file replace them). The token is read again
 * for each eviction: a bound token is rotated by the kubelet in its file.
 *
 * An eviction is two requests:
 *   GET  /api/v1/pods?fieldSelector=spec.nodeName=NODE, asked as metadata
 *        only (PartialObjectMetadataList; a server that cannot answers the
 *        plain PodList): the pod whose metadata.uid is the cgroup's;
 *   POST /api/v1/namespaces/NS/pods/NAME/eviction, a policy/v1 Eviction
 *        with the UID as precondition (a pod of the same name made since is
 *        never the one evicted).
 * 200 or 201 is evicted; 429 is the API refusing because a
 * PodDisruptionBudget allows no disruption now (-2); anything else fails
 * (-1). act.c then kills the processes, counts and logs why.
 *
 * Bounded, as the answers are untrusted: HTTPS only, the peer's certificate
 * and host name always verified (CAINFO the CA file), no redirects, each
 * request AGENT_KUBE_CONNECT_MS to connect and AGENT_KUBE_TIMEOUT_MS in
 * all, an answer at most AGENT_KUBE_BODY_MAX bytes (more is refused), a
 * token at most AGENT_KUBE_TOKEN_MAX bytes of visible ASCII, the namespace
 * and name used in the path only when they are DNS names. The round waits
 * for the requests: at most twice the timeout.
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/internal.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define MESSAGE_MAX 200 /* bytes of the API's Status message quoted */
#define NAME_MAX_LEN 253

struct agent__kube {
    CURL *h;
    char errbuf[CURL_ERROR_SIZE];
};

struct body {
    char *p;
    size_t len;
    int too_large;
};

/* One call: where, who, what came back. */
struct call {
    struct agent__kube *k;
    char url[AGENT_KUBE_URL_MAX];
    char *auth; /* "Authorization: Bearer TOKEN" */
    const char *ca;
    struct body b;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void) { global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

void agent__kube_free(struct agent__kube *k)
{
    if (!k)
        return;
    curl_easy_cleanup(k->h);
    free(k);
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    struct body *b = ud;
    size_t n = size * nmemb;
    if (n > AGENT_KUBE_BODY_MAX - b->len) {
        b->too_large = 1;
        return 0; /* anything but n ends the transfer */
    }
    char *q = realloc(b->p, b->len + n + 1);
    if (!q)
        return 0;
    memcpy(q + b->len, p, n);
    b->p = q;
    b->len += n;
    b->p[b->len] = '\0';
    return n;
}

/* A host, a port: what an URL may hold of them (no '/', '@', '?'). */
static int plain(const char *s, const char *extra)
{
    for (; *s; s++)
        if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') && !(*s >= '0' && *s <= '9') &&
            !strchr(extra, *s))
            return 0;
    return 1;
}

/* The API's base URL, without a trailing '/': 0, or -1 with why. */
static int api_url(const struct agent_watch_opts *o, char *url, size_t cap, char *why, size_t wcap)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    int n;
    if (o->kube_api)
        n = snprintf(url, cap, "%s", o->kube_api);
    else if (!host || !*host)
        return snprintf(why, wcap,
                        "no Kubernetes API: KUBERNETES_SERVICE_HOST is not set (not "
                        "in a pod) and no --kube-api"),
               -1;
    else if (!plain(host, ".-:") || !port || !*port || !plain(port, ""))
        return snprintf(why, wcap, "KUBERNETES_SERVICE_HOST/_PORT are not a host and port"), -1;
    else
        n = snprintf(url, cap, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    if (n < 0 || (size_t)n >= cap)
        return snprintf(why, wcap, "the API server's URL is too long"), -1;
    while (n > 0 && url[n - 1] == '/')
        url[--n] = '\0';
    if (strncmp(url, "https://", 8) != 0)
        return snprintf(why, wcap, "the API server's URL must be https://"), -1;
    return 0;
}

/* "Authorization: Bearer TOKEN" from the token file: 0, or -1 with why. */
static int bearer(const char *path, char **out, char *why, size_t cap)
{
    char *t = NULL;
    size_t len = 0;
    int e = agent__read_at(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, AGENT_KUBE_TOKEN_MAX, &t, &len);
    if (e)
        return snprintf(why, cap, "the token %s: %s", path, strerror(e)), -1;
    while (len && (t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == ' '))
        t[--len] = '\0';
    int ok = len > 0;
    for (size_t i = 0; i < len; i++)
        ok &= t[i] > 0x20 && t[i] < 0x7f;
    *out = ok ? malloc(len + sizeof "Authorization: Bearer ") : NULL;
    if (*out)
        snprintf(*out, len + sizeof "Authorization: Bearer ", "Authorization: Bearer %s", t);
    free(t);
    if (!*out)
        return snprintf(why, cap, "the token %s: %s", path, ok ? "out of memory" : "not a token"),
               -1;
    return 0;
}

/* METHOD path (POST with json): the HTTP status, or -1 with why. */
static long request(struct call *c, const char *path, const char *json, char *why, size_t cap)
{
    CURL *h = c->k->h;
    char url[2 * AGENT_KUBE_URL_MAX];
    snprintf(url, sizeof url, "%s%s", c->url, path);
    free(c->b.p);
    c->b = (struct body){0};
    c->k->errbuf[0] = '\0';
    curl_easy_reset(h);
    struct curl_slist *hd = curl_slist_append(NULL, c->auth), *h2 = NULL;
    h2 = hd ? curl_slist_append(hd, json ? "Content-Type: application/json"
                                         : "Accept: application/json;as=PartialObjectMetadataList;"
                                           "g=meta.k8s.io;v=v1,application/json")
            : NULL;
    if (!h2) {
        curl_slist_free_all(hd);
        return snprintf(why, cap, "out of memory"), -1;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(h, CURLOPT_CAINFO, c->ca);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->k->errbuf);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)AGENT_KUBE_CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)AGENT_KUBE_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)AGENT_KUBE_BODY_MAX);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "tessera-agent");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, h2);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->b);
    if (json)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h2);
    const char *what = json ? "POST" : "GET";
    if (c->b.too_large || rc == CURLE_FILESIZE_EXCEEDED)
        return snprintf(why, cap, "%s %s: an answer over %u bytes", what, path,
                        AGENT_KUBE_BODY_MAX),
               -1;
    if (rc != CURLE_OK)
        return snprintf(why, cap, "%s %s: %s", what, path,
                        c->k->errbuf[0] ? c->k->errbuf : curl_easy_strerror(rc)),
               -1;
    return status;
}

/* The Status message of an answer, printable and bounded, or "". */
static void message(const struct body *b, char *out, size_t cap)
{
    json_t *doc = b->p ? json_loadb(b->p, b->len, 0, NULL) : NULL;
    const char *m = json_string_value(json_object_get(doc, "message"));
    size_t n = 0;
    for (; m && *m && n + 1 < cap && n < MESSAGE_MAX; m++)
        out[n++] = *m >= 0x20 && *m < 0x7f ? *m : ' ';
    out[n] = '\0';
    json_decref(doc);
}

/* A namespace or pod name fit for the path: a DNS subdomain. */
static int dns_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > NAME_MAX_LEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= '0' && s[i] <= '9') && s[i] != '-' &&
            s[i] != '.')
            return 0;
    return 1;
}

/* The namespace and name of the pod of uid among node's pods (its answer
 * in c->b): 0, or -1 with why. */
static int find_pod(struct call *c, const char *node, const char *uid, char *ns, char *name,
                    char *why, size_t cap)
{
    char sel[512], path[1024], msg[MESSAGE_MAX + 1];
    snprintf(sel, sizeof sel, "spec.nodeName=%s", node);
    char *esc = curl_easy_escape(c->k->h, sel, 0);
    if (!esc)
        return snprintf(why, cap, "out of memory"), -1;
    snprintf(path, sizeof path, "/api/v1/pods?fieldSelector=%s", esc);
    curl_free(esc);
    long st = request(c, path, NULL, why, cap);
    if (st < 0)
        return -1;
    if (st != 200) {
        message(&c->b, msg, sizeof msg);
        return snprintf(why, cap, "listing node %s's pods: HTTP %ld%s%s", node, st,
                        msg[0] ? ": " : "", msg),
               -1;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(c->b.p ? c->b.p : "", c->b.len, 0, &jerr);
    json_t *items = json_object_get(doc, "items"), *it;
    size_t i;
    int found = -1;
    json_array_foreach (items, i, it) {
        json_t *md = json_object_get(it, "metadata");
        const char *u = json_string_value(json_object_get(md, "uid"));
        const char *n = json_string_value(json_object_get(md, "name"));
        const char *s = json_string_value(json_object_get(md, "namespace"));
        if (!u || strcmp(u, uid) != 0)
            continue;
        found = dns_name(n) && dns_name(s) ? 0 : -2;
        if (found == 0) {
            snprintf(name, NAME_MAX_LEN + 1, "%s", n);
            snprintf(ns, NAME_MAX_LEN + 1, "%s", s);
        }
        break;
    }
    int list = json_is_array(items);
    if (!list)
        snprintf(why, cap, "listing node %s's pods: not a list (%s)", node,
                 doc ? "no items" : jerr.text);
    else if (found == -1)
        snprintf(why, cap, "pod %s is not among node %s's pods", uid, node);
    else if (found == -2)
        snprintf(why, cap, "pod %s: its name or namespace is not a DNS name", uid);
    json_decref(doc);
    return list && found == 0 ? 0 : -1;
}

/* POST the Eviction: 0, -2 refused (429), -1 failed; why. */
static int post_eviction(struct call *c, const char *ns, const char *name, const char *uid,
                         char *why, size_t cap)
{
    char path[1024], msg[MESSAGE_MAX + 1];
    json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:s}}}", "apiVersion", "policy/v1",
                           "kind", "Eviction", "metadata", "name", name, "namespace", ns,
                           "deleteOptions", "preconditions", "uid", uid);
    char *json = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    if (!json)
        return snprintf(why, cap, "out of memory"), -1;
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s/eviction", ns, name);
    long st = request(c, path, json, why, cap);
    free(json);
    if (st == 200 || st == 201)
        return 0;
    if (st < 0)
        return -1;
    message(&c->b, msg, sizeof msg);
    snprintf(why, cap, "evicting %s/%s: HTTP %ld%s%s%s", ns, name, st,
             st == 429 ? " (a PodDisruptionBudget allows no disruption now)" : "",
             msg[0] ? ": " : "", msg);
    return st == 429 ? -2 : -1;
}

static int start(struct agent_watch *w, char *why, size_t cap)
{
    if (w->kube)
        return 0;
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK)
        return snprintf(why, cap, "libcurl: %s", curl_easy_strerror(global_rc)), -1;
    w->kube = calloc(1, sizeof *w->kube);
    if (w->kube && !(w->kube->h = curl_easy_init())) {
        free(w->kube);
        w->kube = NULL;
    }
    return w->kube ? 0 : (snprintf(why, cap, "libcurl: out of memory"), -1);
}

int agent__evict(struct agent_watch *w, const char *pod_uid, char *why, size_t cap)
{
    const struct agent_watch_opts *o = w->o;
    struct call c = {.ca = o->kube_ca_file ? o->kube_ca_file : SA_DIR "/ca.crt"};
    char ns[NAME_MAX_LEN + 1], name[NAME_MAX_LEN + 1];
    int rc = -1;
    if (start(w, why, cap) == 0 && api_url(o, c.url, sizeof c.url, why, cap) == 0 &&
        bearer(o->kube_token_file ? o->kube_token_file : SA_DIR "/token", &c.auth, why, cap) == 0) {
        c.k = w->kube;
        rc = find_pod(&c, w->node, pod_uid, ns, name, why, cap);
        rc = rc == 0 ? post_eviction(&c, ns, name, pod_uid, why, cap) : rc;
    }
    free(c.auth);
    free(c.b.p);
    return rc;
}
