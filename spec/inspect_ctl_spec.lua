-- inspect_ctl_spec.lua - `draengine inspect` shows what kube-controller-
-- manager's DRA controllers would do with the input: the status of each
-- ResourcePoolStatusRequest (KEP-5677, gate DRAResourcePoolStatus) and the
-- pods the device taint eviction controller deletes for NoExecute taints.
local H = require "support.helper"
local core = require "draengine.core"

local function inspect(text, ...)
  local f = H.write_temp(text, ".yaml")
  local args = { "inspect", "-f", f }
  for _, a in ipairs({ ... }) do args[#args + 1] = a end
  local rc, out, err = H.run(args)
  os.remove(f)
  return rc, out, err
end

local function json(text, ...)
  local rc, out, err = inspect(text, "-o", "json", ...)
  assert.are.equal(0, rc, err)
  return core.json_decode(out)
end

local function slice(name, pool, devices, extra)
  return string.format([[
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: %s}
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool: {name: %s, generation: %d, resourceSliceCount: %d}
%s  devices:
%s]], name, pool, extra and extra.gen or 1, extra and extra.count or 1, extra and extra.spec or "", devices)
end

-- reserved: the pod the claim is reserved for, or a whole reservedFor entry
-- (a flow mapping, for a PodGroup)
local function claim(name, results, reserved)
  local entry = reserved and (reserved:sub(1, 1) == "{" and reserved or
    ("{resource: pods, name: " .. reserved .. ", uid: uid-" .. reserved .. "}"))
  return string.format([[
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: %s, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
status:
  allocation:
    devices:
      results:
%s%s]], name, results, entry and ("  reservedFor:\n  - " .. entry .. "\n") or "")
end

local function request(name, spec)
  return string.format([[
---
apiVersion: resource.k8s.io/v1alpha3
kind: ResourcePoolStatusRequest
metadata: {name: %s}
spec: %s
]], name, spec)
end

local POOLS = slice("a-gpus", "pool-a", [[
  - {name: gpu-0}
  - {name: gpu-1, taints: [{key: xid, effect: NoExecute}]}
  - {name: gpu-2, taints: [{key: maint, effect: NoSchedule}]}
  - {name: gpu-3, taints: [{key: info, effect: None}]}
  - {name: gpu-4}
]]) .. slice("b-gpus", "pool-b", "  - {name: gpu-0}\n") .. slice("c-1", "pool-c", "  - {name: gpu-0}\n", { gen = 3, count = 2 }) ..
  slice("c-old", "pool-c", "  - {name: gpu-9}\n  - {name: gpu-8}\n", { gen = 2, count = 1 }) .. [[
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: no-selector}
spec:
  taint: {key: all, effect: NoExecute}
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: gpu-4-down}
spec:
  deviceSelector: {driver: gpu.example.com, pool: pool-a, device: gpu-4}
  taint: {key: down, effect: NoSchedule}
]] .. claim("uses-gpu-0", "      - {request: gpu, driver: gpu.example.com, pool: pool-a, device: gpu-0}\n") ..
  claim("shares-gpu-0", "      - {request: gpu, driver: gpu.example.com, pool: pool-a, device: gpu-0}\n") ..
  claim("admin-gpu-1", "      - {request: gpu, driver: gpu.example.com, pool: pool-a, device: gpu-1, adminAccess: true}\n") ..
  claim("gone-device", "      - {request: gpu, driver: gpu.example.com, pool: pool-b, device: gpu-7}\n")

