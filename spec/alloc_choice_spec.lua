-- alloc_choice_spec.lua - node choice with score hooks (al_choose.c): the
-- cached choice (per-node outcomes per claim-set signature, re-evaluated only
-- for nodes whose state changed, the best from a heap; score answers from
-- the policy memo) gives exactly what evaluating every node for every pod
-- gives, through cluster changes, and costs per pod what changed, not the
-- cluster.
local core = require "draengine.core"
local H = require "support.helper"
local P = require "fixtures.policy.helper"

local read = H.read_file

-- ---- policies -------------------------------------------------------------------------

local function zone_policy(preferred)
  return string.format([[
return {
  name = "zone-score", version = "1.0.0", api = 1, domains = {}, weight = 3,
  score = function(node, placement)
    local z = node.labels.zone
    if z == %q then return 1 end
    if z == nil then return 0.5 end
    return 0
  end,
}
]], preferred)
end

local MODEL_POLICY = [[
local RANK = { h100 = 3, a100 = 2, l4 = 1 }
return {
  name = "model-score", version = "1.0.0", api = 1, domains = {}, weight = 2,
  score = function(node, placement)
    local s = 0
    for _, d in ipairs(placement) do
      if d.driver == "gpu.nvidia.com" then s = s - (RANK[d.attributes.model] or 0) * 0.1 end
    end
    return s
  end,
}
]]

-- reads node.name: one memo edge per node
local NAME_POLICY = [[
return {
  name = "name-score", version = "1.0.0", api = 1, domains = {}, weight = 1,
  score = function(node, placement)
    return (#node.name % 3) * 0.01
  end,
}
]]

-- counts: the score policies whose answers depend on the node's device
-- counts and the placement's size only (the policy set's count-keyed cache,
-- hooks.c pol_set_score_memo), without zone-, model- and name-score
local function policy_dir(preferred, counts)
  local shipped = H.root .. "/policies/"
  if counts then
    return P.dir({
      ["binpack.lua"] = read(shipped .. "binpack.lua"),
      ["spread.lua"] = [[
return {
  name = "spread", version = "1.0.0", api = 1, domains = {}, weight = 0.3,
  score = function(node, placement)
    if #placement > 1 then return (node.free_devices % 3) / 7 end
    return node.devices / (node.free_devices + 1)
  end,
}
]],
      ["numa-bridge.lua"] = read(shipped .. "numa-bridge.lua"),
      ["mig-compat.lua"] = read(shipped .. "mig-compat.lua"),
    })
  end
  return P.dir({
    ["binpack.lua"] = read(shipped .. "binpack.lua"),
    ["numa-score.lua"] = read(shipped .. "numa-score.lua"),
    ["numa-bridge.lua"] = read(shipped .. "numa-bridge.lua"),
    ["mig-compat.lua"] = read(shipped .. "mig-compat.lua"),
    ["zone-score.lua"] = zone_policy(preferred),
    ["model-score.lua"] = MODEL_POLICY,
    ["name-score.lua"] = NAME_POLICY,
  })
end

-- ---- objects -------------------------------------------------------------------------

local MODELS = { "h100", "a100", "l4" }

local function rng(seed)
  local s = seed
  return function(n)
    s = (s * 1103515245 + 12345) % 2147483648
    return s // 65536 % n + 1
  end
end

local function node_obj(name, zone, tainted, unschedulable)
  local n = { apiVersion = "v1", kind = "Node", metadata = { name = name, labels = { zone = zone } }, spec = {} }
  if tainted then n.spec.taints = { { key = "maint", value = "true", effect = "NoSchedule" } } end
  if unschedulable then n.spec.unschedulable = true end
  return n
end

