-- model_validation_spec.lua - every validation rule of dra-model.md 1.1 and
-- pkg/apis/resource/validation, with the API server's field path and message.
local core = require "draengine.core"

local function deepcopy(t)
  if type(t) ~= "table" then return t end
  local c = {}
  for k, v in pairs(t) do c[k] = deepcopy(v) end
  return setmetatable(c, getmetatable(t))
end

local function slice(mut)
  local s = {
    apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "s" },
    spec = {
      driver = "gpu.example.com", nodeName = "node-1",
      pool = { name = "node-1", generation = 1, resourceSliceCount = 1 },
      devices = { { name = "gpu-0", attributes = { model = { string = "H100" } }, capacity = { memory = { value = "80Gi" } } } },
    },
  }
  if mut then mut(s.spec, s.spec.devices[1], s) end
  return s
end

local function claim(mut, api)
  local c = {
    apiVersion = api or "resource.k8s.io/v1", kind = "ResourceClaim", metadata = { name = "c", namespace = "ns" },
    spec = { devices = { requests = { { name = "gpu", exactly = { deviceClassName = "gpu.example.com" } } } } },
  }
  if mut then mut(c.spec.devices, c.spec.devices.requests[1], c) end
  return c
end

local function class(mut)
  local c = { apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "gpu.example.com" },
              spec = { selectors = { { cel = { expression = "device.driver == 'gpu.example.com'" } } } } }
  if mut then mut(c.spec, c) end
  return c
end

local function fails(obj, want, g)
  g = g or core.graph()
  local ok, msg = g:check(obj)
  assert.is_nil(ok, "expected a validation error containing: " .. want)
  assert.truthy(msg:find(want, 1, true), "\nwant: " .. want .. "\ngot:  " .. tostring(msg))
  return msg
end

local function passes(obj, g)
  g = g or core.graph()
  local ok, msg = g:check(obj)
  assert.is_true(ok, msg)
end

local function devices(n, extra)
  local out = {}
  for i = 1, n do
    local d = { name = "d" .. i }
    for k, v in pairs(extra or {}) do d[k] = deepcopy(v) end
    out[i] = d
  end
  return out
end

describe("error messages", function()
  it("name the origin, the object and the field path", function()
    local g = core.graph()
    local ok, msg, path = g:check(slice(function(_, d) d.attributes.memory = {} end))
    assert.is_nil(ok)
    assert.are.equal('<table>: document 1: ResourceSlice "s": spec.devices[0].attributes["memory"]: Invalid value: "": exactly one value must be specified: must set exactly one of int, bool, string, version (or ints, bools, strings, versions)', msg)
    assert.are.equal('spec.devices[0].attributes["memory"]', path)
  end)

  it("report every problem of an object, not only the first", function()
    local msg = fails(slice(function(spec, d) spec.driver = "Bad_Driver"; d.name = "GPU" end), "spec.driver: Invalid value")
    assert.truthy(msg:find('spec.devices[0].name: Invalid value: "GPU"', 1, true), msg)
  end)

  it("refuse unknown fields, suggesting the right case", function()
    fails(slice(function(spec) spec.nodename = "x" end), 'spec: unknown field "nodename" (did you mean "nodeName"? field names are case-sensitive)')
    fails(claim(function(_, r) r.exactly.devicesCount = 2 end), 'spec.devices.requests[0].exactly: unknown field "devicesCount"')
  end)

  it("refuse objects of unsupported versions and kinds by name", function()
    fails({ apiVersion = "resource.k8s.io/v2", kind = "ResourceSlice", metadata = { name = "x" } },
      'apiVersion: Unsupported value: "resource.k8s.io/v2"')
    fails({ apiVersion = "resource.k8s.io/v1", kind = "ResourceClaimParameters", metadata = { name = "x" } },
      'kind: Unsupported value: "ResourceClaimParameters": not a kind of resource.k8s.io/v1')
    fails({ apiVersion = "resource.k8s.io/v1beta1", kind = "DeviceTaintRule", metadata = { name = "x" } },
      "kind DeviceTaintRule is not served in resource.k8s.io/v1beta1 (use resource.k8s.io/v1)")
    fails({ kind = "ResourceSlice" }, "apiVersion: Required value")
    assert.is_true(core.graph():check({ apiVersion = "apps/v1", kind = "Deployment", metadata = { name = "d" } }))
  end)
end)

