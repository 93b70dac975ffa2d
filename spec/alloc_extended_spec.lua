-- alloc_extended_spec.lua - the claim for extended resources backed by DRA
-- (KEP-5004, dra-model.md 4.3): requests per container, init containers'
-- remainders merged into one request sized to the largest, the request
-- mappings, and which resources a node leaves to DRA.  The same code builds
-- the claim for al_schedule_pod and for `draengine serve`.
local core = require "draengine.core"

local function pod(name, init, containers)
  local function conv(list)
    local out = {}
    for i, c in ipairs(list) do
      -- as the API server takes them: an extended resource's limit equals its request
      local limits = c.limits
      if c.requests and not limits then
        limits = {}
        for k, v in pairs(c.requests) do if k:find("/", 1, true) then limits[k] = v end end
      end
      out[i] = { name = c.name, image = "x", resources = { requests = c.requests, limits = limits },
                 restartPolicy = c.sidecar and "Always" or nil }
    end
    return out
  end
  return { apiVersion = "v1", kind = "Pod", metadata = { name = name, namespace = "default", uid = "uid-" .. name },
           spec = { initContainers = #init > 0 and conv(init) or nil, containers = conv(containers) } }
end

local function setup(p, extra)
  local g = core.graph()
  g:apply({ apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "gpu" },
            spec = { extendedResourceName = "example.com/gpu",
                     selectors = { { cel = { expression = 'device.driver == "gpu.example.com"' } } } } })
  g:apply({ apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "fpga" },
            spec = { selectors = { { cel = { expression = 'device.driver == "fpga.example.com"' } } } } })
  for _, o in ipairs(extra or {}) do g:apply(o) end
  g:apply(p)
  return g, core.allocator(g)
end

local function req(name, count, class)
  return { name = name, exactly = { deviceClassName = class or "gpu", allocationMode = "ExactCount", count = count } }
end

local function map(container, request, resource)
  return { containerName = container, resourceName = resource or "example.com/gpu", requestName = request }
end

