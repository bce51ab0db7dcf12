-- wrk script for bench/serve: POSTs the body in $BODY_FILE with $CONTENT_TYPE and prints one
-- JSON line with the request count, non-2xx answers and latency percentiles (µs).
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = os.getenv("CONTENT_TYPE") or "application/json"

function done(summary, latency, requests)
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "non2xx": %d, "timeouts": %d, "errors": %d, ' ..
    '"p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d}\n',
    summary.requests, summary.duration, summary.errors.status, summary.errors.timeout,
    summary.errors.connect + summary.errors.read + summary.errors.write,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
