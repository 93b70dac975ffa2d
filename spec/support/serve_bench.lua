-- serve_bench.lua - `make bench-serve`: 1,000 pods (667 with one GPU claim,
-- half named claims, half from a template) on 90 nodes of 8 GPUs, against
-- the test API server on loopback, no faults, Events off.  Prints
-- BENCH lines: wall time from creating the pods to all bound, and the
-- scheduler's own latency sums from /metrics.
local K = require "support.kubeapi"
local S = require "support.serve"
local srv = K.start{ bookmark_ms = 1000, seed = 11 }
srv:load(S.cluster(90, 8))
local pods, claims = S.workload(1000)
srv:load(claims)
local p = S.start(srv, { "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000", "--no-events" })
K.sleep(0.5)
local f = io.popen("date +%s.%N"); local t0 = tonumber(f:read("l")); f:close()
srv:load(pods)
K.wait_for(function()
  local n = 0
  for _, q in ipairs(srv:get("/api/v1/pods").items) do if q.spec.nodeName then n = n + 1 end end
  return n == 1000
end, 120, 0.1)
f = io.popen("date +%s.%N"); local t1 = tonumber(f:read("l")); f:close()
print(string.format("BENCH serve-1000-pods-wall %.2f s", t1 - t0))
local _, m = p:http("/metrics")
local att = tonumber(m:match("draengine_scheduler_scheduling_attempt_duration_seconds_sum ([%d.e+-]+)"))
local n = tonumber(m:match("draengine_scheduler_scheduling_attempt_duration_seconds_count (%d+)"))
local al = tonumber(m:match("draengine_scheduler_allocation_duration_seconds_sum ([%d.e+-]+)"))
print(string.format("BENCH serve-attempt-mean %.3f ms", att / n * 1000))
print(string.format("BENCH serve-allocator-mean %.3f ms", al / n * 1000))
p:stop(); srv:stop()