describe("names", function()
  it("device names are DNS labels, slice names DNS subdomains", function()
    fails(slice(function(_, d) d.name = "gpu.0" end), 'spec.devices[0].name: Invalid value: "gpu.0": a lowercase RFC 1123 label')
    fails(slice(function(_, d) d.name = string.rep("a", 64) end), "must be no more than 63 characters")
    fails(slice(function(_, _, s) s.metadata.name = "Big" end), 'metadata.name: Invalid value: "Big": a lowercase RFC 1123 subdomain')
  end)

  it("driver names: subdomain of at most 63 characters (case-insensitive like CSI names)", function()
    passes(slice(function(spec) spec.driver = "GPU.Example.com" end))
    fails(slice(function(spec) spec.driver = "gpu_example" end), 'spec.driver: Invalid value: "gpu_example"')
    fails(slice(function(spec) spec.driver = string.rep("a", 60) .. ".com" end), "spec.driver: Too long: may not be more than 63 bytes")
    fails(slice(function(spec) spec.driver = nil end), "spec.driver: Required value")
  end)

  it("pool names are subdomains joined by /", function()
    passes(slice(function(spec) spec.pool.name = "rack-1/node-1" end))
    fails(slice(function(spec) spec.pool.name = "rack-1//node-1" end), "spec.pool.name: Invalid value")
    fails(slice(function(spec) spec.pool.generation = -1 end), "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero")
    fails(slice(function(spec) spec.pool.resourceSliceCount = 0 end), "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero")
  end)

  it("qualified names: C identifier of at most 32, optional domain", function()
    passes(slice(function(_, d) d.attributes["example.com/my_attr1"] = { int = 1 } end))
    fails(slice(function(_, d) d.attributes["1abc"] = { int = 1 } end), 'spec.devices[0].attributes["1abc"]: Invalid value: "1abc": a valid C identifier')
    fails(slice(function(_, d) d.attributes[string.rep("a", 33)] = { int = 1 } end), "Too long: may not be more than 32 bytes")
    fails(slice(function(_, d) d.attributes["/x"] = { int = 1 } end), 'Invalid value: "": the domain must not be empty')
    fails(slice(function(_, d) d.attributes["a/b/c"] = { int = 1 } end), 'Invalid value: "a/b/c": must not contain more than one slash')
  end)

  it("constraints need fully qualified names", function()
    fails(claim(function(dev) dev.constraints = { { matchAttribute = "model" } } end),
      'spec.devices.constraints[0].matchAttribute: Invalid value: "model": a fully qualified name must be a domain and a name separated by a slash')
  end)
end)

