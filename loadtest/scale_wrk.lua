-- wrk script for loadtest/scale.sh. Arguments (after --): MODE [USERS_FILE]
--   healthz: GET /healthz
--   read:    page 1 of the timeline of a random line of USERS_FILE ("id token" lines),
--            with that user's bearer token
-- done() prints one JSON line: requests, duration, socket errors, non-2xx, p50/p99 (us).
local mode, ids, tokens = "healthz", {}, {}

function init(args)
  mode = args[1] or "healthz"
  if mode == "read" then
    for line in io.lines(args[2]) do
      local id, token = line:match("^(%S+) (%S+)$")
      ids[#ids + 1] = id
      tokens[#tokens + 1] = token
    end
    math.randomseed(os.time() + math.floor(os.clock() * 1000000))
  end
end

function request()
  if mode == "healthz" then
    return wrk.format("GET", "/healthz")
  end
  local i = math.random(#ids)
  return wrk.format("GET", "/v1/users/" .. ids[i] .. "/timeline?limit=20",
    { ["Authorization"] = "Bearer " .. tokens[i] })
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"socket_errors":%d,"non2xx":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
