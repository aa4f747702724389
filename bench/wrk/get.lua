-- L1: a plain GET; BENCH_DELAY_MS paces each connection (fixed-rate runs).
local delay_ms = tonumber(os.getenv("BENCH_DELAY_MS") or "0")

function delay()
  return delay_ms
end