describe("ResourceSlice limits", function()
  it("128 devices, 64 with taints, counter consumption or list attributes", function()
    passes(slice(function(spec) spec.devices = devices(128) end))
    fails(slice(function(spec) spec.devices = devices(129) end), "spec.devices: Too many: 129: must have at most 128 items")
    fails(slice(function(spec) spec.devices = devices(65, { taints = { { key = "k", effect = "None" } } }) end),
      "spec.devices: Too many: 65: must have at most 64 items")
    fails(slice(function(spec) spec.devices = devices(65, { attributes = { l = { ints = { 1 } } } }) end),
      "must have at most 64 items")
  end)

  it("32 attributes and capacities per device, 48 attribute values", function()
    fails(slice(function(_, d) for i = 1, 32 do d.attributes["a" .. i] = { int = i } end end),
      "spec.devices[0]: Invalid value: 34: the total number of attributes and capacities must not exceed 32")
    local fifty = {}
    for i = 1, 50 do fifty[i] = i end
    fails(slice(function(_, d) d.attributes.l = { ints = fifty } end),
      "spec.devices[0]: Invalid value: 51: the total number of attribute values must not exceed 48")
  end)

  it("attribute values: one of, lengths, semver, non-empty lists", function()
    fails(slice(function(_, d) d.attributes.model = { string = "a", int = 1 } end), "exactly one value must be specified")
    fails(slice(function(_, d) d.attributes.model = { string = string.rep("x", 65) } end),
      'spec.devices[0].attributes["model"].string: Too long: may not be more than 64 bytes')
    fails(slice(function(_, d) d.attributes.v = { version = "1.02.3" } end),
      'attributes["v"].version: Invalid value: "1.02.3": must be a string compatible with semver.org spec 2.0.0')
    passes(slice(function(_, d) d.attributes.v = { version = "1.2.3-rc.1+build.5" } end))
    fails(slice(function(_, d) d.attributes.l = { strings = setmetatable({}, core.json_array_mt) } end),
      'attributes["l"].strings: Invalid value: "[]": must not be empty if specified')
  end)

  it("quantities must parse", function()
    fails(slice(function(_, d) d.capacity.memory = { value = "80 Gi" } end), 'spec.devices[0].capacity["memory"].value: Invalid value: "80 Gi"')
  end)

  it("node selection: exactly one of four", function()
    fails(slice(function(spec) spec.nodeName = nil end), "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required")
    fails(slice(function(spec) spec.allNodes = true end),
      'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set')
    fails(slice(function(spec) spec.nodeName = nil; spec.allNodes = false end), "spec.allNodes: Invalid value: false: must be either unset or set to true")
    fails(slice(function(spec) spec.nodeName = nil; spec.nodeSelector = { nodeSelectorTerms = { { matchExpressions = { { key = "a", operator = "Exists" } } }, { matchExpressions = { { key = "b", operator = "Exists" } } } } } end),
      "spec.nodeSelector.nodeSelectorTerms: Invalid value: 2 terms: must have exactly one node selector term")
    fails(slice(function(spec) spec.nodeName = nil; spec.nodeSelector = { nodeSelectorTerms = { { matchExpressions = { { key = "a", operator = "In" } } } } } end),
      "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'")
    fails(slice(function(_, d) d.nodeName = "node-1" end),
      "spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec")
    fails(slice(function(spec) spec.nodeName = nil; spec.perDeviceNodeSelection = true end),
      "spec.devices[0]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec")
    passes(slice(function(spec, d) spec.nodeName = nil; spec.perDeviceNodeSelection = true; d.allNodes = true end))
  end)

  it("shared counters and their consumption", function()
    local function counters(n)
      local c = {}
      for i = 1, n do c["c" .. i] = { value = "1" } end
      return c
    end
    fails(slice(function(spec) spec.sharedCounters = { { name = "set", counters = counters(1) } } end),
      "spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed")
    local sets = {}
    for i = 1, 9 do sets[i] = { name = "s" .. i, counters = counters(1) } end
    fails(slice(function(spec) spec.devices = nil; spec.sharedCounters = sets end), "spec.sharedCounters: Too many: 9: must have at most 8 items")
    fails(slice(function(spec) spec.devices = nil; spec.sharedCounters = { { name = "s", counters = counters(1) }, { name = "s", counters = counters(1) } } end),
      'spec.sharedCounters[1]: Duplicate value: "s"')
    fails(slice(function(spec) spec.devices = nil; spec.sharedCounters = { { name = "s", counters = counters(33) } } end),
      "spec.sharedCounters[0].counters: Too many: 33: must have at most 32 items")
    fails(slice(function(spec) spec.devices = nil; spec.sharedCounters = { { name = "s" } } end), "spec.sharedCounters[0].counters: Required value")
    fails(slice(function(_, d) d.consumesCounters = { { counterSet = "a", counters = counters(1) }, { counterSet = "b", counters = counters(1) }, { counterSet = "c", counters = counters(1) } } end),
      "spec.devices[0].consumesCounters: Too many: 3: must have at most 2 items")
    fails(slice(function(_, d) d.consumesCounters = { { counterSet = "a", counters = counters(1), compatibilityGroups = { "x", "y", "z" } } } end),
      "spec.devices[0].consumesCounters[0].compatibilityGroups: Too many: 3: must have at most 2 items")
    fails(slice(function(_, d) d.consumesCounters = { { counterSet = "a", counters = counters(1), compatibilityGroups = { "Mig" } } } end),
      'compatibilityGroups[0]: Invalid value: "Mig"')
  end)

  it("taints", function()
    fails(slice(function(_, d) d.taints = { { key = "k" } } end), "spec.devices[0].taints[0].effect: Required value")
    fails(slice(function(_, d) d.taints = { { key = "k", effect = "PreferNoSchedule" } } end),
      'spec.devices[0].taints[0].effect: Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"')
    fails(slice(function(_, d) d.taints = { { key = "k k", effect = "None" } } end), 'spec.devices[0].taints[0].key: Invalid value: "k k"')
    local many = {}
    for i = 1, 17 do many[i] = { key = "k" .. i, effect = "None" } end
    fails(slice(function(_, d) d.taints = many end), "spec.devices[0].taints: Too many: 17: must have at most 16 items")
  end)

  it("binding conditions", function()
    fails(slice(function(_, d) d.bindingConditions = { "a" } end),
      "spec.devices[0].bindingFailureConditions: Invalid value: []: bindingFailureConditions are required to use bindingConditions")
    fails(slice(function(_, d) d.bindingFailureConditions = { "a" } end), "bindingConditions are required to use bindingFailureConditions")
    fails(slice(function(_, d) d.bindingConditions = { "a" }; d.bindingFailureConditions = { "a" } end),
      'spec.devices[0].bindingFailureConditions[0]: Invalid value: "a": bindingFailureConditions must not overlap with bindingConditions')
    fails(slice(function(_, d) d.bindingConditions = { "a", "b", "c", "d", "e" }; d.bindingFailureConditions = { "f" } end),
      "spec.devices[0].bindingConditions: Too many: 5: must have at most 4 items")
    fails(slice(function(_, d) d.bindingConditions = { "a", "a" }; d.bindingFailureConditions = { "f" } end),
      'spec.devices[0].bindingConditions[1]: Duplicate value: "a"')
  end)

  it("request policies (consumable capacity)", function()
    local function pol(p, multi, value)
      return slice(function(_, d)
        d.allowMultipleAllocations = multi ~= false
        d.capacity.bw = { value = value or "10Gi", requestPolicy = p }
      end)
    end
    fails(pol({ default = "1Gi" }, false), 'spec.devices[0].capacity["bw"].requestPolicy: Forbidden: allowMultipleAllocations must be true')
    passes(pol({ default = "1Gi", validRange = { min = "1Gi", step = "1Gi" } }))
    fails(pol({ validRange = { min = "1Gi" } }), 'requestPolicy.default: Required value: required when validRange is defined')
    fails(pol({ validValues = { "1Gi" } }), "requestPolicy.default: Required value: required when validValues is defined")
    fails(pol({ default = "1Gi", validValues = { "2Gi", "1Gi" } }), 'requestPolicy.validValues[1]: Invalid value: "1Gi": values must be sorted in ascending order')
    fails(pol({ default = "1Gi", validValues = { "1Gi", "20Gi" } }), 'requestPolicy.validValues[1]: Invalid value: "20Gi": option is larger than capacity value: 10Gi')
    fails(pol({ default = "3Gi", validValues = { "1Gi", "2Gi" } }), 'requestPolicy.validValues: Invalid value: "3Gi": default value is not valid according to the requestPolicy')
    local eleven = {}
    for i = 1, 11 do eleven[i] = tostring(i) end
    fails(pol({ default = "1", validValues = eleven }, true, "100"), "requestPolicy.validValues: Too many: 11: must have at most 10 items")
    fails(pol({ default = "1Gi", validValues = { "1Gi" }, validRange = { min = "1Gi" } }),
      'requestPolicy: Forbidden: exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time')
    fails(pol({ default = "1Gi", validRange = { min = "20Gi" } }), 'requestPolicy.validRange.min: Invalid value: "20Gi": min is larger than capacity value: 10Gi')
    fails(pol({ default = "1Gi", validRange = { min = "2Gi" } }), 'requestPolicy.validRange.default: Invalid value: "1Gi": default is less than min: 2Gi')
    fails(pol({ default = "2Gi", validRange = { min = "2Gi", max = "1Gi" } }), 'requestPolicy.validRange.max: Invalid value: "2Gi": min is larger than max: 1Gi')
    fails(pol({ default = "1Gi", validRange = { min = "1Gi", step = "0" } }), 'requestPolicy.validRange.step: Invalid value: "0": must be greater than zero')
    fails(pol({ default = "1Gi", validRange = { min = "1Gi", step = "10Gi" } }), 'requestPolicy.validRange.step: Invalid value: "10Gi": one step 11Gi is larger than capacity value: 10Gi')
    fails(pol({ default = "1500Mi", validRange = { min = "1Gi", step = "1Gi" } }),
      'requestPolicy.validRange.step: Invalid value: "1500Mi": value is not a multiple of a given step (1Gi) from (1Gi)')
    -- DRAFractionalCapacityRange (beta, on): milli arithmetic, exact milli values only
    passes(pol({ default = "500m", validRange = { min = "500m", step = "250m" } }, true, "4"))
    fails(pol({ default = "1", validRange = { min = "0.0005", step = "1" } }, true, "4"),
      'requestPolicy.validRange.min: Invalid value: "500u": value cannot be represented as a milli value')
  end)

  it("node allocatable resources and skipNodeOperations", function()
    fails(slice(function(_, d) d.nodeAllocatableResources = { ["example.com/foo"] = { overhead = { perPod = "1" } } } end),
      'nodeAllocatableResources["example.com/foo"]: Invalid value: "example.com/foo": must be a node allocatable resource name')
    fails(slice(function(_, d) d.nodeAllocatableResources = { cpu = {} } end), "Required value: at least one of mapping or overhead must be set")
    fails(slice(function(_, d) d.nodeAllocatableResources = { cpu = { mapping = { capacityKey = "nope", capacityMultiplier = "1" } } } end),
      'mapping.capacityKey: Not found: "nope"')
    fails(slice(function(spec) spec.skipNodeOperations = { "NodePrepareResources" } end),
      "spec.skipNodeOperations: Invalid value: NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped")
    passes(slice(function(spec) spec.skipNodeOperations = { "NodePrepareResources", "*" } end))
  end)
end)

