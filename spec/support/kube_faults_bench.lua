-- kube_faults_bench.lua - `make bench-kube-faults`: requests a reflector
-- sends to a faulty test API server, per fault, with the default backoff
-- (800 ms, client-go's), and the peak RSS of listing 4 x 48 MiB at once.
-- Prints one BENCH line per case.  SECONDS_PER_CASE=n sets the window (default 10).
local K = require "support.kubeapi"
local H = require "support.helper"

local secs = tonumber(os.getenv("SECONDS_PER_CASE") or "10")

local function count(srv, verb)
  local per = srv:stats().by_res.nodes
  return per and per[verb] or 0
end

local function case(name, rules, after_sync)
  local srv = K.start{ bookmark_ms = 500 }
  srv:load{ K.node("n1") }
  local cl = srv:client()
  if not after_sync then srv:faults{ rules = rules } end
  local inf = cl:informer{ resources = { "nodes" }, seed = 1 }
  if after_sync then
    K.wait_for(function() inf:poll(50); return inf:synced() end, 10, 0)
    inf:poll(1200) -- a healthy watch first
    srv:faults{ rules = rules }
    srv:drop()
  end
  local l0, w0 = count(srv, "list"), count(srv, "watch")
  inf:poll(secs * 1000)
  local l, w = count(srv, "list") - l0, count(srv, "watch") - w0
  print(string.format("BENCH kube-faults case=%s seconds=%d lists=%d watches=%d requests_per_s=%.1f",
    name, secs, l, w, (l + w) / secs))
  srv:stop()
end

local nodes = "/api/v1/nodes"
case("list-endless", { { method = "GET", path = nodes, list = "endless", count = 1e9 } })
case("list-repeat-token", { { method = "GET", path = nodes, list = "repeat", count = 1e9 } })
for _, mode in ipairs{ "empty", "one_event", "garbage", "error410", "error500", "drop" } do
  case("watch-" .. mode, { { method = "GET", path = nodes, watch = true, stream = mode, count = 1e9 } }, true)
end
local p = io.popen("lua5.4 " .. H.shell_quote(H.root .. "/spec/support/kube_list_rss.lua") .. " 48 2>&1")
local out = p:read("a")
p:close()
local before, after = out:match("(%d+)%s+(%d+)")
print(string.format("BENCH kube-faults case=list-4x48MiB peak_rss_growth_mib=%.1f", (tonumber(after) - tonumber(before)) / 1024))