local function gpu_slice(node, gen, models)
  local devs = {}
  for i, m in ipairs(models) do
    devs[i] = { name = "gpu-" .. (i - 1), attributes = {
      model = { string = m }, type = { string = "gpu" }, numa = { int = (i - 1) // 2 },
      uuid = { string = string.format("GPU-%s-%d-%d", node, gen, i) },
      ["resource.kubernetes.io/pcieRoot"] = { string = "pci" .. (i - 1) // 2 } } }
  end
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = node .. "-gpus" },
           spec = { driver = "gpu.nvidia.com", nodeName = node, devices = devs,
                    pool = { name = node .. "-gpus", generation = gen, resourceSliceCount = 1 } } }
end

local function nic_slice(node, n)
  local devs = {}
  for i = 1, n do
    devs[i] = { name = "nic-" .. (i - 1), attributes = {
      numaNode = { int = (i - 1) // 2 }, rdma = { bool = true },
      ["resource.kubernetes.io/pcieRoot"] = { string = "pci" .. (i - 1) // 2 } } }
  end
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = node .. "-nics" },
           spec = { driver = "dra.net", nodeName = node, devices = devs,
                    pool = { name = node .. "-nics", generation = 1, resourceSliceCount = 1 } } }
end

local function class(name, expr)
  return { apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = name },
           spec = { selectors = { { cel = { expression = expr } } } } }
end

local function request(name, cls, count, sel, tol)
  local x = { deviceClassName = cls, count = count or 1 }
  if sel then x.selectors = { { cel = { expression = sel } } } end
  if tol then x.tolerations = { { key = "broken", operator = "Exists", effect = "NoSchedule" } } end
  return { name = name, exactly = x }
end

-- claim specs by kind
local KINDS = {
  function() return { requests = { request("gpu", "gpu") } } end,
  function() return { requests = { request("gpus", "gpu", 2) },
                      constraints = { { matchAttribute = "resource.kubernetes.io/numaNode" } } } end,
  function() return { requests = { request("gpu", "gpu"), request("nic", "nic") },
                      constraints = { { requests = { "gpu", "nic" }, matchAttribute = "resource.kubernetes.io/pcieRoot" } } } end,
  function() return { requests = { { name = "gpu", firstAvailable = {
                      { name = "two-h100", deviceClassName = "gpu", count = 2,
                        selectors = { { cel = { expression = 'device.attributes["gpu.nvidia.com"].model == "h100"' } } } },
                      { name = "one", deviceClassName = "gpu", count = 1 } } } } } end,
  function() return { requests = { request("gpu", "gpu", 1, 'device.attributes["gpu.nvidia.com"].model == "a100"') } } end,
  function() return { requests = { request("gpus", "gpu", 5) } } end, -- often unschedulable
  function() return { requests = { request("gpu", "gpu", 1, nil, true) } } end,
  -- what a saved allocation re-points at the winning pod's claim: a
  -- subrequest's tolerations and the claim's config entries
  function() return { requests = {
                        { name = "gpu", firstAvailable = {
                          { name = "tolerant", deviceClassName = "gpu", count = 1,
                            tolerations = { { key = "broken", operator = "Exists", effect = "NoSchedule" } } } } },
                        request("nic", "nic") },
                      config = {
                        { requests = { "gpu" }, opaque = { driver = "gpu.nvidia.com", parameters = { mode = "shared" } } },
                        { opaque = { driver = "dra.net", parameters = { mtu = 9000 } } } } } end,
}

-- ---- two worlds: cached and uncached, fed the same operations --------------------------

local World = {}
World.__index = World

local function new_world(dir, cached)
  local w = setmetatable({ g = core.graph() }, World)
  w.dir = dir
  w.cached = cached
  return w
end

function World:start()
  self.host = core.policy_host(self.g, self.dir, { score_memo = self.cached })
  self.a = core.allocator(self.g, { policies = self.host, choice_cache = self.cached })
end

function World:close()
  self.a:close()
  self.host:close()
end

local function build(rand, nnodes)
  local ops = {}
  local function op(f) ops[#ops + 1] = f end
  op(function(w) w.g:apply(class("gpu", 'device.driver == "gpu.nvidia.com"')) end)
  op(function(w) w.g:apply(class("nic", 'device.driver == "dra.net" && device.attributes["dra.net"].rdma')) end)
  for i = 1, nnodes do
    local name = string.format("node-%02d", i)
    local models = {}
    for k = 1, 2 + rand(5) do models[k] = MODELS[rand(3)] end
    local zone = rand(3) == 1 and "a" or "b"
    local tainted = rand(6) == 1
    local nics = rand(4)
    op(function(w)
      w.g:apply(node_obj(name, zone, tainted))
      w.g:apply(gpu_slice(name, 1, models))
      w.g:apply(nic_slice(name, nics))
    end)
  end
  return ops
end

local function run_world(w, ops)
  for _, f in ipairs(ops) do f(w) end
end

-- what a schedule answer must agree on (claim allocations included)
local function comparable(r)
  return r
end

describe("node choice cache", function()
  local dir
  before_each(function() dir = policy_dir("a") end)
  after_each(function() P.rm(dir) end)

  -- every kind of change, or only changes of single nodes (so that the
  -- tables are synced from the change log far more than rebuilt)
  for _, case in ipairs({ { 1, true }, { 7, true }, { 42, true }, { 3, false }, { 11, false },
                         { 5, true, true }, { 13, false, true } }) do
    local seed, global, counts = case[1], case[2], case[3]
    it(string.format("chooses exactly as evaluating every node does (seed %d, %s%s)", seed,
                     global and "all changes" or "node changes", counts and ", count-keyed scores" or ""), function()
      if counts then
        P.rm(dir)
        dir = policy_dir("a", true)
      end
      local rand = rng(seed)
      local nnodes = 8 + rand(8)
      local setup = build(rand, nnodes)
      local cached, plain = new_world(dir, true), new_world(dir, false)
      for _, w in ipairs({ cached, plain }) do
        run_world(w, setup)
        w:start()
      end
      local placed, seq, next_node = {}, 0, nnodes + 1
      local function both(f)
        f(cached)
        f(plain)
      end
      for step = 1, 70 do
        local e = rand(12)
        if not global and e >= 5 then e = 12 end
        if e == 1 and #placed > 0 then
          -- a pod finishes: its claim goes away, its devices are free again
          local c = table.remove(placed, rand(#placed))
          both(function(w) w.g:remove("ResourceClaim", c.namespace, c.name) end)
        elseif e == 2 then
          local n = string.format("node-%02d", rand(nnodes))
          local zone, tainted, unsched = rand(2) == 1 and "a" or "b", rand(3) == 1, rand(5) == 1
          both(function(w) w.g:apply(node_obj(n, zone, tainted, unsched)) end)
        elseif e == 3 then
          local n = string.format("node-%02d", rand(nnodes))
          local models = {}
          for k = 1, 2 + rand(5) do models[k] = MODELS[rand(3)] end
          local gen = 1 + step
          both(function(w) w.g:apply(gpu_slice(n, gen, models)) end)
        elseif e == 4 then
          local n, d = string.format("node-%02d", rand(nnodes)), "gpu-" .. (rand(3) - 1)
          local rule = { apiVersion = "resource.k8s.io/v1alpha3", kind = "DeviceTaintRule",
                         metadata = { name = "r-" .. step },
                         spec = { deviceSelector = { driver = "gpu.nvidia.com", pool = n .. "-gpus", device = d },
                                  taint = { key = "broken", value = "true", effect = "NoSchedule" } } }
          both(function(w) w.g:apply(rule) end)
        elseif e == 5 then
          local expr = rand(2) == 1 and 'device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].model != "l4"'
                         or 'device.driver == "gpu.nvidia.com"'
          both(function(w) w.g:apply(class("gpu", expr)) end)
        elseif e == 6 and step % 3 == 0 then
          local name = string.format("node-%02d", next_node)
          next_node = next_node + 1
          local models = { MODELS[rand(3)], MODELS[rand(3)] }
          both(function(w)
            w.g:apply(node_obj(name, "a"))
            w.g:apply(gpu_slice(name, 1, models))
            w.g:apply(nic_slice(name, 2))
          end)
        elseif e == 7 and step % 4 == 0 then
          local n = string.format("node-%02d", rand(nnodes))
          both(function(w) w.g:remove("Node", nil, n) end)
        elseif e == 8 and step == 35 then
          -- a new policy revision: zone b is preferred now
          P.write(dir, { ["zone-score.lua"] = zone_policy("b") })
          both(function(w)
            local c = w.host:reload()
            assert.is_true(c.swapped, c.error)
          end)
        end
        -- a pod, with a claim of a random kind, maybe from a template
        seq = seq + 1
        local kind = rand(#KINDS)
        local spec = KINDS[kind]()
        local pname, cname = "pod-" .. seq, "claim-" .. seq
        local templated = rand(3) == 1
        local pod = { apiVersion = "v1", kind = "Pod",
                      metadata = { name = pname, namespace = "default", uid = "uid-" .. seq },
                      spec = { containers = { { name = "c", image = "x" } } } }
        if rand(5) == 1 then pod.spec.nodeSelector = { zone = "a" } end
        if rand(6) == 1 then pod.spec.tolerations = { { key = "maint", operator = "Exists" } } end
        local objs = {}
        if templated then
          objs[1] = { apiVersion = "resource.k8s.io/v1", kind = "ResourceClaimTemplate",
                      metadata = { name = "tmpl-" .. kind, namespace = "default" },
                      spec = { spec = { devices = spec } } }
          pod.spec.resourceClaims = { { name = "dev", resourceClaimTemplateName = "tmpl-" .. kind } }
        else
          objs[1] = { apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim",
                      metadata = { name = cname, namespace = "default" }, spec = { devices = spec } }
          pod.spec.resourceClaims = { { name = "dev", resourceClaimName = cname } }
        end
        objs[2] = pod
        local r = {}
        both(function(w)
          for _, o in ipairs(objs) do w.g:apply(o) end
          w.host:cycle()
          r[w] = w.a:schedule("default", pname)
        end)
        assert.are.same(comparable(r[plain]), comparable(r[cached]), "step " .. step .. " pod " .. pname)
        if r[cached].status == "scheduled" then
          for _, c in ipairs(r[cached].claims) do
            if c.allocated_now then placed[#placed + 1] = { namespace = c.namespace, name = c.name } end
          end
        end
      end
      -- the cache did the work of a few nodes per pod, not of every node
      local sc, sp = cached.a:stats(), plain.a:stats()
      assert.is_true(sc.choice_pods > 50)
      assert.is_true(sc.allocate_calls < sp.allocate_calls,
                     string.format("%d vs %d Allocate calls", sc.allocate_calls, sp.allocate_calls))
      assert.is_true(cached.host:stats().score_memo_hits > 0)
      -- some winners came from allocations saved by earlier pods
      assert.is_true(sc.choice_saved > 0)
      cached:close()
      plain:close()
    end)
  end
end)

-- ---- targeted behaviour -------------------------------------------------------------------

describe("node choice cache, step by step", function()
  local dir, g, host, a
  local NODES = 12

  local function claim(name, spec)
    return { apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim",
             metadata = { name = name, namespace = "default" }, spec = { devices = spec } }
  end
  local function pod(name, cname)
    return { apiVersion = "v1", kind = "Pod", metadata = { name = name, namespace = "default", uid = "u-" .. name },
             spec = { containers = { { name = "c", image = "x" } },
                      resourceClaims = { { name = "dev", resourceClaimName = cname } } } }
  end
  local n = 0
  local function schedule(spec)
    n = n + 1
    g:apply(claim("job-" .. n, spec))
    g:apply(pod("p" .. n, "job-" .. n))
    return a:schedule("default", "p" .. n), "job-" .. n
  end
  local function evals() return a:stats().choice_evals end

  before_each(function()
    dir = policy_dir("a")
    g = core.graph()
    g:apply(class("gpu", 'device.driver == "gpu.nvidia.com"'))
    g:apply(class("nic", 'device.driver == "dra.net"'))
    for i = 1, NODES do
      local name = string.format("node-%02d", i)
      g:apply(node_obj(name, i <= 6 and "a" or "b"))
      g:apply(gpu_slice(name, 1, { "h100", "h100", "a100", "a100" }))
      g:apply(nic_slice(name, 2))
    end
    host = core.policy_host(g, dir)
    a = core.allocator(g, { policies = host })
  end)

  after_each(function()
    a:close()
    host:close()
    P.rm(dir)
  end)

  it("evaluates every node once, then only the node that changed", function()
    local r = schedule(KINDS[1]())
    assert.are.equal("scheduled", r.status)
    assert.are.equal(NODES, evals())
    -- binpack: the same node until it is full; one re-evaluation per pod
    for _ = 1, 3 do
      local before = evals()
      local r2 = schedule(KINDS[1]())
      assert.are.equal(r.node, r2.node)
      assert.are.equal(1, evals() - before)
    end
    assert.is_true(a:stats().choice_reused >= 3)
  end)

  it("takes a node's first win from the allocation saved when it was evaluated, not a second Allocate", function()
    local first = schedule(KINDS[1]()).node
    local s0 = a:stats()
    local moved
    for _ = 1, 8 do
      local r = schedule(KINDS[1]())
      assert.are.equal("scheduled", r.status)
      if r.node ~= first then
        moved = r
        break
      end
    end
    assert.truthy(moved, "the first node never filled up")
    local s1 = a:stats()
    assert.are.equal(s0.choice_saved + 1, s1.choice_saved)
    -- every Allocate was a re-evaluation (a full node needs none)
    assert.is_true(s1.allocate_calls - s0.allocate_calls <= s1.choice_evals - s0.choice_evals)
  end)

  it("follows a Node change a score policy reads (its labels)", function()
    local r = schedule(KINDS[1]())
    assert.are.equal("node-01", r.node) -- zone a, then name order
    for i = 1, 6 do g:apply(node_obj(string.format("node-%02d", i), "b")) end
    g:apply(node_obj("node-12", "a"))
    local before = evals()
    local r2 = schedule(KINDS[1]())
    assert.are.equal("node-12", r2.node)
    assert.are.equal(7, evals() - before) -- the seven Nodes that changed
  end)

  it("a policy revision re-scores every node", function()
    assert.are.equal("node-01", schedule(KINDS[1]()).node)
    P.write(dir, { ["zone-score.lua"] = zone_policy("b") })
    assert.is_true(host:reload().swapped)
    local tables = a:stats().choice_tables
    local r = schedule(KINDS[1]())
    assert.are.equal("node-07", r.node)
    assert.are.equal(tables + 1, a:stats().choice_tables)
  end)

  it("answers an unschedulable pod again without looking at the nodes, in its own claim's words", function()
    local impossible = { requests = { request("gpus", "gpu", 3, 'device.attributes["gpu.nvidia.com"].model == "h100"') } }
    local r1, c1 = schedule(impossible)
    assert.are.equal("unschedulable", r1.status)
    local before = evals()
    local r2, c2 = schedule(impossible)
    assert.are.equal(before, evals())
    assert.are.equal("unschedulable", r2.status)
    assert.matches("claim " .. c1 .. ", request gpus", r1.reason, 1, true)
    local function swap(text, from, to) return (text:gsub(from:gsub("%p", "%%%0"), to)) end
    assert.are.equal(swap(r1.reason, c1, c2), r2.reason)
    -- the same as the uncached loop says
    local plain = core.allocator(g, { policies = host, choice_cache = false })
    g:apply(claim("cx", impossible))
    g:apply(pod("px", "cx"))
    local r3 = plain:schedule("default", "px")
    assert.are.equal(swap(r1.reason, c1, "cx"), r3.reason)
    plain:close()
  end)

  it("keeps the devices per node that score hooks see", function()
    assert.are.same({ 6, 6 }, { a:node_devices("node-01") })
    local r = schedule(KINDS[3]()) -- a GPU and a NIC
    assert.are.same({ 6, 4 }, { a:node_devices(r.node) })
    g:remove("ResourceClaim", "default", "job-" .. n)
    assert.are.same({ 6, 6 }, { a:node_devices(r.node) })
    g:apply(gpu_slice(r.node, 2, { "l4" }))
    assert.are.same({ 3, 3 }, { a:node_devices(r.node) })
    g:remove("ResourceSlice", nil, r.node .. "-nics")
    assert.are.same({ 1, 1 }, { a:node_devices(r.node) })
    assert.are.same({ 0, 0 }, { a:node_devices("no-such-node") })
  end)
end)