describe("ResourceClaim rules", function()
  it("requests: exactly one of exactly/firstAvailable, at most 32, unique names", function()
    fails(claim(function(_, r) r.exactly = nil end), "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required")
    fails(claim(function(_, r) r.firstAvailable = { { name = "a", deviceClassName = "x" } } end),
      "spec.devices.requests[0]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set")
    local reqs = {}
    for i = 1, 33 do reqs[i] = { name = "r" .. i, exactly = { deviceClassName = "x" } } end
    fails(claim(function(dev) dev.requests = reqs end), "spec.devices.requests: Too many: 33: must have at most 32 items")
    fails(claim(function(dev) dev.requests[2] = deepcopy(dev.requests[1]) end), 'spec.devices.requests[1]: Duplicate value: "gpu"')
    fails(claim(function(_, r) r.name = "GPU" end), 'spec.devices.requests[0].name: Invalid value: "GPU"')
    fails(claim(function(_, r) r.exactly.deviceClassName = nil end), "spec.devices.requests[0].exactly.deviceClassName: Required value")
  end)

  it("subrequests: at most 8, unique, no adminAccess", function()
    local subs = {}
    for i = 1, 9 do subs[i] = { name = "s" .. i, deviceClassName = "x" } end
    fails(claim(function(_, r) r.exactly = nil; r.firstAvailable = subs end), "spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items")
    fails(claim(function(_, r) r.exactly = nil; r.firstAvailable = { { name = "a", deviceClassName = "x" }, { name = "a", deviceClassName = "y" } } end),
      'spec.devices.requests[0].firstAvailable[1]: Duplicate value: "a"')
    fails(claim(function(_, r) r.exactly = nil; r.firstAvailable = { { name = "a", deviceClassName = "x", adminAccess = true } } end),
      'spec.devices.requests[0].firstAvailable[0]: unknown field "adminAccess"')
  end)

  it("allocation mode and count", function()
    fails(claim(function(_, r) r.exactly.allocationMode = "Some" end),
      'spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": supported values: "All", "ExactCount"')
    fails(claim(function(_, r) r.exactly.count = 0 end), "spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero")
    fails(claim(function(_, r) r.exactly.allocationMode = "All"; r.exactly.count = 2 end),
      "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'")
    local g = core.graph()
    g:apply(claim())
    assert.are.same({ "ExactCount", 1 }, { g:claim("ns", "c").requests[1].allocation_mode, g:claim("ns", "c").requests[1].count })
  end)

  it("selectors: at most 32, cel required, CEL length and compilation", function()
    local sels = {}
    for i = 1, 33 do sels[i] = { cel = { expression = "true" } } end
    fails(claim(function(_, r) r.exactly.selectors = sels end), "spec.devices.requests[0].exactly.selectors: Too many: 33: must have at most 32 items")
    fails(claim(function(_, r) r.exactly.selectors = { {} } end), "spec.devices.requests[0].exactly.selectors[0].cel: Required value")
    fails(claim(function(_, r) r.exactly.selectors = { { cel = { expression = "" } } } end), "selectors[0].cel.expression: Required value")
    fails(claim(function(_, r) r.exactly.selectors = { { cel = { expression = "true || " .. string.rep("true || ", 1300) .. "true" } } } end),
      "selectors[0].cel.expression: Too long: may not be more than 10240 bytes")
    fails(claim(function(_, r) r.exactly.selectors = { { cel = { expression = "device.driver ==" } } } end),
      'selectors[0].cel.expression: Invalid value: "device.driver ==": compilation failed')
    fails(class(function(spec) spec.selectors = { { cel = { expression = "1 + 1" } } } end), "spec.selectors[0].cel.expression: Invalid value")
  end)

  it("constraints: at most 32, one of match/distinct, request references that exist", function()
    fails(claim(function(dev) dev.constraints = { {} } end),
      'spec.devices.constraints[0]: Required value: exactly one of "matchAttribute" or "distinctAttribute" is required')
    fails(claim(function(dev) dev.constraints = { { matchAttribute = "a.com/x", distinctAttribute = "a.com/y" } } end),
      'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set')
    fails(claim(function(dev) dev.constraints = { { requests = { "nic" }, matchAttribute = "a.com/x" } } end),
      'spec.devices.constraints[0].requests[0]: Invalid value: "nic": must be the name of a request in the claim or the name of a request and a subrequest separated by \'/\'')
    fails(claim(function(dev) dev.constraints = { { requests = { "gpu/a/b" }, matchAttribute = "a.com/x" } } end), 'Invalid value: "gpu/a/b"')
    fails(claim(function(dev) dev.constraints = { { requests = { "gpu", "gpu" }, matchAttribute = "a.com/x" } } end),
      'spec.devices.constraints[0].requests[1]: Duplicate value: "gpu"')
    passes(claim(function(dev, r) r.exactly = nil; r.firstAvailable = { { name = "big", deviceClassName = "x" } }
      dev.constraints = { { requests = { "gpu/big" }, distinctAttribute = "a.com/x" } } end))
    local many = {}
    for i = 1, 33 do many[i] = { matchAttribute = "a.com/x" } end
    fails(claim(function(dev) dev.constraints = many end), "spec.devices.constraints: Too many: 33: must have at most 32 items")
  end)

  it("config entries", function()
    fails(claim(function(dev) dev.config = { { requests = { "gpu" } } } end), "spec.devices.config[0].opaque: Required value")
    fails(claim(function(dev) dev.config = { { opaque = { driver = "gpu.example.com" } } } end), "spec.devices.config[0].opaque.parameters: Required value")
    fails(claim(function(dev) dev.config = { { opaque = { driver = "gpu.example.com", parameters = { 1, 2 } } } } end),
      'spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object')
    fails(claim(function(dev) dev.config = { { opaque = { driver = "gpu.example.com", parameters = { x = string.rep("y", 11000) } } } } end),
      "spec.devices.config[0].opaque.parameters: Too long: may not be more than 10240 bytes")
    fails(claim(function(dev) dev.config = { { requests = { "other" }, opaque = { driver = "d.com", parameters = {} } } } end),
      'spec.devices.config[0].requests[0]: Invalid value: "other"')
  end)

  it("tolerations", function()
    fails(claim(function(_, r) r.exactly.tolerations = { { key = "k", operator = "Exists", value = "v" } } end),
      'spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: "v": must be empty for operator `Exists`')
    fails(claim(function(_, r) r.exactly.tolerations = { { key = "k", operator = "Gt" } } end),
      'tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", "Exists"')
    fails(claim(function(_, r) r.exactly.tolerations = { { key = "k", effect = "Evict" } } end),
      'tolerations[0].effect: Unsupported value: "Evict"')
    passes(claim(function(_, r) r.exactly.tolerations = { { effect = "NoExecute" } } end)) -- empty key, operator defaults to Equal
  end)

  it("capacity requests", function()
    fails(claim(function(_, r) r.exactly.capacity = { requests = { ["bad key"] = "1" } } end),
      'spec.devices.requests[0].exactly.capacity.requests["bad key"]: Invalid value: "bad key"')
    fails(claim(function(_, r) r.exactly.capacity = { requests = { bw = "lots" } } end), 'capacity.requests["bw"]: Invalid value: "lots"')
    local g = core.graph()
    g:apply(claim(function(_, r) r.exactly.capacity = { requests = { ["example.com/bw"] = "10G" } } end))
    assert.are.equal("10G", g:claim("ns", "c").requests[1].capacity["example.com/bw"])
  end)

  it("adminAccess needs the namespace label (when the Namespace is known)", function()
    local g = core.graph()
    local admin = claim(function(_, r) r.exactly.adminAccess = true end)
    passes(admin, g) -- namespace unknown: left to the API server / allocator
    g:apply({ apiVersion = "v1", kind = "Namespace", metadata = { name = "ns" } })
    fails(admin, "spec.devices.requests[0].exactly.adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: \"true\"` label on the containing namespace", g)
    g:apply({ apiVersion = "v1", kind = "Namespace", metadata = { name = "ns", labels = { ["resource.kubernetes.io/admin-access"] = "true" } } })
    passes(admin, g)
  end)

  it("derived attributes (KEP-6080)", function()
    local function derived(attrs, constraints)
      return claim(function(dev, r)
        r.exactly.derivedAttributes = attrs
        dev.constraints = constraints
      end)
    end
    passes(derived({ { name = "derived.example.com/numa", expression = "device.attributes['gpu.nvidia.com'].numa" } },
      { { matchAttribute = "derived.example.com/numa" } }))
    fails(derived({ { name = "numa", expression = "1" } }, { { matchAttribute = "derived.example.com/numa" } }),
      'derivedAttributes[0].name: Invalid value: "numa": a fully qualified name must be a domain and a name separated by a slash')
    fails(derived({ { name = "d.com/n", expression = "1" } }, { { matchAttribute = "d.com/other" } }),
      'derivedAttributes[0].name: Invalid value: "d.com/n": must be referenced by at least one matchAttribute or distinctAttribute constraint targeting this request')
    fails(derived({ { name = "d.com/n", expression = "1" }, { name = "d.com/n", expression = "2" } }, { { matchAttribute = "d.com/n" } }),
      'derivedAttributes[1]: Duplicate value: "d.com/n"')
    fails(derived({ { name = "d.com/n" } }, { { matchAttribute = "d.com/n" } }), "derivedAttributes[0].expression: Required value")
  end)

  it("status: results must name requests of the claim", function()
    fails(claim(function(_, _, c) c.status = { allocation = { devices = { results = { { request = "nope", driver = "d.com", pool = "p", device = "x" } } } } } end),
      'status.allocation.devices.results[0].request: Invalid value: "nope"')
    fails(claim(function(_, _, c) c.status = { reservedFor = { { resource = "pods", name = "p", uid = "u" } } } end),
      "status.reservedFor: Forbidden: may not be specified when `allocated` is not set")
  end)
end)

