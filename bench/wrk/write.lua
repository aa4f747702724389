-- L2/L4 writes: a new contact per request (or, with BENCH_DUP_RATIO, an existing one), a unique
-- Idempotency-Key per request, and the caller's headers (Authorization, X-Bench-Owner).
-- Environment: BENCH_RUN (unique per run), BENCH_DUP_RATIO (0..1), BENCH_DUP_POOL (existing
-- contacts dup-0..N-1@bench.example), BENCH_DELAY_MS (pacing), BENCH_HEADERS ("K: V|K: V").
local run = os.getenv("BENCH_RUN") or tostring(os.time())
local dup_ratio = tonumber(os.getenv("BENCH_DUP_RATIO") or "0")
local dup_pool = tonumber(os.getenv("BENCH_DUP_POOL") or "0")
local delay_ms = tonumber(os.getenv("BENCH_DELAY_MS") or "0")
local extra = os.getenv("BENCH_HEADERS") or ""

local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(os.time() + thread_id)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  for header in string.gmatch(extra, "[^|]+") do
    local name, value = string.match(header, "^%s*([^:]+):%s*(.*)$")
    if name then wrk.headers[name] = value end
  end
end

function delay()
  return delay_ms
end

function request()
  counter = counter + 1
  local email
  if dup_pool > 0 and math.random() < dup_ratio then
    email = string.format("dup-%d@bench.example", math.random(0, dup_pool - 1))
  else
    email = string.format("%s-%d-%d@bench.example", run, thread_id, counter)
  end
  local body = string.format(
    '{"first_name": "Bench", "last_name": "User %d", "email": "%s", "delay_hours": 2}',
    counter, email)
  wrk.headers["Idempotency-Key"] = string.format("%s-%d-%d", run, thread_id, counter)
  return wrk.format(nil, nil, nil, body)
end
