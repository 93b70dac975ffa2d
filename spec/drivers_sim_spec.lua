-- drivers_sim_spec.lua - the simulated cluster: determinism, API limits,
-- the real drivers' names and shapes, DeviceClasses, the CLI.
local H = require "support.helper"
local core = require "draengine.core"

local DNS_LABEL = "^[a-z0-9][-a-z0-9]*$"

local function is_dns_label(s)
  return #s <= 63 and s:match(DNS_LABEL) ~= nil and s:sub(-1) ~= "-"
end

local function count(t)
  local n = 0
  for _ in pairs(t or {}) do n = n + 1 end
  return n
end

-- Checks every slice against the ResourceSlice validation limits that
-- the simulator must respect (dra-model.md 1.1); returns a list of problems.
local function limit_problems(objs)
  local problems, pools = {}, {}
  local function bad(fmt, ...) problems[#problems + 1] = string.format(fmt, ...) end
  for _, o in ipairs(objs) do
    if o.kind == "ResourceSlice" then
      local s, name = o.spec, o.metadata.name
      local key = s.driver .. "/" .. s.pool.name
      pools[key] = pools[key] or { slices = 0, counts = {}, sets = {}, devices = {}, consumers = {} }
      local p = pools[key]
      p.slices = p.slices + 1
      p.counts[s.pool.resourceSliceCount] = true
      if s.nodeName == nil then bad("%s: no nodeName", name) end
      local devs = s.devices or {}
      if #devs > 0 and s.sharedCounters then bad("%s: devices and sharedCounters", name) end
      local advanced, consumed = false, 0
      for _, d in ipairs(devs) do
        if d.consumesCounters or d.taints then advanced = true end
      end
      if #devs > (advanced and 64 or 128) then bad("%s: %d devices", name, #devs) end
      if #(s.sharedCounters or {}) > 8 then bad("%s: too many counter sets", name) end
      for _, cs in ipairs(s.sharedCounters or {}) do
        if not is_dns_label(cs.name) then bad("counter set name %s", cs.name) end
        local n = count(cs.counters)
        if n < 1 or n > 32 then bad("%s: %d counters", cs.name, n) end
        for k in pairs(cs.counters) do
          if not is_dns_label(k) then bad("counter name %s", k) end
        end
        if p.sets[cs.name] then bad("%s: counter set %s twice in pool", name, cs.name) end
        p.sets[cs.name] = cs.counters
      end
      for _, d in ipairs(devs) do
        if not is_dns_label(d.name) then bad("device name %q", d.name) end
        if p.devices[d.name] then bad("%s: device %s twice in pool", key, d.name) end
        p.devices[d.name] = true
        local n = count(d.attributes) + count(d.capacity)
        if n > 32 then bad("%s: %d attributes+capacities", d.name, n) end
        for k, v in pairs(d.attributes or {}) do
          local dom, id = k:match("^([^/]+)/([^/]+)$")
          id = id or k
          if not id:match("^[A-Za-z_][A-Za-z0-9_]*$") or #id > 32 then bad("%s: key %s", d.name, k) end
          if dom and (#dom > 63 or not dom:match("^[a-z0-9][-a-z0-9.]*$")) then bad("%s: domain %s", d.name, k) end
          if count(v) ~= 1 then bad("%s: %s must set exactly one value", d.name, k) end
          local sv = v.string or v.version
          if sv and #sv > 64 then bad("%s: %s longer than 64", d.name, k) end
          if v.version and not v.version:match("^%d+%.%d+%.%d+$") then bad("%s: version %s", d.name, v.version) end
        end
        local cc = d.consumesCounters or {}
        if #cc > 2 then bad("%s: %d consumesCounters", d.name, #cc) end
        for _, c in ipairs(cc) do
          consumed = consumed + count(c.counters)
          p.consumers[#p.consumers + 1] = { dev = d.name, c = c }
        end
      end
      if consumed > 1024 then bad("%s: %d consumed counters", name, consumed) end
    end
  end
  for key, p in pairs(pools) do
    local n = count(p.counts)
    if n ~= 1 or not p.counts[p.slices] then bad("%s: resourceSliceCount does not match %d slices", key, p.slices) end
    for _, x in ipairs(p.consumers) do
      local set = p.sets[x.c.counterSet]
      if not set then
        bad("%s: %s consumes unknown set %s", key, x.dev, x.c.counterSet)
      else
        for k in pairs(x.c.counters) do
          if not set[k] then bad("%s: %s consumes unknown counter %s", key, x.dev, k) end
        end
      end
    end
  end
  return problems
end

local function slices_of(objs, driver, node)
  local r = {}
  for _, o in ipairs(objs) do
    if o.kind == "ResourceSlice" and (not driver or o.spec.driver == driver)
        and (not node or o.spec.nodeName == node) then
      r[#r + 1] = o
    end
  end
  return r
end

local function devices_of(objs, driver, node)
  local r = {}
  for _, s in ipairs(slices_of(objs, driver, node)) do
    for _, d in ipairs(s.spec.devices or {}) do r[#r + 1] = d end
  end
  return r
end

local function attr(d, k)
  local v = d.attributes and d.attributes[k]
  if not v then return nil end
  return v.string or v.int or v.version or v.bool
end

describe("sim", function()
  describe("shapes", function()
    it("lists the real hardware shapes with their sizes", function()
      local names = {}
      for _, s in ipairs(core.sim_shapes()) do names[s.name] = s end
      for _, n in ipairs({ "dgx-h100", "dgx-h200", "dgx-h100-mig", "aws-p4d", "aws-p5", "gb200-tray",
                           "mi300x", "mi300x-dpx", "mi300x-cpx", "cpu-2socket" }) do
        assert.is_table(names[n], n)
      end
      assert.are.equal(8, names["dgx-h100"].gpus)
      assert.are.equal(4, names["gb200-tray"].gpus)
      assert.are.equal("amd", names["mi300x"].vendor)
      assert.is_true(names["dgx-h100-mig"].mig)
    end)
  end)

  describe("determinism", function()
    it("gives identical bytes for the same seed", function()
      local a = core.sim_text{ seed = 42, nodes = 12 }
      local b = core.sim_text{ seed = 42, nodes = 12 }
      assert.are.equal(a, b)
      local rc1, out1 = H.run({ "sim", "--seed", "42", "--nodes", "12", "-o", "json" })
      local rc2, out2 = H.run({ "sim", "--seed", "42", "--nodes", "12", "-o", "json" })
      assert.are.equal(0, rc1)
      assert.are.equal(0, rc2)
      assert.are.equal(out1, out2)
      assert.truthy(#out1 > 10000)
    end)

    it("gives different clusters for different seeds", function()
      local a = core.sim_text{ seed = 1, shapes = "dgx-h100" }
      local b = core.sim_text{ seed = 2, shapes = "dgx-h100" }
      assert.are_not.equal(a, b)
      local ga = devices_of(core.sim{ seed = 1, shapes = "dgx-h100" }, "gpu.nvidia.com")
      local gb = devices_of(core.sim{ seed = 2, shapes = "dgx-h100" }, "gpu.nvidia.com")
      assert.are_not.equal(attr(ga[1], "uuid"), attr(gb[1], "uuid"))
      -- only the random parts differ: names and topology are the shape's
      assert.are.equal(ga[1].name, gb[1].name)
      assert.are.equal(attr(ga[1], "resource.kubernetes.io/pcieRoot"), attr(gb[1], "resource.kubernetes.io/pcieRoot"))
    end)

    it("does not shift a node's identity when nodes are added after it", function()
      local small = core.sim{ seed = 5, shapes = "dgx-h100:2,aws-p5:1", node_objects = false, classes = false }
      local big = core.sim{ seed = 5, shapes = "dgx-h100:2,aws-p5:1", nodes = 30, node_objects = false, classes = false }
      local a = devices_of(small, "gpu.nvidia.com", "dgx-h100-001")
      local b = devices_of(big, "gpu.nvidia.com", "dgx-h100-001")
      assert.are.equal(8, #a)
      assert.are.equal(attr(a[3], "uuid"), attr(b[3], "uuid"))
    end)
  end)

  describe("validation", function()
    it("gives objects that every one validate through the model", function()
      local mix = {}
      for _, sh in ipairs(core.sim_shapes()) do mix[#mix + 1] = sh.name .. ":2" end
      local objs = core.sim{ seed = 11, shapes = table.concat(mix, ",") }
      local g = core.graph()
      for i, o in ipairs(objs) do
        local ok, msg = g:check(o)
        assert.is_true(ok, string.format("object %d (%s %s): %s", i, o.kind, o.metadata.name, tostring(msg)))
      end
    end)

    it("loads the default cluster into a graph with complete pools", function()
      local g = core.graph()
      g:apply(core.sim_text{ seed = 4 })
      local st = g:stats()
      assert.are.equal(32, st.nodes)
      assert.truthy(st.devices > 900)
      for _, p in ipairs(g:pools()) do
        assert.is_true(p.complete, p.driver .. "/" .. p.name)
      end
    end)
  end)

  describe("API limits", function()
    it("holds for every shape", function()
      local mix = {}
      for _, s in ipairs(core.sim_shapes()) do mix[#mix + 1] = s.name .. ":2" end
      local objs = core.sim{ seed = 3, shapes = table.concat(mix, ",") }
      assert.are.same({}, limit_problems(objs))
    end)

    it("splits a DynamicMIG pool into a counter slice and device slices of at most 64", function()
      local objs = core.sim{ seed = 1, shapes = "dgx-h100-mig" }
      local sl = slices_of(objs, "gpu.nvidia.com")
      assert.are.equal(4, #sl)
      local sets, devs = 0, 0
      for _, s in ipairs(sl) do
        assert.are.equal(4, s.spec.pool.resourceSliceCount)
        assert.are.equal("dgx-h100-mig-000", s.spec.pool.name)
        sets = sets + #(s.spec.sharedCounters or {})
        devs = devs + #(s.spec.devices or {})
        assert.truthy(#(s.spec.devices or {}) <= 64)
      end
      assert.are.equal(8, sets)
      assert.are.equal(8 * 19, devs) -- a full GPU + 18 placements per GPU
    end)
  end)

  describe("NVIDIA shapes", function()
    it("pairs each DGX GPU with a rail NIC on the same PCIe root, 4 per NUMA node", function()
      local objs = core.sim{ seed = 1, shapes = "dgx-h100" }
      local nic_root = {}
      for _, n in ipairs(devices_of(objs, "dra.net")) do
        if attr(n, "dra.net/rdmaDevice") and attr(n, "dra.net/encapsulation") == "infiniband" then
          nic_root[attr(n, "resource.kubernetes.io/pcieRoot")] = attr(n, "dra.net/numaNode")
        end
      end
      local gpus = devices_of(objs, "gpu.nvidia.com")
      assert.are.equal(8, #gpus)
      local per_numa = { [0] = 0, [1] = 0 }
      for _, g in ipairs(gpus) do
        local root = attr(g, "resource.kubernetes.io/pcieRoot")
        local numa = attr(g, "resource.kubernetes.io/numaNode")
        assert.are.equal(numa, nic_root[root], g.name)
        per_numa[numa] = per_numa[numa] + 1
        assert.are.equal("NVIDIA H100 80GB HBM3", attr(g, "productName"))
        assert.are.equal("81559Mi", g.capacity.memory.value)
        assert.truthy(attr(g, "uuid"):match("^GPU%-%x+%-%x+%-%x+%-%x+%-%x+$"))
      end
      assert.are.same({ [0] = 4, [1] = 4 }, per_numa)
    end)

    it("lays out AWS p4d as the live dump: 2 GPUs and 1 EFA per root, no GPU numaNode", function()
      local objs = core.sim{ seed = 1, shapes = "aws-p4d" }
      local roots = {}
      for _, g in ipairs(devices_of(objs, "gpu.nvidia.com")) do
        local r = attr(g, "resource.kubernetes.io/pcieRoot")
        roots[r] = (roots[r] or 0) + 1
        assert.is_nil(attr(g, "resource.kubernetes.io/numaNode"))
        assert.are.equal("40Gi", g.capacity.memory.value)
      end
      assert.are.same({ ["pci0000:10"] = 2, ["pci0000:20"] = 2, ["pci0000:90"] = 2, ["pci0000:a0"] = 2 }, roots)
      local efa = 0
      for _, n in ipairs(devices_of(objs, "dra.net")) do
        if attr(n, "dra.net/pciDevice") == "Elastic Fabric Adapter (EFA)" then
          efa = efa + 1
          assert.truthy(roots[attr(n, "resource.kubernetes.io/pcieRoot")])
        end
      end
      assert.are.equal(4, efa)
      local found = false
      for _, n in ipairs(devices_of(objs, "dra.net")) do
        if n.name == "pci-0000-a0-1b-0" then found = true end
      end
      assert.is_true(found)
    end)

    it("keeps GB200 NICs on other roots than the GPUs and labels the NVL72 clique", function()
      local objs = core.sim{ seed = 1, shapes = "gb200-tray", nodes = 20 }
      local groot = {}
      for _, g in ipairs(devices_of(objs, "gpu.nvidia.com", "gb200-tray-000")) do
        groot[attr(g, "resource.kubernetes.io/pcieRoot")] = true
        assert.are.equal("ATS", attr(g, "addressingMode"))
      end
      assert.are.equal(4, count(groot))
      for _, n in ipairs(devices_of(objs, "dra.net", "gb200-tray-000")) do
        assert.is_nil(groot[attr(n, "resource.kubernetes.io/pcieRoot")])
        assert.is_string(attr(n, "oke.dra.net/rackId"))
      end
      local clique = {}
      for _, o in ipairs(objs) do
        if o.kind == "Node" then clique[o.metadata.name] = o.metadata.labels["nvidia.com/gpu.cliqueid"] end
      end
      assert.are.equal(clique["gb200-tray-000"], clique["gb200-tray-017"])
      assert.are_not.equal(clique["gb200-tray-000"], clique["gb200-tray-018"])
    end)

    it("makes MIG placements consume exactly the GPU's counters when they fill it", function()
      local objs = core.sim{ seed = 1, shapes = "dgx-h100-mig" }
      local set, devs = nil, {}
      for _, s in ipairs(slices_of(objs, "gpu.nvidia.com")) do
        for _, cs in ipairs(s.spec.sharedCounters or {}) do
          if cs.name == "gpu-0-counter-set" then set = cs.counters end
        end
        for _, d in ipairs(s.spec.devices or {}) do devs[d.name] = d end
      end
      assert.is_table(set)
      assert.are.equal("132", set.multiprocessors.value)
      -- 4g.40gb at 0 + 3g.40gb at 4 cover every memory slice once
      local slices = {}
      for _, n in ipairs({ "gpu-0-mig-4g40gb-5-0", "gpu-0-mig-3g40gb-9-4" }) do
        local d = assert(devs[n], n)
        assert.are.equal("mig", attr(d, "type"))
        assert.are.equal(attr(devs["gpu-0"], "uuid"), attr(d, "parentUUID"))
        for k in pairs(d.consumesCounters[1].counters) do
          if k:match("^memory%-slice") then
            assert.is_nil(slices[k], k)
            slices[k] = true
          end
        end
      end
      assert.are.equal(8, count(slices))
      -- the full GPU consumes the whole set
      assert.are.equal(count(set), count(devs["gpu-0"].consumesCounters[1].counters))
      assert.are.equal("40448Mi", devs["gpu-0-mig-3g40gb-9-4"].capacity.memory.value)
    end)

    it("publishes VFIO devices with the driver's `numa` attribute", function()
      local devs = devices_of(core.sim{ seed = 1, shapes = "hgx-h100-vfio" }, "gpu.nvidia.com")
      assert.are.equal(8, #devs)
      assert.are.equal("gpu-vfio-0", devs[1].name)
      assert.are.equal("vfio", attr(devs[1], "type"))
      assert.are.equal(0, attr(devs[1], "numa"))
      assert.are.equal("0x10de", attr(devs[1], "vendorID"))
    end)
  end)

  describe("AMD and CPU shapes", function()
    it("gives MI300X DPX 16 partitions, two per GPU sharing a deviceID", function()
      local devs = devices_of(core.sim{ seed = 1, shapes = "mi300x-dpx" }, "gpu.amd.com")
      assert.are.equal(16, #devs)
      local by = {}
      for _, d in ipairs(devs) do
        assert.are.equal("amdgpu-partition", attr(d, "type"))
        assert.are.equal("152", d.capacity.computeUnits.value)
        assert.are.equal("98296Mi", d.capacity.memory.value)
        assert.is_number(attr(d, "numaNode")) -- bare key, the driver's own domain
        local id = attr(d, "deviceID")
        by[id] = (by[id] or 0) + 1
      end
      for _, n in pairs(by) do assert.are.equal(2, n) end
      assert.are.equal(8, count(by))
    end)

    it("gives MI300X SPX whole GPUs with the verified capacities", function()
      local devs = devices_of(core.sim{ seed = 1, shapes = "mi300x" }, "gpu.amd.com")
      assert.are.equal(8, #devs)
      assert.are.equal("amdgpu", attr(devs[1], "type"))
      assert.are.equal("304", devs[1].capacity.computeUnits.value)
      assert.are.equal("1216", devs[1].capacity.simdUnits.value)
      assert.are.equal("196592Mi", devs[1].capacity.memory.value)
    end)

    it("publishes dra.cpu grouped devices that allow multiple allocations", function()
      local devs = devices_of(core.sim{ seed = 1, shapes = "cpu-2socket" }, "dra.cpu")
      assert.are.equal(2, #devs)
      assert.are.equal("cpudevnuma000", devs[1].name)
      assert.is_true(devs[1].allowMultipleAllocations)
      assert.are.equal("64", devs[1].capacity["dra.cpu/cpu"].value)
      assert.are.equal(1, attr(devs[2], "resource.kubernetes.io/numaNode"))
    end)
  end)

  describe("DeviceClasses", function()
    it("ships the charts' classes, gpu.nvidia.com serving nvidia.com/gpu", function()
      local classes = {}
      for _, o in ipairs(core.sim{ seed = 1 }) do
        if o.kind == "DeviceClass" then classes[o.metadata.name] = o end
      end
      for _, n in ipairs({ "gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com", "gpu.amd.com",
                           "dranet.net", "efa.networking.k8s.aws", "dra.cpu",
                           "compute-domain-daemon.nvidia.com" }) do
        assert.is_table(classes[n], n)
      end
      assert.are.equal("nvidia.com/gpu", classes["gpu.nvidia.com"].spec.extendedResourceName)
      assert.is_nil(classes["mig.nvidia.com"].spec.extendedResourceName)
    end)

    it("emits only the classes of drivers in the cluster", function()
      local names = {}
      for _, o in ipairs(core.sim{ seed = 1, shapes = "cpu-2socket" }) do
        if o.kind == "DeviceClass" then names[#names + 1] = o.metadata.name end
      end
      assert.are.same({ "dranet.net", "dra.cpu" }, names)
    end)
  end)

  describe("plan", function()
    it("spreads nodes over the weights", function()
      local n = {}
      for _, o in ipairs(core.sim{ shapes = "dgx-h100:3,aws-p5:1", nodes = 10, classes = false }) do
        if o.kind == "Node" then
          local s = o.metadata.labels["draengine.dev/shape"]
          n[s] = (n[s] or 0) + 1
        end
      end
      assert.are.same({ ["dgx-h100"] = 8, ["aws-p5"] = 2 }, n)
    end)

    it("refuses unknown shapes, bad weights and duplicates", function()
      assert.has_error(function() core.sim{ shapes = "dgx-h900" } end, 'unknown shape "dgx-h900" (see --list-shapes)')
      assert.has_error(function() core.sim{ shapes = "dgx-h100:0" } end)
      assert.has_error(function() core.sim{ shapes = "dgx-h100,dgx-h100" } end,
        'shape "dgx-h100" is listed twice')
    end)
  end)

  describe("command", function()
    it("writes YAML documents by default and a List with -o json", function()
      local rc, out = H.run({ "sim", "--shape", "cpu-2socket" })
      assert.are.equal(0, rc)
      local docs = select(2, out:gsub("%-%-%-\n", ""))
      assert.are.equal(2 + 1 + 2, docs) -- 2 classes, 1 Node, 2 slices
      rc, out = H.run({ "sim", "--shape", "cpu-2socket", "-o", "json", "--no-classes", "--no-nodes" })
      assert.are.equal(0, rc)
      assert.truthy(out:match('^{\n  "apiVersion": "v1",\n  "items": %['))
      assert.truthy(out:match('"kind": "List"\n}\n$'))
    end)

    it("lists shapes", function()
      local rc, out = H.run({ "sim", "--list-shapes" })
      assert.are.equal(0, rc)
      assert.truthy(out:find("\ndgx-h100 ", 1, true))
      assert.truthy(out:find("\nmi300x-cpx ", 1, true))
    end)

    it("exits 2 on bad flags with a clear message", function()
      local rc, _, err = H.run({ "sim", "--shape", "nope" })
      assert.are.equal(2, rc)
      assert.truthy(err:find('unknown shape "nope"', 1, true))
      rc, _, err = H.run({ "sim", "--nodes", "0" })
      assert.are.equal(2, rc)
      assert.truthy(err:find("--nodes", 1, true))
      rc, _, err = H.run({ "sim", "-o", "xml" })
      assert.are.equal(2, rc)
      assert.truthy(err:find('unknown format "xml"', 1, true))
    end)

    it("writes manifests the model accepts (draengine inspect)", function()
      local mix = {}
      for _, sh in ipairs(core.sim_shapes()) do mix[#mix + 1] = sh.name end
      local rc, out = H.run({ "sim", "--seed", "9", "--shape", table.concat(mix, ",") })
      assert.are.equal(0, rc)
      local irc, iout, ierr = H.run({ "inspect", "-f", "-" }, out)
      assert.are.equal(0, irc, ierr .. iout)
      assert.truthy(iout:find("12 nodes, ", 1, true))
    end)
  end)
end)
