-- L2/L4 writes: a new contact per request (or, with BENCH_DUP_RATIO, an existing one), a unique
-- Idempotency-Key per request, and the caller's headers (Authorization, X-Bench-Owner).
-- Environment: BENCH_RUN (unique per run), BENCH_DUP_RATIO (0..1), BENCH_DUP_POOL (existing
-- contacts dup-0..N-1@bench.example), BENCH_DELAY_MS (pacing), BENCH_HEADERS ("K: V|K: V").
-- done() prints "Replayed responses: N": answers marked Idempotent-Replayed, which a run whose
-- keys are all new must never get (the harness fails the run when N > 0).
local run = os.getenv("BENCH_RUN") or tostring(os.time())
local dup_ratio = tonumber(os.getenv("BENCH_DUP_RATIO") or "0")
local dup_pool = tonumber(os.getenv("BENCH_DUP_POOL") or "0")
local delay_ms = tonumber(os.getenv("BENCH_DELAY_MS") or "0")
local extra = os.getenv("BENCH_HEADERS") or ""

local counter = 0
local threads = {}

-- Runs in wrk's main Lua state, once per thread before that thread's init(): thread:set
-- makes `thread_id` a global of the thread's own state. (A chunk-level `local thread_id`
-- would hide that global, and every thread would send the same keys and e-mails.)
function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

-- Globals, so that done() can read each thread's count with thread:get.
replayed = 0

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

function response(status, headers, body)
  if headers["Idempotent-Replayed"] or headers["idempotent-replayed"] then
    replayed = replayed + 1
  end
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do
    total = total + thread:get("replayed")
  end
  io.write(string.format("Replayed responses: %d\n", total))
end
