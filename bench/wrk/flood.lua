-- The flood: with BENCH_BODY, every request a form-encoded POST of that body (the token
-- endpoint with a real client id and a wrong secret); without it, a plain GET. Each connection
-- sends its next request as soon as it is answered. done() prints "Status N: count" lines.
local body = os.getenv("BENCH_BODY")
if body then
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
  wrk.body = body
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

statuses = {}

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