describe("inspect: ResourcePoolStatusRequest status", function()
  local ON = "--feature-gates=DRAResourcePoolStatus=true"

  it("counts pools as the controller does", function()
    local d = json(POOLS .. request("all", "{driver: gpu.example.com}"), ON)
    local r = d.poolStatusRequests[1]
    assert.are.equal("all", r.name)
    assert.is_true(r.computed)
    assert.is_false(r.written) -- pool-c is incomplete: the controller retries
    local st = r.status
    assert.are.equal(3, st.poolCount)
    local a, b, c = st.pools[1], st.pools[2], st.pools[3]
    assert.are.equal("pool-a", a.poolName)
    -- gpu-1 NoExecute, gpu-2 NoSchedule, gpu-4 by a rule; None and a rule without selector do not count
    assert.are.equal(5, a.totalDevices)
    assert.are.equal(3, a.unavailableDevices)
    -- gpu-0 counts once for two claims; the adminAccess result does not count
    assert.are.equal(1, a.allocatedDevices)
    assert.are.equal(1, a.availableDevices)
    assert.are.equal("node-a", a.nodeName)
    -- a device that is no longer published still counts as allocated
    assert.are.equal(1, b.allocatedDevices)
    assert.are.equal(0, b.availableDevices)
    -- only the newest generation, and it is incomplete: no counts
    assert.are.equal("pool-c", c.poolName)
    assert.are.equal(3, c.generation)
    assert.is_nil(c.totalDevices)
    assert.are.equal("PoolIncomplete: pool gpu.example.com/pool-c is incomplete: observed 1/2 slices at generation 3",
      c.validationError)
    assert.are.equal("Calculated status for 3 pools (1 incomplete)", st.conditions[1].message)
    assert.is_nil(st.conditions[1].lastTransitionTime)
  end)

  it("applies poolName and limit, and says when nothing matches", function()
    local d = json(POOLS .. request("limited", "{driver: gpu.example.com, limit: 2}") ..
      request("one", "{driver: gpu.example.com, poolName: pool-b}") .. request("none", "{driver: nic.example.com}"), ON)
    local by = {}
    for _, r in ipairs(d.poolStatusRequests) do by[r.name] = r end
    assert.are.equal(3, by.limited.status.poolCount)
    assert.are.equal(2, #by.limited.status.pools)
    assert.is_true(by.limited.written)
    assert.are.equal("Calculated status for 2 pools", by.limited.status.conditions[1].message)
    assert.are.equal(1, #by.one.status.pools)
    assert.are.equal(0, by.none.status.poolCount)
    assert.is_nil(by.none.status.pools)
  end)

  it("is not computed without DRAResourcePoolStatus", function()
    local d = json(POOLS .. request("all", "{driver: gpu.example.com}"))
    assert.is_false(d.poolStatusRequests[1].computed)
    assert.is_nil(d.poolStatusRequests[1].status)
    local rc, out = inspect(POOLS .. request("all", "{driver: gpu.example.com}"))
    assert.are.equal(0, rc)
    assert.matches("resource pool status requests (not computed: DRAResourcePoolStatus is off", out, 1, true)
    -- the dependent gate needs it
    local rc2, _, err = inspect(POOLS, "--feature-gates=DRAPartitionableDevicesType=true")
    assert.are.equal(2, rc2)
    assert.matches("DRAPartitionableDevicesType is enabled, but depends on features that are disabled: [DRAResourcePoolStatus]", err, 1, true)
  end)

  it("prints a table", function()
    local rc, out = inspect(POOLS .. request("all", "{driver: gpu.example.com}"), ON)
    assert.are.equal(0, rc)
    assert.matches("all: driver gpu.example.com, limit 100: 3 pools; Complete/True CalculationComplete: Calculated status for 3 pools (1 incomplete)", out, 1, true)
    assert.matches("(a pool is still being published; the controller retries instead of writing this)", out, 1, true)
    assert.matches("    pool%-a +node%-a +1 +1 +5 +1 +1 +3\n", out)
  end)

  local PARTS = [[
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: m-counters}
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool: {name: mig, generation: 1, resourceSliceCount: 2}
  sharedCounters:
  - name: gpu-0
    counters: {memory: {value: 40Gi}}
]] .. slice("m-devices", "mig", [[
  - name: full
    attributes: {profile: {string: Full}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 40Gi}}}]
  - name: half-a
    attributes: {profile: {string: Half}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 20Gi}}}]
  - name: half-b
    attributes: {profile: {string: Half}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 20Gi}}}]
]], { count = 2, spec = "  partitionTypeAttribute: gpu.example.com/profile\n" }) .. slice("shared", "vgpu", [[
  - {name: v-0, allowMultipleAllocations: true, capacity: {memory: {value: 80Gi}}}
  - {name: v-1, allowMultipleAllocations: true, capacity: {memory: {value: 80Gi}}}
]]) .. claim("half", "      - {request: gpu, driver: gpu.example.com, pool: mig, device: half-a}\n") ..
    claim("slice-of-v0", "      - {request: gpu, driver: gpu.example.com, pool: vgpu, device: v-0, shareID: 7c4f4e3e-1f9a-4c61-9b8e-2c3c1d0e5f6a, consumedCapacity: {memory: 10Gi}}\n")

  it("adds partitionSummary with DRAPartitionableDevicesType and shareableSummary", function()
    local d = json(PARTS .. request("p", "{driver: gpu.example.com}"),
      "--feature-gates=DRAResourcePoolStatus=true,DRAPartitionableDevicesType=true")
    local mig, vgpu = d.poolStatusRequests[1].status.pools[1], d.poolStatusRequests[1].status.pools[2]
    assert.are.same({
      { attribute = "gpu.example.com/profile", type = "Full", total = 1, allocatable = 0 },
      { attribute = "gpu.example.com/profile", type = "Half", total = 2, allocatable = 1 },
    }, mig.partitionSummary)
    assert.are.same({ fullyAvailableDevices = 1, partiallyAvailableDevices = 1,
      capacity = { { name = "memory", total = "160Gi", consumed = "10Gi", available = "150Gi" } } }, vgpu.shareableSummary)
    -- without the gate the API server drops partitionTypeAttribute: no partitionSummary
    d = json(PARTS .. request("p", "{driver: gpu.example.com}"), "--feature-gates=DRAResourcePoolStatus=true")
    assert.is_nil(d.poolStatusRequests[1].status.pools[1].partitionSummary)
    assert.is_not_nil(d.poolStatusRequests[1].status.pools[2].shareableSummary)
  end)

  it("uses the request's default attribute only when no slice declares one, and flags bad partitions", function()
    local plain = PARTS:gsub("  partitionTypeAttribute: gpu.example.com/profile\n", "")
    local gates = "--feature-gates=DRAResourcePoolStatus=true,DRAPartitionableDevicesType=true"
    local d = json(plain .. request("p", "{driver: gpu.example.com, defaultPartitionTypeAttribute: gpu.example.com/profile}"), gates)
    assert.are.equal(2, #d.poolStatusRequests[1].status.pools[1].partitionSummary)
    -- a device of one type costs differently: a validationError, no partitionSummary, counts kept
    local odd = PARTS:gsub("counters: {memory: {value: 20Gi}}}]\n  %- name: half%-b", "counters: {memory: {value: 10Gi}}}]\n  - name: half-b", 1)
    d = json(odd .. request("p", "{driver: gpu.example.com}"), gates)
    local mig = d.poolStatusRequests[1].status.pools[1]
    assert.are.equal('PartitionCostMismatch: devices of partition type "Half" in pool gpu.example.com/mig consume different counters',
      mig.validationError)
    assert.is_nil(mig.partitionSummary)
    assert.are.equal(3, mig.totalDevices)
    assert.are.equal("Calculated status for 2 pools (1 incomplete)", d.poolStatusRequests[1].status.conditions[1].message)
  end)
end)

