-- alloc_incremental_spec.lua - a long-lived allocator follows the graph's
-- events (ARCHITECTURE principle 5): it touches only what an event affects,
-- and after any sequence of changes answers exactly as a fresh allocator on
-- the same graph would.
local core = require "draengine.core"
local K = require "support.kubeapi"

-- ---- objects -----------------------------------------------------------------------

local function device(name, attrs, extra)
  local d = { name = name, attributes = {} }
  for k, v in pairs(attrs) do
    if type(v) == "number" then d.attributes[k] = { int = v } else d.attributes[k] = { string = v } end
  end
  for k, v in pairs(extra or {}) do d[k] = v end
  return d
end

local NODES = 4
local MODELS = { "h100", "a100", "l4" }

local function gpu_slice(node, gen, models)
  local devs = {}
  for i, m in ipairs(models) do
    devs[#devs + 1] = device("gpu-" .. (i - 1), { model = m, numa = (i - 1) // 2 })
  end
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "gpu-" .. node },
           spec = { driver = "gpu.example.com", nodeName = node, devices = devs,
                    pool = { name = node, generation = gen, resourceSliceCount = 1 } } }
end

-- network devices visible from the nodes of one zone
local function nic_slice(zone, n)
  local devs = {}
  for i = 0, n - 1 do devs[#devs + 1] = device("nic-" .. i, { zone = zone }) end
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "nic-" .. zone },
           spec = { driver = "nic.example.com", devices = devs,
                    nodeSelector = { nodeSelectorTerms = { { matchExpressions = {
                      { key = "zone", operator = "In", values = { zone } } } } } },
                    pool = { name = "zone-" .. zone, generation = 1, resourceSliceCount = 1 } } }
end

-- partitionable: two halves of one accelerator sharing a counter, on node-1
local function part_slices()
  local function half(i)
    return device("half-" .. i, { kind = "half" }, { consumesCounters = { { counterSet = "acc", counters = { mem = { value = "2" } } } } })
  end
  local whole = device("whole", { kind = "whole" }, { consumesCounters = { { counterSet = "acc", counters = { mem = { value = "4" } } } } })
  return {
    { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "part-counters" },
      spec = { driver = "part.example.com", nodeName = "node-1",
               sharedCounters = { { name = "acc", counters = { mem = { value = "4" } } } },
               pool = { name = "part-node-1", generation = 1, resourceSliceCount = 2 } } },
    { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "part-devices" },
      spec = { driver = "part.example.com", nodeName = "node-1", devices = { whole, half(0), half(1) },
               pool = { name = "part-node-1", generation = 1, resourceSliceCount = 2 } } },
  }
end

local function node(i, zone)
  return { apiVersion = "v1", kind = "Node", metadata = { name = "node-" .. i, labels = { zone = zone } } }
end

local function class(name, expr)
  return { apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = name },
           spec = { selectors = { { cel = { expression = expr } } } } }
end

local function claim(name, requests, constraints)
  return K.claim_rq("default", name, requests, constraints)
end

local function pod(name, claimname)
  return K.claim_pod("default", name, claimname)
end

local function taint_rule(name, pool, dev)
  return { apiVersion = "resource.k8s.io/v1alpha3", kind = "DeviceTaintRule", metadata = { name = name },
           spec = { deviceSelector = { driver = "gpu.example.com", pool = pool, device = dev },
                    taint = { key = "example.com/broken", value = "true", effect = "NoSchedule" } } }
end

-- claims that are only ever probed (al_allocate commits nothing)
local PROBES = {
  claim("probe-gpu", { { "gpu" } }),
  claim("probe-h100", { { "gpu", 1, 'device.attributes["gpu.example.com"].model == "h100"' } }),
  claim("probe-pair", { { "gpu", 2 } }, { { matchAttribute = "gpu.example.com/numa" } }),
  claim("probe-nic", { { "gpu" }, { "nic" } }),
  claim("probe-half", { { "part", 1, 'device.attributes["part.example.com"].kind == "half"' } }),
  claim("probe-whole", { { "part", 1, 'device.attributes["part.example.com"].kind == "whole"' } }),
  claim("probe-tier", { { "gpu", 1, '"tier" in device.attributes["policy.example.com"] && device.attributes["policy.example.com"].tier == "gold"' } }),
}

local function base(g)
  for i = 0, NODES - 1 do
    g:apply(node(i, i < 2 and "a" or "b"))
    g:apply(gpu_slice("node-" .. i, 1, MODELS))
  end
  g:apply(nic_slice("a", 2))
  g:apply(nic_slice("b", 1))
  for _, s in ipairs(part_slices()) do g:apply(s) end
  g:apply(class("gpu", 'device.driver == "gpu.example.com"'))
  g:apply(class("nic", 'device.driver == "nic.example.com"'))
  g:apply(class("part", 'device.driver == "part.example.com"'))
  for _, p in ipairs(PROBES) do g:apply(p) end