describe("other kinds", function()
  it("DeviceClass", function()
    passes(class())
    fails(class(function(spec) spec.extendedResourceName = "gpu" end), 'spec.extendedResourceName: Invalid value: "gpu": must be a valid extended resource name')
    fails(class(function(spec) spec.extendedResourceName = "kubernetes.io/gpu" end), "must be a valid extended resource name")
    passes(class(function(spec) spec.extendedResourceName = "example.com/gpu" end))
    fails(class(function(spec) spec.suitableNodes = {} end), 'spec: unknown field "suitableNodes"')
  end)

  it("DeviceTaintRule", function()
    fails({ apiVersion = "resource.k8s.io/v1", kind = "DeviceTaintRule", metadata = { name = "r" }, spec = { deviceSelector = { driver = "d.com" } } },
      "spec.taint: Required value")
    fails({ apiVersion = "resource.k8s.io/v1", kind = "DeviceTaintRule", metadata = { name = "r" },
            spec = { deviceSelector = { deviceClassName = "x" }, taint = { key = "k", effect = "None" } } },
      'spec.deviceSelector: unknown field "deviceClassName" (removed in Kubernetes 1.35 (tombstoned): select by driver, pool and device)')
  end)

  it("Pod", function()
    local function pod(mut)
      local p = { apiVersion = "v1", kind = "Pod", metadata = { name = "p", namespace = "ns" },
                  spec = { containers = { { name = "c", image = "i", resources = { claims = { { name = "gpus" } } } } },
                           resourceClaims = { { name = "gpus", resourceClaimName = "c" } } } }
      if mut then mut(p.spec) end
      return p
    end
    passes(pod())
    fails(pod(function(s) s.resourceClaims = nil end), 'spec.containers[0].resources.claims[0]: Not found: "gpus": no claims defined in spec.resourceClaims')
    fails(pod(function(s) s.resourceClaims[1].resourceClaimTemplateName = "t" end),
      "spec.resourceClaims[0]: Invalid value: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified")
    fails(pod(function(s) s.resourceClaims[1].resourceClaimName = nil end),
      "spec.resourceClaims[0]: Required value: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
    fails(pod(function(s) s.resourceclaims = {} end), 'spec: unknown field "resourceclaims" (did you mean "resourceClaims"?')
    local g = core.graph()
    g:apply(pod(function(s)
      s.initContainers = { { name = "side", image = "i", restartPolicy = "Always" }, { name = "init", image = "i" } }
      s.containers[1].resources.limits = { ["nvidia.com/gpu"] = 2 }
    end))
    local p = g:pod("ns", "p")
    assert.are.same({ true, true, false }, { p.containers[1].sidecar, p.containers[1].init, p.containers[2].sidecar })
    assert.are.equal("2", p.containers[3].limits["nvidia.com/gpu"])
  end)
end)

describe("input versions", function()
  it("v1beta1 slices: device fields under basic", function()
    local g = core.graph()
    g:apply({ apiVersion = "resource.k8s.io/v1beta1", kind = "ResourceSlice", metadata = { name = "s" },
              spec = { driver = "d.com", nodeName = "n1", pool = { name = "n1", generation = 0, resourceSliceCount = 1 },
                       devices = { { name = "x", basic = { attributes = { model = { string = "A" } }, capacity = { mem = { value = "1Gi" } } } } } } })
    local d = g:device("d.com", "n1", "x")
    assert.are.equal("A", d.attributes["d.com/model"])
    assert.are.equal("1Gi", d.capacity["d.com/mem"])
    assert.are.equal(1, g:slice("s").input_version)
    fails({ apiVersion = "resource.k8s.io/v1beta1", kind = "ResourceSlice", metadata = { name = "s" },
            spec = { driver = "d.com", nodeName = "n1", pool = { name = "n1", generation = 0, resourceSliceCount = 1 },
                     devices = { { name = "x", attributes = {} } } } },
      'spec.devices[0]: unknown field "attributes" (in resource.k8s.io/v1beta1 device fields belong under "basic")')
    fails(slice(function(_, d) d.basic = {} end),
      'spec.devices[0]: unknown field "basic" (v1beta1 wrapped device fields in "basic"; in resource.k8s.io/v1 and v1beta2 they sit directly on the device)')
  end)

  it("v1beta1 claims: request fields on the request", function()
    local g = core.graph()
    g:apply({ apiVersion = "resource.k8s.io/v1beta1", kind = "ResourceClaim", metadata = { name = "c", namespace = "ns" },
              spec = { devices = { requests = {
                { name = "a", deviceClassName = "x", count = 2, allocationMode = "ExactCount", adminAccess = false },
                { name = "b", firstAvailable = { { name = "s1", deviceClassName = "y" }, { name = "s2", deviceClassName = "z", count = 3 } } },
              } } } })
    local c = g:claim("ns", "c")
    assert.are.same({ "x", 2, false }, { c.requests[1].device_class, c.requests[1].count, c.requests[1].admin_access })
    assert.are.equal("z", c.requests[2].first_available[2].device_class)
    assert.are.equal(3, c.requests[2].first_available[2].count)
    fails(claim(function(_, r) r.exactly = nil; r.deviceClassName = "x"; r.firstAvailable = { { name = "s", deviceClassName = "y" } } end, "resource.k8s.io/v1beta1"),
      "exactly one of `deviceClassName` or `firstAvailable` must be specified, but both are set")
    fails(claim(nil, "resource.k8s.io/v1beta1"), 'spec.devices.requests[0]: unknown field "exactly" (resource.k8s.io/v1beta1 has no "exactly"; its fields sit directly on the request)')
  end)

  it("v1beta2 has the v1 shapes; v1alpha3 the v1beta1 ones", function()
    local g = core.graph()
    g:apply(claim(nil, "resource.k8s.io/v1beta2"))
    assert.are.equal("gpu.example.com", g:claim("ns", "c").requests[1].device_class)
    g:apply({ apiVersion = "resource.k8s.io/v1alpha3", kind = "ResourceClaimTemplate", metadata = { name = "t", namespace = "ns" },
              spec = { spec = { devices = { requests = { { name = "r", deviceClassName = "x", tolerations = { { key = "k", operator = "Exists" } } } } } } } })
    assert.are.equal(1, g:stats().templates)
  end)
end)

describe("multi-document inputs", function()
  it("load YAML documents and Lists through the manifest reader", function()
    local g = core.graph()
    g:apply([[
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: a}
spec: {}
---
# an empty document is skipped
---
apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: DeviceClass
  metadata: {name: b}
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata: {name: s}
  spec:
    driver: d.com
    allNodes: true
    pool: {name: p, generation: 0, resourceSliceCount: 1}
    devices:
    - name: x
]])
    assert.is_not_nil(g:class("a"))
    assert.is_not_nil(g:class("b"))
    assert.are.same({ "s" }, g:shared_slices())
  end)

  it("name the document and List item of an invalid object", function()
    local g = core.graph()
    local ok, err = pcall(g.apply, g, "apiVersion: v1\nkind: List\nitems:\n- apiVersion: resource.k8s.io/v1\n  kind: DeviceClass\n  metadata: {name: ok}\n- apiVersion: resource.k8s.io/v1\n  kind: DeviceClass\n  metadata: {name: Bad}\n")
    assert.is_false(ok)
    assert.truthy(err:find('<string>: document 1: items[1]: DeviceClass "Bad": metadata.name: Invalid value: "Bad"', 1, true), err)
  end)
end)

