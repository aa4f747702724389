-- The flood: with BENCH_BODY, every request a form-encoded POST of that body (the token
-- endpoint with a real client id and a wrong secret; the login form with a wrong password);
-- without it, a plain GET. "__N__" in the body becomes "<thread>-<counter>", different in every
-- request of the run (the login flood's ever-changing addresses). BENCH_HEADERS ("K: V|K: V")
-- adds headers (the login form's CSRF cookie). Each connection sends its next request as soon
-- as it is answered. done() prints "Status N: count" lines.
local body = os.getenv("BENCH_BODY")
local extra = os.getenv("BENCH_HEADERS") or ""
local varies = body ~= nil and string.find(body, "__N__", 1, true) ~= nil
local counter = 0
if body then
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
  wrk.body = body
end
for header in string.gmatch(extra, "[^|]+") do
  local name, value = string.match(header, "^%s*([^:]+):%s*(.*)$")
  if name then wrk.headers[name] = value end
end

local threads = {}

-- Runs in wrk's main Lua state, once per thread before that thread's init(): thread:set makes
-- `thread_id` a global of the thread's own state.
function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

statuses = {}

-- Only when the body varies: without request(), wrk sends one request built once.
if varies then
  function request()
    counter = counter + 1
    local each = string.gsub(body, "__N__", string.format("%d-%d", thread_id, counter))
    return wrk.format(nil, nil, nil, each)
  end
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do
      total[status] = (total[status] or 0) + count
    end
  end
  for status, count in pairs(total) do
    io.write(string.format("Status %d: %d\n", status, count))
  end
end
