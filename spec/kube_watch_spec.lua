-- kube_watch_spec.lua - list+watch against the test API server: paging,
-- bookmarks, dropped connections, 410 Gone (as an HTTP status and as an
-- ERROR event), a restart that loses the watch history, oversized events.
local K = require "support.kubeapi"

local function names(evs, typ, res)
  local out = {}
  for _, e in ipairs(evs) do
    if (not typ or e.type == typ) and (not res or e.resource == res) then out[#out + 1] = e.name end
  end
  table.sort(out)
  return out
end

local function poll_until(inf, pred, secs)
  local all = {}
  local deadline = os.time() + (secs or 30) -- generous: CI runs this beside a Go build
  repeat
    for _, e in ipairs(inf:poll(100)) do all[#all + 1] = e end
    if pred(all) then return all end
  until os.time() > deadline
  return all
end

describe("kube watch", function()
  local srv
  before_each(function() srv = K.start{ bookmark_ms = 150 } end)
  after_each(function() srv:stop() end)

  it("lists in pages, then watches from the list's resourceVersion", function()
    local nodes = {}
    for i = 1, 23 do nodes[i] = K.node(string.format("n%02d", i)) end
    srv:load(nodes)
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes" }, page_limit = 5, seed = 1 }
    local evs = poll_until(inf, function() return inf:synced() end)
    assert.are.equal(23, #names(evs, "ADDED"))
    assert.is_true(inf:synced())
    local listed_rv = inf:rv("nodes")
    -- 5 pages were requested
    assert.is_true(srv:stats().lists >= 5)
    srv:load{ K.node("late") }
    evs = poll_until(inf, function(a) return #a > 0 end)
    assert.are.same({ "late" }, names(evs, "ADDED"))
    assert.is_true(tonumber(inf:rv("nodes")) > tonumber(listed_rv))
  end)

  it("advances its resume point on bookmarks", function()
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes", "pods" }, seed = 1 }
    poll_until(inf, function() return inf:synced() end)
    -- a pod write moves the global resourceVersion; the nodes watch learns
    -- it only from a bookmark
    srv:load{ K.pod("default", "p1") }
    local target = tostring(srv:stats().rv)
    K.wait_for(function() inf:poll(100); return inf:rv("nodes") == target end, 5)
    assert.are.equal(target, inf:rv("nodes"))
  end)

  it("resumes from the last version after a dropped connection, losing nothing", function()
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes" }, seed = 7, backoff_ms = 20 }
    poll_until(inf, function() return inf:synced() end)
    srv:drop()
    srv:load{ K.node("a"), K.node("b") }
    local evs = poll_until(inf, function(a) return #a >= 2 end)
    assert.are.same({ "a", "b" }, names(evs, "ADDED"))
    assert.truthy(inf:last_error():find("watch", 1, true))
    assert.are.equal(0, cl:stats().relists)
    assert.is_true(cl:stats().watch_restarts >= 1)
  end)

  it("relists after a restart that lost the history, and reports deletions it missed", function()
    srv:load{ K.node("keep"), K.node("gone") }
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes" }, seed = 7, backoff_ms = 20 }
    poll_until(inf, function() return inf:synced() end)
    srv:restart()
    srv:request("DELETE", "/api/v1/nodes/gone")
    srv:load{ K.node("new") }
    local evs = poll_until(inf, function(a) return #names(a, "DELETED") > 0 and #names(a, "ADDED") > 0 end)
    assert.are.same({ "gone" }, names(evs, "DELETED"))
    assert.are.same({ "new" }, names(evs, "ADDED"))
    assert.is_true(cl:stats().relists >= 1)
    assert.truthy(inf:last_error():find("410", 1, true))
  end)

  it("relists on an HTTP 410 answer to the watch request", function()
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes" }, seed = 7, backoff_ms = 20 }
    poll_until(inf, function() return inf:synced() end)
    srv:faults{ gone_mode = "http", watch_gone = 1 }
    srv:drop()
    srv:load{ K.node("x") }
    local evs = poll_until(inf, function(a) return #a > 0 end)
    assert.are.same({ "x" }, names(evs, "ADDED"))
    assert.is_true(cl:stats().relists >= 1)
  end)

  it("restarts a paged list whose continue token expired", function()
    local nodes = {}
    for i = 1, 12 do nodes[i] = K.node("n" .. i) end
    srv:load(nodes)
    srv:faults{ expire_continue = 1 }
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes" }, page_limit = 4, seed = 1, backoff_ms = 20 }
    local evs = poll_until(inf, function() return inf:synced() end)
    assert.is_true(inf:synced())
    assert.are.equal(12, #names(evs, "ADDED"))
    assert.are.equal(0, #names(evs, "DELETED"))
  end)

  it("backs off on server errors and recovers", function()
    local cl = srv:client()
    srv:faults{ rules = { { method = "GET", path = "/api/v1/nodes", status = 500, count = 2 } } }
    local inf = cl:informer{ resources = { "nodes" }, seed = 1, backoff_ms = 20 }
    poll_until(inf, function() return inf:synced() end)
    assert.is_true(inf:synced())
    assert.truthy(inf:last_error():find("HTTP 500", 1, true))
  end)

  it("relists when one event is larger than its line cap", function()
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes" }, seed = 1, backoff_ms = 20, max_line = 2048 }
    poll_until(inf, function() return inf:synced() end)
    local big = K.node("big")
    big.metadata.annotations = { blob = string.rep("x", 4000) }
    srv:load{ big }
    local evs = poll_until(inf, function(a) return #a > 0 end)
    assert.are.same({ "big" }, names(evs, "ADDED"))
    assert.truthy(inf:last_error():find("larger than 2048 bytes", 1, true))
  end)

  it("watches all kinds the scheduler reads", function()
    srv:load{ K.node("n1"), K.class("gpu", "gpu.example.com"), K.slice("n1", "gpu.example.com", 2),
      K.claim("default", "c1", "gpu"), K.template("default", "t1", "gpu"),
      { apiVersion = "v1", kind = "Namespace", metadata = { name = "default" } } }
    local cl = srv:client()
    local inf = cl:informer{ resources = { "resourceslices", "deviceclasses", "resourceclaims",
      "resourceclaimtemplates", "devicetaintrules", "nodes", "pods", "namespaces" }, seed = 1 }
    local evs = poll_until(inf, function() return inf:synced() end)
    local kinds = {}
    for _, e in ipairs(evs) do kinds[e.resource] = (kinds[e.resource] or 0) + 1 end
    assert.are.same({ resourceslices = 1, deviceclasses = 1, resourceclaims = 1,
      resourceclaimtemplates = 1, nodes = 1, namespaces = 1 }, kinds)
  end)
end)
