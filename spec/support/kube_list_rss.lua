-- kube_list_rss.lua - run by spec/kube_list_spec.lua in a process of its own
-- (so its peak RSS is this test's alone): an informer lists four resources
-- whose answers are each `mib` MiB, streamed by the test server, and prints
--   <VmHWM before, KiB> <VmHWM after, KiB> <list_peak bytes> <events> <synced>
-- Usage: lua5.4 kube_list_rss.lua <mib per resource>
local K = require "support.kubeapi"

local function hwm()
  for l in io.lines("/proc/self/status") do
    local v = l:match("^VmHWM:%s+(%d+)")
    if v then return tonumber(v) end
  end
end

local mib = tonumber(arg[1] or "48")
local item_bytes = 32 * 1024
local items = math.floor(mib * 1024 * 1024 / item_bytes)
local srv = K.start{ bookmark_ms = 500 }
local rules = {}
for _, p in ipairs{ "/apis/resource.k8s.io/v1/resourceslices", "/apis/resource.k8s.io/v1/deviceclasses",
  "/api/v1/nodes", "/api/v1/namespaces" } do
  rules[#rules + 1] = { method = "GET", path = p .. "\\?", list = "huge", items = items, item_bytes = item_bytes }
end
srv:faults{ rules = rules }
local cl = srv:client()
collectgarbage()
local before = hwm()
local inf = cl:informer{ resources = { "resourceslices", "deviceclasses", "nodes", "namespaces" }, seed = 1 }
local events = 0
local deadline = os.time() + 120
while not inf:synced() and os.time() < deadline do
  events = events + #inf:poll(50)
  collectgarbage("step")
end
local after = hwm()
print(before, after, inf.list_peak and inf:list_peak() or -1, events, tostring(inf:synced()))
srv:stop()
