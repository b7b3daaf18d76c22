-- wrk script for loadtest/scale.sh and loadtest/read_cost.sh. Arguments (after --):
-- MODE [USERS_FILE]
--   healthz: GET /healthz
--   read:    page 1 of the timeline of a random line of USERS_FILE ("id token" lines),
--            with that user's bearer token
--   masto:   the same users' Mastodon home timeline, /api/v1/timelines/home?limit=20
--   get:     MODE PATH TOKEN: GET PATH with that bearer token (grouped_notifications.sh)
-- Every request is formatted once, in init(): request() only picks one, in both modes,
-- so the generator's Lua costs the shared cores the same small amount per request
-- whichever arm runs (wrk's scripting guide advises this for fast servers).
-- With ACCEPT_ENCODING set (read_cost.sh's ENCODING), every request, /healthz's too,
-- carries it as `Accept-Encoding`.
-- done() prints one JSON line: requests, duration, socket errors, non-2xx, p50/p99 (us).
local requests = {}

-- The request's headers: `token`'s bearer, if any, and ACCEPT_ENCODING's.
local function headers(token)
  local h = {}
  if token then h["Authorization"] = "Bearer " .. token end
  local encoding = os.getenv("ACCEPT_ENCODING")
  if encoding and encoding ~= "" then h["Accept-Encoding"] = encoding end
  return h
end

function init(args)
  local mode = args[1] or "healthz"
  if mode == "read" then
    for line in io.lines(args[2]) do
      local id, token = line:match("^(%S+) (%S+)$")
      requests[#requests + 1] = wrk.format("GET", "/v1/users/" .. id .. "/timeline?limit=20",
        headers(token))
    end
  elseif mode == "masto" then
    for line in io.lines(args[2]) do
      local _, token = line:match("^(%S+) (%S+)$")
      requests[#requests + 1] = wrk.format("GET", "/api/v1/timelines/home?limit=20",
        headers(token))
    end
  elseif mode == "get" then
    requests[1] = wrk.format("GET", args[2], headers(args[3]))
  else
    requests[1] = wrk.format("GET", "/healthz", headers(nil))
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end

function request()
  return requests[math.random(#requests)]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"socket_errors":%d,"non2xx":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
