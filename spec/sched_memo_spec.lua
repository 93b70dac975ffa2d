-- sched_memo_spec.lua - serve's Filter memo (engine/alloc/al_memo.c) gives
-- the decisions serve gives without it.  The same cluster and the same pods,
-- in the same three phases, go once to serve with the memo and once to serve
-- with --filter-memo=false; between the phases nodes change in every way
-- that moves a node's generation (a taint, a cordon, a new node, a deleted
-- pod and its claim's devices freed, a slice that loses devices), and every
-- phase has pods that fit nowhere, so the unschedulable wording is compared
-- too.  What must be equal: each pod's node, each claim's devices, each
-- FailedScheduling note.  The memo must have answered most nodes in the
-- first run and none in the second.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"

local SLOW = H.asan and 3 or 1

local function cluster()
  local objs = { K.class("gpu", "gpu.example.com"),
    { apiVersion = "v1", kind = "Namespace", metadata = { name = "default" } } }
  for i = 1, 12 do
    local name = string.format("node-%03d", i)
    local n = K.node(name, { ["kubernetes.io/hostname"] = name, zone = "z" .. (i % 3) })
    if i % 4 == 0 then n.status.allocatable.cpu = "1" end -- NodeResourcesFit turns some pods away
    objs[#objs + 1] = n
    local s = K.slice(name, "gpu.example.com", 4)
    if i % 3 == 0 then s.spec.devices[4].attributes.model = { string = "A100" } end
    objs[#objs + 1] = s
  end
  return objs
end

-- claims first (alike specs: one signature per shape, not per name), then
-- the pods, so that no pod waits for its claim and the order of decisions
-- is the order of the pods
local function pods(srv, prefix, n, first)
  local claims, out = {}, {}
  for i = first or 1, (first or 1) + n - 1 do
    local name = string.format("%s-%03d", prefix, i)
    local c = K.claim("default", name, "gpu", i % 3 == 0 and 2 or 1)
    if i % 3 == 0 then c.spec.devices.constraints = { { matchAttribute = "gpu.example.com/model" } } end
    claims[#claims + 1] = c
    local o = { claims = { { name = "gpu", resourceClaimName = name } },
      requests = { cpu = i % 2 == 0 and "600m" or "300m", memory = "1Gi" } }
    if i % 7 == 0 then o.node_selector = { zone = "z1" } end
    out[#out + 1] = K.pod("default", name, o)
  end
  srv:load(claims)
  K.sleep(0.3)
  return out
end

-- every pod named `names` bound or turned down with a FailedScheduling Event
local function settled(srv, names)
  local st = srv:state().objects
  local failed, bound = {}, {}
  for _, e in ipairs(st.events or {}) do
    if e.reason == "FailedScheduling" and e.regarding then failed[e.regarding.name] = true end
  end
  for _, p in ipairs(st.pods) do bound[p.metadata.name] = p.spec.nodeName ~= nil end
  for _, n in ipairs(names) do
    if bound[n] == false and not failed[n] then return false, n end -- nil: deleted
  end
  return true
end

-- pod -> node, claim -> devices, pod -> its last FailedScheduling note
local function outcome(srv)
  local st = srv:state().objects
  local o = { node = {}, devices = {}, note = {} }
  for _, p in ipairs(st.pods) do o.node[p.metadata.name] = p.spec.nodeName or "-" end
  for _, c in ipairs(st.resourceclaims) do
    local a = c.status and c.status.allocation
    local d = {}
    for _, r in ipairs(a and a.devices.results or {}) do d[#d + 1] = r.pool .. "/" .. r.device end
    table.sort(d)
    o.devices[c.metadata.name] = table.concat(d, ",")
  end
  local evs = st.events or {}
  table.sort(evs, function(x, y) return (x.metadata.resourceVersion or "") < (y.metadata.resourceVersion or "") end)
  for _, e in ipairs(evs) do
    if e.reason == "FailedScheduling" and e.regarding and o.node[e.regarding.name] == "-" then
      o.note[e.regarding.name] = e.note
    end
  end
  return o
end

local function names_of(list)
  local n = {}
  for _, p in ipairs(list) do n[#n + 1] = p.metadata.name end
  return n
end

local function run(memo)
  local srv = K.start{ seed = 17 }
  srv:load(cluster())
  local p = S.start(srv, { "--leader-elect=false", "--parallel-binds=1", "--pod-initial-backoff=30s",
    "--pod-max-backoff=30s", "--filter-memo=" .. tostring(memo) })
  local ok, res = pcall(function()
    assert.truthy(p.port, "serve did not start: " .. p:stderr())
    local all = {}
    local function phase(list)
      srv:load(list)
      for _, x in ipairs(names_of(list)) do all[#all + 1] = x end
      local done = K.wait_for(function() return settled(srv, all) end, 60 * SLOW, 0.2)
      if not done then
        local _, which = settled(srv, all)
        local evs = {}
        for _, e in ipairs(srv:state().objects.events or {}) do
          if e.regarding and e.regarding.name == which then evs[#evs + 1] = e.reason .. ": " .. tostring(e.note) end
        end
        local pj = ""
        for _, x in ipairs(srv:state().objects.pods) do
          if x.metadata.name == which then pj = require("draengine.core").json_encode(x) end
        end
        error("not settled: pod " .. tostring(which) .. " " .. pj .. " events " .. table.concat(evs, " | ") .. "\n" ..
          p:stderr():sub(-3000))
      end
    end
    -- everything fits: no pod waits to be retried when the nodes change
    phase(pods(srv, "a", 20))
    -- taint one node, cordon another, a new node, one slice loses a device,
    -- a bound pod goes (with its claim: its devices come free)
    local st = srv:state().objects
    for _, n in ipairs(st.nodes) do
      if n.metadata.name == "node-002" then
        n.spec = n.spec or {}
        n.spec.taints = { { key = "maint", value = "yes", effect = "NoSchedule" } }
        assert.are.equal(200, (srv:request("PUT", "/api/v1/nodes/node-002", n)))
      elseif n.metadata.name == "node-005" then
        n.spec = n.spec or {}
        n.spec.unschedulable = true
        assert.are.equal(200, (srv:request("PUT", "/api/v1/nodes/node-005", n)))
      end
    end
    srv:load{ K.node("node-013", { ["kubernetes.io/hostname"] = "node-013", zone = "z1" }),
      K.slice("node-013", "gpu.example.com", 4) }
    for _, sl in ipairs(st.resourceslices) do
      if sl.spec.nodeName == "node-007" then
        sl.spec.devices[4] = nil
        sl.spec.devices[3] = nil
        sl.spec.pool.generation = 2
        assert.are.equal(200, (srv:request("PUT", "/apis/resource.k8s.io/v1/resourceslices/" .. sl.metadata.name, sl)))
      end
    end
    local base = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/"
    for _, c in ipairs(st.resourceclaims) do
      local owner = c.metadata.name
      if owner == "a-001" or owner == "a-004" then
        assert.are.equal(200, (srv:request("DELETE", "/api/v1/namespaces/default/pods/" .. owner)))
        local cur = select(2, srv:request("DELETE", base .. c.metadata.name))
        if cur and cur.metadata and cur.metadata.finalizers then
          cur.metadata.finalizers = nil
          srv:request("PUT", base .. c.metadata.name, cur)
        end
      end
    end
    K.sleep(0.5)
    phase(pods(srv, "b", 20))
    phase(pods(srv, "c", 12, 21))
    local _, metrics = p:http("/metrics")
    return { out = outcome(srv),
      hits = tonumber(metrics:match('draengine_scheduler_filter_memo_nodes_total{result="hit"} (%d+)')),
      stale = tonumber(metrics:match('draengine_scheduler_filter_memo_nodes_total{result="stale"} (%d+)')) }
  end)
  local rc, report = p:stop()
  srv:stop()
  assert.is_true(ok, tostring(res))
  assert.is_nil(report)
  assert.is_true(rc == 0 or rc == 143, "serve exit " .. tostring(rc))
  return res
end

describe("serve's Filter memo", function()
  it("decides as serve without it, through node, slice and pod changes", function()
    local with, without = run(true), run(false)
    assert.are.equal(0, without.hits)
    assert.are.equal(0, with.stale)
    -- 52 pods over 12-13 nodes: most nodes come from the memo
    assert.is_true(with.hits > 200, "memo hits: " .. tostring(with.hits))
    assert.are.same(without.out.node, with.out.node)
    assert.are.same(without.out.devices, with.out.devices)
    assert.are.same(without.out.note, with.out.note)
    -- the run had every kind of outcome
    local bound, pending = 0, 0
    for _, n in pairs(with.out.node) do
      if n == "-" then pending = pending + 1 else bound = bound + 1 end
    end
    assert.is_true(bound > 30 and pending > 3, bound .. " bound, " .. pending .. " pending")
    for n, node in pairs(with.out.node) do
      if n:sub(1, 2) == "a-" then assert.are_not.equal("-", node, n .. " did not fit") end
    end
    local seen = {}
    for _, note in pairs(with.out.note) do seen[#seen + 1] = note end
    assert.is_true(#seen > 0)
  end)

  it("leaves a claim the admit hook refuses to the claim's own words", function()
    -- the hook reads the claim's name, which no signature holds: a memo
    -- filled by admitted claims must not answer for a refused one
    local dir = os.tmpname(); os.remove(dir); os.execute("mkdir -p " .. dir)
    local f = assert(io.open(dir .. "/gate.lua", "w"))
    f:write([[
return {
  name = "gate", version = "1.0.0", api = 1, domains = {}, weight = 1,
  admit = function(claim)
    if claim.name:find("deny", 1, true) then return false, "claims named deny are refused" end
    return true
  end,
}
]])
    f:close()
    local srv = K.start{ seed = 18 }
    srv:load(cluster())
    local p = S.start(srv, { "--leader-elect=false", "--parallel-binds=1", "--pod-initial-backoff=30s",
      "--pod-max-backoff=30s", "--policy-dir", dir })
    local ok, err = pcall(function()
      assert.truthy(p.port, "serve did not start: " .. p:stderr())
      local list = pods(srv, "ok", 6)
      srv:load(list)
      local c = K.claim("default", "deny-1", "gpu", 1)
      srv:load{ c }
      K.sleep(0.3)
      srv:load{ K.pod("default", "deny-1", { claims = { { name = "gpu", resourceClaimName = "deny-1" } },
        requests = { cpu = "300m", memory = "1Gi" } }) }
      local names = names_of(list)
      names[#names + 1] = "deny-1"
      assert.is_true(K.wait_for(function() return settled(srv, names) end, 30 * SLOW, 0.2), p:stderr():sub(-2000))
      local o = outcome(srv)
      for _, n in ipairs(names_of(list)) do assert.are_not.equal("-", o.node[n], n) end
      assert.are.equal("-", o.node["deny-1"])
      assert.matches("claims named deny are refused", o.note["deny-1"], 1, true)
      local _, metrics = p:http("/metrics")
      assert.are.equal("0", metrics:match('draengine_scheduler_filter_memo_nodes_total{result="stale"} (%d+)'))
      assert.is_true(tonumber(metrics:match('draengine_scheduler_filter_memo_nodes_total{result="hit"} (%d+)')) > 0)
    end)
    local _, report = p:stop()
    srv:stop()
    os.execute("rm -rf " .. dir)
    assert.is_true(ok, tostring(err))
    assert.is_nil(report)
  end)
end)