end

local function probe_all(a)
  local out = {}
  for i = 0, NODES - 1 do
    for _, p in ipairs(PROBES) do
      local r = a:allocate("node-" .. i, { { namespace = "default", name = p.metadata.name } })
      r.steps = nil -- pruning may differ between a warm and a cold call; the answer may not
      out[#out + 1] = { node = i, probe = p.metadata.name, r = r }
    end
  end
  return out
end

-- ---- targeted invalidation ------------------------------------------------------------

describe("incremental allocator", function()
  local g, a
  before_each(function()
    g = core.graph()
    base(g)
    a = core.allocator(g)
    probe_all(a) -- warm every node table
  end)
  after_each(function()
    a:close()
    g = nil
  end)

  local function built() return a:stats().node_tables_built end

  it("builds each node table once while nothing but pods and claims change", function()
    assert.are.equal(NODES, built())
    g:apply(claim("c1", { { "gpu" } }))
    g:apply(pod("p1", "c1"))
    local r = a:schedule("default", "p1")
    assert.are.equal("scheduled", r.status)
    assert.are.equal("node-0", r.node)
    g:apply(claim("c2", { { "gpu" } }))
    g:apply(pod("p2", "c2"))
    assert.are.equal("scheduled", a:schedule("default", "p2").status)
    probe_all(a)
    assert.are.equal(NODES, built())
  end)

  it("applies an allocation made elsewhere as used bits, and a deallocation frees them", function()
    local function first(node)
      return a:allocate(node, { { namespace = "default", name = "probe-gpu" } }).claims[1].allocation.devices.results[1].device
    end
    assert.are.equal("gpu-0", first("node-2"))
    g:apply(claim("x", { { "gpu" } }))
    g:set_allocation("default", "x", { devices = { results = {
      { request = "r1", driver = "gpu.example.com", pool = "node-2", device = "gpu-0" } } } })
    assert.are.equal("gpu-1", first("node-2"))
    g:deallocate("default", "x")
    assert.are.equal("gpu-0", first("node-2"))
    -- an allocated claim arriving by watch, then deleted
    local w = claim("w", { { "gpu" } })
    w.status = { allocation = { devices = { results = {
      { request = "r1", driver = "gpu.example.com", pool = "node-2", device = "gpu-0" } } } } }
    g:apply(w)
    assert.are.equal("gpu-1", first("node-2"))
    g:remove("ResourceClaim", "default", "w")
    assert.are.equal("gpu-0", first("node-2"))
    assert.are.equal(NODES, built())
  end)

  it("rebuilds only the table of the node whose slice changed", function()
    g:apply(gpu_slice("node-2", 2, { "l4", "l4", "h100" }))
    local warm = probe_all(a)
    assert.are.equal(NODES + 1, built())
    local r = a:allocate("node-2", { { namespace = "default", name = "probe-h100" } })
    assert.are.equal("gpu-2", r.claims[1].allocation.devices.results[1].device)
    g:remove("ResourceSlice", nil, "gpu-node-2")
    assert.are.equal("unsatisfiable", a:allocate("node-2", { { namespace = "default", name = "probe-gpu" } }).status)
    assert.are.equal(NODES + 2, built())
    local fresh = core.allocator(g)
    g:apply(gpu_slice("node-2", 3, { "l4", "l4", "h100" }))
    warm = probe_all(a)
    assert.are.same(probe_all(fresh), warm)
    fresh:close()
  end)

  it("a shared slice invalidates the nodes it is visible from, and a Node label change that node", function()
    g:apply(nic_slice("b", 2))
    probe_all(a)
    assert.are.equal(NODES + 2, built()) -- node-2 and node-3 (zone b)
    g:apply(node(0, "b"))
    local r = a:allocate("node-0", { { namespace = "default", name = "probe-nic" } })
    assert.are.equal("nic-b", r.claims[1].allocation.devices.results[2].pool:gsub("zone%-", "nic-"))
    probe_all(a)
    assert.are.equal(NODES + 3, built())
  end)

  it("a class change re-evaluates that class's candidates without rebuilding tables", function()
    local sets = a:stats().candidate_sets_built
    g:apply(class("gpu", 'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model != "h100"'))
    local r = a:allocate("node-0", { { namespace = "default", name = "probe-gpu" } })
    assert.are.equal("gpu-1", r.claims[1].allocation.devices.results[1].device)
    assert.are.equal("unsatisfiable", a:allocate("node-0", { { namespace = "default", name = "probe-h100" } }).status)
    assert.are.equal(NODES, built())
    assert.is_true(a:stats().candidate_sets_built > sets)
    -- classes that did not change keep their sets
    sets = a:stats().candidate_sets_built
    a:allocate("node-0", { { namespace = "default", name = "probe-whole" } })
    assert.are.equal(sets, a:stats().candidate_sets_built)
  end)

  it("a DeviceTaintRule and derived attributes refresh just the devices they change", function()
    g:apply(taint_rule("t0", "node-1", "gpu-0"))
    local r = a:allocate("node-1", { { namespace = "default", name = "probe-gpu" } })
    assert.are.equal("gpu-1", r.claims[1].allocation.devices.results[1].device)
    g:remove("DeviceTaintRule", nil, "t0")
    r = a:allocate("node-1", { { namespace = "default", name = "probe-gpu" } })
    assert.are.equal("gpu-0", r.claims[1].allocation.devices.results[1].device)
    assert.are.equal("unsatisfiable", a:allocate("node-3", { { namespace = "default", name = "probe-tier" } }).status)
    g:set_derived("gpu.example.com", "node-3", "gpu-2", { ["policy.example.com/tier"] = "gold" })
    r = a:allocate("node-3", { { namespace = "default", name = "probe-tier" } })
    assert.are.equal("gpu-2", r.claims[1].allocation.devices.results[1].device)
    assert.are.equal(NODES, built())
  end)

  it("shared counters follow allocations of partitions", function()
    g:apply(claim("h", { { "part", 1, 'device.attributes["part.example.com"].kind == "half"' } }))
    g:set_allocation("default", "h", { devices = { results = {
      { request = "r1", driver = "part.example.com", pool = "part-node-1", device = "half-0" } } } })
    assert.are.equal("unsatisfiable", a:allocate("node-1", { { namespace = "default", name = "probe-whole" } }).status)
    local r = a:allocate("node-1", { { namespace = "default", name = "probe-half" } })
    assert.are.equal("half-1", r.claims[1].allocation.devices.results[1].device)
    g:deallocate("default", "h")
    assert.are.equal("allocated", a:allocate("node-1", { { namespace = "default", name = "probe-whole" } }).status)
  end)

  it("a counter pool change rebuilds only its owner's table; each view of the pool is checked once per generation", function()
    -- counter slices are relevant everywhere: node-1 sees the part pool's
    -- devices (its own table lists the pool), every other node sees the
    -- pool through its counter slice alone - one view for the cluster
    -- (al_fpools.c); a passing check is remembered per pool generation
    local function half(node)
      return a:allocate(node, { { namespace = "default", name = "probe-half" } })
    end
    -- warm: each pool checked once per distinct view of it - the part pool
    -- twice: from node-1 (its device slices relevant) and from the others
    -- (the counter slice alone, the rest found by the rescan); each gpu
    -- pool once, each nic pool once (two nodes share a view)
    local c0 = a:stats().counter_checks
    assert.are.equal(2 + NODES + 2, c0)
    assert.are.equal("half-0", half("node-1").claims[1].allocation.devices.results[1].device)
    local slices = part_slices()
    -- the counter set renamed: the devices consume from a set that is gone
    slices[1].spec.sharedCounters[1].name = "other"
    slices[1].spec.pool.generation = 2
    slices[2].spec.pool.generation = 2
    g:apply(slices[1])
    g:apply(slices[2])
    local warm = probe_all(a)
    -- node-1's table rebuilt, the other nodes' outcomes follow the foreign
    -- view: the failing check ran once for each of the two views
    assert.are.equal(NODES + 1, a:stats().node_tables_built)
    assert.are.equal(c0 + 2, a:stats().counter_checks)
    local fresh = core.allocator(g)
    assert.are.same(probe_all(fresh), warm)
    fresh:close()
    local r = half("node-1")
    assert.are_not.equal("allocated", r.status)
    assert.matches("invalid resource pools were encountered", r.error or "")
    -- back to a valid pool at a newer generation: allocatable again
    slices = part_slices()
    for _, s in ipairs(slices) do s.spec.pool.generation = 3; g:apply(s) end
    assert.are.equal("half-0", half("node-1").claims[1].allocation.devices.results[1].device)
    warm = probe_all(a)
    assert.are.equal(c0 + 2 + 2, a:stats().counter_checks)
    fresh = core.allocator(g)
    assert.are.same(probe_all(fresh), warm)
    fresh:close()
  end)

  it("forgets the graph when closed, and the graph may close first", function()
    local g2 = core.graph()
    base(g2)
    local a2 = core.allocator(g2)
    assert.are.equal("allocated", a2:allocate("node-0", { { namespace = "default", name = "probe-gpu" } }).status)
    getmetatable(g2).__close(g2)
    assert.has_error(function() a2:allocate("node-0", {}) end, "allocator's graph is closed")
    a2:close()
  end)
end)

-- ---- differential: warm allocator vs a fresh one after every change --------------------

describe("incremental allocator against a fresh one", function()
  it("agrees after each of 160 random changes (slices, claims, pods, classes, taints, labels, derived)", function()
    local gw, gc = core.graph(), core.graph()
    base(gw)
    base(gc)
    local warm = core.allocator(gw)
    local seed = 12345
    local function rnd(n)
      seed = (seed * 1103515245 + 12345) % 2147483648
      return (seed >> 8) % n
    end
    local gens, zones, npods, allocated = {}, {}, 0, {}
    for i = 0, NODES - 1 do gens[i] = 1; zones[i] = i < 2 and "a" or "b" end
    local both = function(f) f(gw); f(gc) end
    local kinds = {}
    for step = 1, 160 do
      local k = rnd(10)
      kinds[k] = (kinds[k] or 0) + 1
      if k == 0 then -- a node's GPUs change
        local i = rnd(NODES)
        gens[i] = gens[i] + 1
        local models = {}
        for d = 1, 1 + rnd(4) do models[d] = MODELS[1 + rnd(#MODELS)] end
        both(function(g) g:apply(gpu_slice("node-" .. i, gens[i], models)) end)
      elseif k == 1 or k == 2 then -- a pod arrives and is scheduled
        npods = npods + 1
        local name = "c" .. npods
        local c = rnd(3) == 0 and claim(name, { { "gpu" }, { "nic" } }) or
          rnd(2) == 0 and claim(name, { { "part", 1, 'device.attributes["part.example.com"].kind == "half"' } }) or
          claim(name, { { "gpu", 1 + rnd(2) } })
        both(function(g) g:apply(c); g:apply(pod("p" .. npods, name)) end)
        local rw = warm:schedule("default", "p" .. npods)
        local cold = core.allocator(gc)
        local rc = cold:schedule("default", "p" .. npods)
        cold:close()
        assert.are.same(rc, rw, "step " .. step)
        if rw.status == "scheduled" then allocated[#allocated + 1] = name end
      elseif k == 3 and #allocated > 0 then -- a claim is released (or deleted)
        local idx = 1 + rnd(#allocated)
        local name = table.remove(allocated, idx)
        if rnd(2) == 0 then
          both(function(g) g:deallocate("default", name) end)
        else
          both(function(g) g:remove("ResourceClaim", "default", name) end)
        end
      elseif k == 4 then -- the gpu class changes
        local expr = rnd(2) == 0 and 'device.driver == "gpu.example.com"' or
          'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model != "' .. MODELS[1 + rnd(3)] .. '"'
        both(function(g) g:apply(class("gpu", expr)) end)
      elseif k == 5 then -- a taint rule comes or goes
        local name = "t" .. rnd(3)
        if rnd(2) == 0 then
          local r = taint_rule(name, "node-" .. rnd(NODES), "gpu-" .. rnd(3))
          both(function(g) g:apply(r) end)
        else
          both(function(g) pcall(g.remove, g, "DeviceTaintRule", nil, name) end)
        end
      elseif k == 6 then -- a node moves zones
        local i = rnd(NODES)
        zones[i] = zones[i] == "a" and "b" or "a"
        both(function(g) g:apply(node(i, zones[i])) end)
      elseif k == 7 then -- the policy host derives a tier
        local i, d = rnd(NODES), rnd(3)
        local v = rnd(2) == 0 and "gold" or "silver"
        both(function(g) pcall(g.set_derived, g, "gpu.example.com", "node-" .. i, "gpu-" .. d,
                               { ["policy.example.com/tier"] = v }) end)
      elseif k == 8 then -- a zone's network devices change
        local z = rnd(2) == 0 and "a" or "b"
        local n = 1 + rnd(3)
        both(function(g) g:apply(nic_slice(z, n)) end)
      else -- the partitionable pool disappears and comes back
        both(function(g) pcall(g.remove, g, "ResourceSlice", nil, "part-devices") end)
        if rnd(2) == 0 then
          both(function(g) g:apply(part_slices()[2]) end)
        end
      end
      if step % 4 == 0 then
        local cold = core.allocator(gc)
        assert.are.same(probe_all(cold), probe_all(warm), "step " .. step)
        cold:close()
      end
    end
    -- every kind of change happened
    for k = 0, 9 do assert.is_true((kinds[k] or 0) > 0, "change kind " .. k) end
    assert.is_true(#allocated > 0)
    warm:close()
  end)
end)