describe("inspect: NoExecute evictions", function()
  local BASE = slice("a-gpus", "pool-a", [[
  - {name: gpu-0, taints: [{key: xid, value: "79", effect: NoExecute, timeAdded: "2026-01-01T00:00:00Z"}]}
  - {name: gpu-1, taints: [{key: maint, effect: NoSchedule, timeAdded: "2026-01-01T00:00:00Z"}]}
  - {name: gpu-2}
]])
  local function pod(name, claimname, uid)
    return string.format([[
---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default, uid: %s}
spec:
  nodeName: node-a
  containers: [{name: c, image: x}]
  resourceClaims: [{name: gpu, resourceClaimName: %s}]
]], name, uid or ("uid-" .. name), claimname)
  end
  local function holder(name, device, tolerations, reserved)
    return claim(name .. "-gpu", "      - {request: gpu, driver: gpu.example.com, pool: pool-a, device: " .. device ..
      (tolerations and (", tolerations: " .. tolerations) or "") .. "}\n", reserved or name) .. pod(name, name .. "-gpu")
  end
  local RULE = [[
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: drain}
spec:
  deviceSelector: {driver: gpu.example.com, device: gpu-2}
  taint: {key: drain, effect: NoExecute, timeAdded: "2026-03-01T00:00:00Z"}
]]

  it("marks the pods whose devices have an untolerated NoExecute taint, and why", function()
    local text = BASE .. RULE .. holder("victim", "gpu-0") ..
      holder("waits", "gpu-0", "[{key: xid, operator: Exists, effect: NoExecute, tolerationSeconds: 60}]") ..
      holder("forever", "gpu-0", "[{key: xid, operator: Equal, value: \"79\", effect: NoExecute}]") ..
      holder("any-effect", "gpu-0", "[{key: xid, operator: Exists}]") ..
      holder("noschedule-only", "gpu-1") .. holder("drained", "gpu-2") ..
      holder("not-reserved", "gpu-0", nil, "someone-else")
    local d = json(text)
    local by = {}
    for _, e in ipairs(d.evictions) do by[e.name] = e end
    assert.are.equal("2026-01-01T00:00:00Z", by.victim.evictionTime)
    assert.are.equal("ResourceSlice a-gpus gpu.example.com/pool-a/gpu-0 taint #0", by.victim.reasons[1].source)
    assert.are.same({ key = "xid", value = "79", effect = "NoExecute", timeAdded = "2026-01-01T00:00:00Z" },
      by.victim.reasons[1].taint)
    assert.are.equal("2026-01-01T00:01:00Z", by.waits.evictionTime)
    assert.are.equal(60, by.waits.reasons[1].tolerationSeconds)
    -- a toleration without NoExecute effect does not count for the eviction controller
    assert.is_not_nil(by["any-effect"])
    assert.are.equal("DeviceTaintRule drain", by.drained.reasons[1].source)
    assert.is_nil(by.forever)
    assert.is_nil(by["noschedule-only"])
    assert.is_nil(by["not-reserved"])
    assert.are.equal(4, #d.evictions)
    local rc, out = inspect(text)
    assert.are.equal(0, rc)
    assert.matches("  default/victim on node node-a: evicted at or after 2026-01-01T00:00:00Z\n" ..
      "    claim victim-gpu, device gpu.example.com/pool-a/gpu-0: taint xid=79:NoExecute from ResourceSlice a-gpus gpu.example.com/pool-a/gpu-0 taint #0, not tolerated\n", out, 1, true)
  end)

  it("finds a PodGroup's pods as the scheduler does: schedulingGroup, else the alpha workloadRef", function()
    local function member(name, spec_extra)
      return string.format([[
---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default, uid: uid-%s}
spec:
  nodeName: node-a
  containers: [{name: c, image: x}]
  resourceClaims: [{name: gpu, resourceClaimName: grp-gpu}]
%s]], name, name, spec_extra)
    end
    local text = BASE .. claim("grp-gpu", "      - {request: gpu, driver: gpu.example.com, pool: pool-a, device: gpu-0}\n",
      "{apiGroup: scheduling.k8s.io, resource: podgroups, name: grp, uid: uid-grp}") .. member("member", "  schedulingGroup: {podGroupName: grp}\n") ..
      member("alpha", "  workloadRef: {podGroupName: grp}\n") ..
      member("outsider", "  schedulingGroup: {podGroupName: other}\n")
    local d = json(text, "--feature-gates=DRAWorkloadResourceClaims=true,GenericWorkload=true")
    local names = {}
    for _, e in ipairs(d.evictions) do names[#names + 1] = e.name end
    table.sort(names)
    assert.are.same({ "alpha", "member" }, names)
  end)

  it("follow the gates: no controller without DRADeviceTaints, no rules without DRADeviceTaintRules", function()
    local text = BASE .. RULE .. holder("victim", "gpu-0") .. holder("drained", "gpu-2")
    local d = json(text, "--feature-gates=DRADeviceTaintRules=false")
    assert.are.equal(1, #d.evictions)
    assert.are.equal("victim", d.evictions[1].name)
    d = json(text, "--feature-gates=DRADeviceTaints=false,DRADeviceTaintRules=false")
    assert.are.same({}, d.evictions)
  end)
end)