describe("timestamps", function()
  local function node(ts)
    return { apiVersion = "v1", kind = "Node", metadata = { name = "n", creationTimestamp = ts } }
  end

  it("read RFC 3339 with fractions and offsets, to the second", function()
    local cases = {
      ["1970-01-01T00:00:00Z"] = 0,
      ["2024-05-06T07:08:09Z"] = 1714979289,
      ["2024-05-06T07:08:09.123456Z"] = 1714979289,
      ["2024-05-06T09:08:09+02:00"] = 1714979289,
      ["2024-05-06T02:38:09-04:30"] = 1714979289,
      ["2024-02-29T23:59:60z"] = 1709251200,
    }
    for ts, want in pairs(cases) do
      local g = core.graph()
      g:apply(node(ts))
      assert.are.equal(want, g:node("n").creation, ts)
    end
  end)

  it("refuse anything else, signs and spaces inside the fields included", function()
    for _, ts in ipairs({ "2024-05-06T07:08:09", "2024-05-06 07:08:09Z", " 2024-05-06T07:08:09Z",
                          "2024-+5-06T07:08:09Z", "2024-05-06T07:08: 9Z", "2024-13-06T07:08:09Z",
                          "2024-05-06T24:08:09Z", "2024-05-06T07:08:09+0200", "2024-05-06T07:08:09+02:0x",
                          "2024-05-06T07:08:09Zjunk", "yesterday", "" }) do
      fails(node(ts), "must be an RFC 3339 timestamp", core.graph())
    end
  end)
end)