describe("extended resource claim (KEP-5004)", function()
  it("one request per container, named by container index and the resource's index among its requests", function()
    local g, a = setup(pod("p", {}, {
      { name = "a", requests = { cpu = "1", ["example.com/gpu"] = "1", memory = "1Gi" } },
      { name = "b", requests = { ["example.com/gpu"] = "2" } },
    }))
    local x = a:extended_claim("default", "p")
    assert.are.same({ req("container-0-request-1", 1), req("container-1-request-0", 2) }, x.requests)
    assert.are.same({ map("a", "container-0-request-1"), map("b", "container-1-request-0") }, x.mappings)
    a:close()
  end)

  it("limits stand in for missing requests; zero amounts do not count", function()
    local g, a = setup(pod("p", {}, {
      { name = "a", limits = { ["example.com/gpu"] = "3" } },
      { name = "b", requests = { ["example.com/gpu"] = "0" } },
    }))
    local x = a:extended_claim("default", "p")
    assert.are.same({ req("container-0-request-0", 3) }, x.requests)
    assert.are.same({ map("a", "container-0-request-0") }, x.mappings)
    a:close()
  end)

  it("refuses what the API server refuses: fractions, negative amounts, requests without their limit", function()
    local function refused(containers)
      local ok, err = pcall(setup, pod("p", {}, containers))
      assert.is_false(ok)
      return tostring(err)
    end
    local err = refused({ { name = "c", requests = { ["example.com/gpu"] = "500m" } } })
    assert.truthy(err:find('spec.containers[0].resources.requests["example.com/gpu"]: Invalid value: "500m": ' ..
      "must be an integer", 1, true), err)
    err = refused({ { name = "c", limits = { ["example.com/gpu"] = "-1" } } })
    assert.truthy(err:find('limits["example.com/gpu"]: Invalid value: "-1": must be greater than or equal to 0', 1, true), err)
    err = refused({ { name = "c", requests = { ["example.com/gpu"] = "1" }, limits = { cpu = "1" } } })
    assert.truthy(err:find("spec.containers[0].resources.limits: Required value: Limit must be set for non " ..
      "overcommitable resources", 1, true), err)
    err = refused({ { name = "c", requests = { ["example.com/gpu"] = "1" }, limits = { ["example.com/gpu"] = "2" } } })
    assert.truthy(err:find('spec.containers[0].resources.requests: Invalid value: "1": must be equal to ' ..
      "example.com/gpu limit of 2", 1, true), err)
    err = refused({ { name = "c", requests = { cpu = "2" }, limits = { cpu = "1" } } })
    assert.truthy(err:find('spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to ' ..
      "cpu limit of 1", 1, true), err)
  end)

  it("plain init containers ask for the remainder after later long-lived containers, merged into the largest", function()
    -- init-0 needs 4: main (index 2) covers 1, remainder 3; init-1 needs 2: remainder 1.
    -- One request for both, sized 3 and named after init-0; init-1's mapping is rewritten.
    local g, a = setup(pod("p", {
      { name = "init-0", requests = { ["example.com/gpu"] = "4" } },
      { name = "init-1", requests = { ["example.com/gpu"] = "2" } },
    }, {
      { name = "main", requests = { ["example.com/gpu"] = "1" } },
    }))
    local x = a:extended_claim("default", "p")
    assert.are.same({ req("container-0-request-0", 3), req("container-2-request-0", 1) }, x.requests)
    assert.are.same({
      map("main", "container-2-request-0"),
      map("init-0", "container-2-request-0"), map("init-0", "container-0-request-0"),
      map("init-1", "container-2-request-0"), map("init-1", "container-0-request-0"),
    }, x.mappings)
    a:close()
  end)

  it("the largest remainder wins even when it comes later; ties keep the first", function()
    local g, a = setup(pod("p", {
      { name = "small", requests = { ["example.com/gpu"] = "1" } },
      { name = "big", requests = { ["example.com/gpu"] = "5" } },
      { name = "same", requests = { ["example.com/gpu"] = "5" } },
    }, {
      { name = "main", requests = { cpu = "1" } },
    }))
    local x = a:extended_claim("default", "p")
    assert.are.same({ req("container-1-request-0", 5) }, x.requests)
    assert.are.same({ map("small", "container-1-request-0"), map("big", "container-1-request-0"),
                      map("same", "container-1-request-0") }, x.mappings)
    a:close()
  end)

  it("an init container covered by later containers asks for nothing and maps to their requests", function()
    local g, a = setup(pod("p", {
      { name = "init", requests = { ["example.com/gpu"] = "3" } },
    }, {
      { name = "a", requests = { ["example.com/gpu"] = "2" } },
      { name = "b", requests = { ["example.com/gpu"] = "2" } },
    }))
    local x = a:extended_claim("default", "p")
    assert.are.same({ req("container-1-request-0", 2), req("container-2-request-0", 2) }, x.requests)
    assert.are.same({ map("a", "container-1-request-0"), map("b", "container-2-request-0"),
                      map("init", "container-1-request-0"), map("init", "container-2-request-0") }, x.mappings)
    a:close()
  end)

  it("sidecars get their own request; a plain init container counts only long-lived containers at or after it", function()
    local g, a = setup(pod("p", {
      { name = "side", sidecar = true, requests = { ["example.com/gpu"] = "1" } },
      { name = "init", requests = { ["example.com/gpu"] = "2" } },
    }, {
      { name = "main", requests = { ["example.com/gpu"] = "1" } },
    }))
    local x = a:extended_claim("default", "p")
    assert.are.same({ req("container-0-request-0", 1), req("container-1-request-0", 1),
                      req("container-2-request-0", 1) }, x.requests)
    assert.are.same({ map("side", "container-0-request-0"), map("main", "container-2-request-0"),
                      map("init", "container-2-request-0"), map("init", "container-1-request-0") }, x.mappings)
    a:close()
  end)

  it("several resources, in name order; a node offering one leaves only the other to DRA", function()
    local node = { apiVersion = "v1", kind = "Node", metadata = { name = "n1" },
                   status = { allocatable = { ["example.com/gpu"] = "4" } } }
    local g, a = setup(pod("p", {}, {
      { name = "a", requests = { ["example.com/gpu"] = "1",
                                 ["deviceclass.resource.kubernetes.io/fpga"] = "2" } },
    }), { node })
    local x = a:extended_claim("default", "p")
    assert.are.same({ req("container-0-request-0", 2, "fpga"), req("container-0-request-1", 1) }, x.requests)
    assert.are.same({ map("a", "container-0-request-0", "deviceclass.resource.kubernetes.io/fpga"),
                      map("a", "container-0-request-1") }, x.mappings)
    local y = a:extended_claim("default", "p", "n1")
    assert.are.same({ req("container-0-request-0", 2, "fpga") }, y.requests)
    a:close()
  end)

  it("scheduling allocates the merged request and names the claim after the pod", function()
    local devs = {}
    for i = 0, 3 do devs[#devs + 1] = { name = "gpu-" .. i } end
    local slice = { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "s" },
                    spec = { driver = "gpu.example.com", nodeName = "n1", devices = devs,
                             pool = { name = "n1", generation = 1, resourceSliceCount = 1 } } }
    local node = { apiVersion = "v1", kind = "Node", metadata = { name = "n1" } }
    local g, a = setup(pod("p", {
      { name = "init-0", requests = { ["example.com/gpu"] = "2" } },
      { name = "init-1", requests = { ["example.com/gpu"] = "3" } },
    }, {
      { name = "main", requests = { ["example.com/gpu"] = "1" } },
    }), { slice, node })
    local r = a:schedule("default", "p")
    assert.are.equal("scheduled", r.status, r.reason)
    local c = r.claims[#r.claims]
    assert.matches("^p%-extended%-resources%-%w%w%w%w%w$", c.name)
    local got = {}
    for _, x in ipairs(c.allocation.devices.results) do got[x.request] = (got[x.request] or 0) + 1 end
    -- main: 1; inits: max(2 - 1, 3 - 1) = 2, one request named after init-1
    assert.are.same({ ["container-1-request-0"] = 2, ["container-2-request-0"] = 1 }, got)
    a:close()
  end)
end)
