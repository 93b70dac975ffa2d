-- features_e2e.lua - the DRA features beyond one device per claim, on a real
-- control plane: partitionable devices with shared counters (KEP-4815),
-- consumable capacity (KEP-5075), prioritized lists (KEP-4816) and admin
-- access in a labelled namespace (KEP-5018).
local E = require "e2e.support.e2e"
local K = require "support.kubeapi"

local NS = "e2e-features"
local DRIVER = "gpu.e2e.example.com"

local function claim(name, request)
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim",
    metadata = { name = name, namespace = NS }, spec = { devices = { requests = { request } } } }
end

local function pod(name, claim_name, ns)
  return K.pod(ns or NS, name, { claims = { { name = "gpu", resourceClaimName = claim_name } } })
end

local function sel(expr) return { { cel = { expression = expr } } } end

local function pending(name, ns)
  E.wait(function()
    for _, e in ipairs(E.events(ns or NS, name)) do if e.reason == "FailedScheduling" then return e end end
  end, 60, "FailedScheduling for " .. name)
  assert.is_nil(E.bound(ns or NS, name))
end

local function results(ns, claim_name)
  local c = E.get("ResourceClaim", ns or NS, claim_name)
  return c.status.allocation.devices.results, c
end

describe("serve on a real control plane: DRA features", function()
  local mark, p
  before_each(function()
    mark = E.audit_mark()
    E.namespace(NS)
    E.node("feat-n1")
    E.create(K.class("e2e-gpu", DRIVER))
  end)
  after_each(function() E.reset() end)

  local function start() p = E.serve{ "--pod-initial-backoff=100ms", "--pod-max-backoff=1s" } end
  local function bound(name, ns) return E.wait(function() return E.bound(ns or NS, name) end, 60, name .. " bound") end
  local function assert_clean()
    assert.are.same({}, E.check())
    assert.are.same({}, E.stop_serves())
    assert.are.same({}, E.refused(mark))
    assert.are.same({}, E.warnings(p))
  end

  it("allocates partitions of one device within its shared counters", function()
    local pool = { name = "feat-n1", generation = 1, resourceSliceCount = 2 }
    E.create({ apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "feat-n1-counters" },
      spec = { driver = DRIVER, nodeName = "feat-n1", pool = pool,
        sharedCounters = { { name = "gpu-0-mem", counters = { memory = { value = "80Gi" } } } } } })
    local function part(name, kind, mem)
      return { name = name, attributes = { type = { string = kind } },
        capacity = { memory = { value = mem } },
        consumesCounters = { { counterSet = "gpu-0-mem", counters = { memory = { value = mem } } } } }
    end
    E.create({ apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "feat-n1-devices" },
      spec = { driver = DRIVER, nodeName = "feat-n1", pool = pool,
        devices = { part("gpu-0", "full", "80Gi"), part("gpu-0-half-0", "half", "40Gi"),
          part("gpu-0-half-1", "half", "40Gi") } } })
    local function want(kind)
      return { name = "gpu", exactly = { deviceClassName = "e2e-gpu",
        selectors = sel('device.attributes["' .. DRIVER .. '"].type == "' .. kind .. '"') } }
    end
    E.create(claim("half-a", want("half")))
    E.create(claim("full", want("full")))
    E.create(claim("half-b", want("half")))
    start()
    E.create(pod("half-a", "half-a"))
    bound("half-a")
    E.create(pod("full", "full"))
    pending("full")
    E.create(pod("half-b", "half-b"))
    bound("half-b")
    local ra, rb = results(NS, "half-a"), results(NS, "half-b")
    local got = { ra[1].device, rb[1].device }
    table.sort(got)
    assert.are.same({ "gpu-0-half-0", "gpu-0-half-1" }, got)
    assert.is_nil(E.bound(NS, "full"), "the full device shares its counters with both halves")
    assert_clean()
  end)

  it("shares a device by consumable capacity and stops at its capacity", function()
    E.create({ apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "feat-n1-shared" },
      spec = { driver = DRIVER, nodeName = "feat-n1", pool = { name = "feat-n1", generation = 1, resourceSliceCount = 1 },
        devices = { { name = "shared-0", allowMultipleAllocations = true,
          capacity = { memory = { value = "80Gi", requestPolicy = { default = "10Gi",
            validRange = { min = "10Gi", step = "10Gi" } } } } } } } })
    local function want(mem)
      return { name = "gpu", exactly = { deviceClassName = "e2e-gpu", capacity = { requests = { memory = mem } } } }
    end
    for _, c in ipairs({ { "s30a", "30Gi" }, { "s30b", "30Gi" }, { "s30c", "30Gi" }, { "s20", "20Gi" } }) do
      E.create(claim(c[1], want(c[2])))
    end
    start()
    E.create(pod("s30a", "s30a"))
    E.create(pod("s30b", "s30b"))
    bound("s30a"); bound("s30b")
    E.create(pod("s30c", "s30c"))
    pending("s30c")
    E.create(pod("s20", "s20"))
    bound("s20")
    local shares = {}
    for _, n in ipairs({ "s30a", "s30b", "s20" }) do
      local r = results(NS, n)[1]
      assert.are.equal("shared-0", r.device)
      assert.is_string(r.shareID, "a shared allocation names its share")
      assert.is_nil(shares[r.shareID]); shares[r.shareID] = true
      assert.are.equal(n == "s20" and "20Gi" or "30Gi", r.consumedCapacity.memory)
    end
    assert.is_nil(E.bound(NS, "s30c"), "80Gi hold 30+30+20, not another 30")
    assert_clean()
  end)

  it("takes the first available alternative of a prioritized list", function()
    local s = K.slice("feat-n1", DRIVER, 3)
    s.spec.devices[1].attributes.size = { string = "big" }
    s.spec.devices[2].attributes.size = { string = "small" }
    s.spec.devices[3].attributes.size = { string = "small" }
    E.create(s)
    local function alt(name, size)
      return { name = name, deviceClassName = "e2e-gpu", selectors = sel('device.attributes["' .. DRIVER .. '"].size == "' .. size .. '"') }
    end
    for i = 1, 4 do
      E.create(claim("pl-" .. i, { name = "gpu", firstAvailable = { alt("big", "big"), alt("small", "small") } }))
    end
    start()
    for i = 1, 3 do E.create(pod("pl-" .. i, "pl-" .. i)); bound("pl-" .. i) end
    E.create(pod("pl-4", "pl-4"))
    pending("pl-4")
    assert.are.equal("gpu/big", results(NS, "pl-1")[1].request)
    assert.are.equal("gpu-0", results(NS, "pl-1")[1].device)
    assert.are.equal("gpu/small", results(NS, "pl-2")[1].request)
    assert.are.equal("gpu/small", results(NS, "pl-3")[1].request)
    assert_clean()
  end)

  it("gives admin access to a device in use, in a namespace labelled for it", function()
    E.create(K.slice("feat-n1", DRIVER, 1))
    local ADMIN = "e2e-features-admin"
    E.namespace(ADMIN, { ["resource.kubernetes.io/admin-access"] = "true" })
    E.create(claim("user", { name = "gpu", exactly = { deviceClassName = "e2e-gpu" } }))
    local ac = claim("monitor", { name = "gpu", exactly = { deviceClassName = "e2e-gpu", adminAccess = true } })
    ac.metadata.namespace = ADMIN
    E.create(ac)
    -- the real server refuses admin access outside such a namespace
    local st = E.request("POST", E.path("ResourceClaim", NS) .. "?fieldValidation=Strict",
      claim("monitor-denied", { name = "gpu", exactly = { deviceClassName = "e2e-gpu", adminAccess = true } }))
    assert.are_not.equal(201, st)
    start()
    E.create(pod("user", "user"))
    bound("user")
    E.create(pod("monitor", "monitor", ADMIN))
    bound("monitor", ADMIN)
    local r = results(ADMIN, "monitor")[1]
    assert.are.equal("gpu-0", r.device)
    assert.is_true(r.adminAccess)
    assert.are.equal("gpu-0", results(NS, "user")[1].device)
    -- admin access does not consume: a second plain claim still finds nothing
    E.create(claim("user-2", { name = "gpu", exactly = { deviceClassName = "e2e-gpu" } }))
    E.create(pod("user-2", "user-2"))
    pending("user-2")
    assert_clean()
  end)
end)
