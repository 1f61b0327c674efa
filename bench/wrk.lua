-- wrk.lua - POST an AdmissionReview (env BODY), every BAD_EVERY-th request a
-- malformed one (env, optional), paced by DELAY_MS per connection (optional);
-- prints one machine-readable line of results at the end.
local f = assert(io.open(os.getenv("BODY"), "r"))
local body = f:read("*a")
f:close()
local bad_every = tonumber(os.getenv("BAD_EVERY") or "0")
local delay_ms = tonumber(os.getenv("DELAY_MS") or "0")
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = body

function request()
    n = n + 1
    if bad_every > 0 and n % bad_every == 0 then
        return wrk.format(nil, nil, nil, '{"apiVersion": "admission.k8s.io/v1", "kind": ')
    end
    return wrk.format()
end

if delay_ms > 0 then
    function delay() return delay_ms end
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("RESULT rps=%.0f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f requests=%d " ..
        "errors=%d non2xx=%d\n", summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1000, latency:percentile(99) / 1000,
        latency:percentile(99.9) / 1000, summary.requests,
        e.connect + e.read + e.write + e.timeout, e.status))
end
