-- alloc_corpus_spec.lua - the end-to-end pairings suggested in
-- corpus/manifests/SOURCES.md (real manifests written outside this team),
-- scheduled through core.schedule / core.allocate exactly as the allocate
-- command does.
local core = require "draengine.core"
local H = require "support.helper"

local M = H.shared_dir() .. "/corpus/manifests/"
local F = H.root .. "/spec/fixtures/alloc/"
local P = M .. "k8s-scheduler-perf/"

-- {pod name -> pod result} of a core.schedule run
local function by_pod(r)
  local t = {}
  for _, p in ipairs(r.pods) do t[p.name] = p end
  return t
end

-- device results of a scheduled pod's first claim: {"request device", ...}
local function results(pod, claim)
  local out = {}
  local c = pod.claims[claim or 1]
  for _, x in ipairs(c.allocation.devices.results) do
    out[#out + 1] = x.request .. " " .. x.device
  end
  return out
end

describe("corpus pairings (SOURCES.md)", function()
  it("partitionable devices, split pool: both devices from one slice value", function()
    local r = core.schedule{files = {F .. "node-with-dra.yaml", F .. "pod-test-claim-template.yaml",
      P .. "resourceslice-partitionable-split-pool-v1.yaml", P .. "deviceclass-test-class-v1.yaml",
      P .. "resourceclaimtemplate-two-devices-matchattribute-v1beta2.yaml"}}
    local p = by_pod(r)["pod-0"]
    assert.are.equal("scheduled", p.status, p.reason)
    assert.are.same({"req-0 device-2-counters-1", "req-0 device-2-counters-2"}, results(p))
  end)

  it("shared counters with count 7: backtracks past device-1 (20Gi)", function()
    local r = core.allocate{node = "scheduler-perf-dra-0", files = {F .. "node-with-dra.yaml",
      F .. "partitionable-backtracking-split.yaml", P .. "deviceclass-test-class-v1.yaml",
      P .. "resourceclaim-count7-backtracking-v1.yaml"}}
    assert.are.equal("allocated", r.status, r.reason or r.error)
    local devs = {}
    for _, x in ipairs(r.claims[1].allocation.devices.results) do devs[#devs + 1] = x.device end
    assert.are.same({"device-2", "device-3", "device-4", "device-5", "device-6", "device-7", "device-8"}, devs)
  end)

  it("shared counters in the pre-v1 single-slice shape: devices of a counter slice are not allocatable", function()
    -- the v0.36/1.37 allocator files a slice with sharedCounters as a counter
    -- slice and ignores its devices; strict validation refuses the file
    local r = core.allocate{node = "scheduler-perf-dra-0", files = {F .. "node-with-dra.yaml",
      P .. "resourceslice-partitionable-backtracking-v1.yaml", P .. "deviceclass-test-class-v1.yaml",
      P .. "resourceclaim-count7-backtracking-v1.yaml"}}
    assert.are.equal("unsatisfiable", r.status)
    assert.matches("only one of `sharedCounters` or `devices` is allowed", r.warnings[1], 1, true)
    local rc, _, err = H.run{"allocate", "--validate", "strict", "--node", "scheduler-perf-dra-0",
      "-f", F .. "node-with-dra.yaml", "-f", P .. "resourceslice-partitionable-backtracking-v1.yaml"}
    assert.are.equal(2, rc)
    assert.matches("only one of `sharedCounters` or `devices` is allowed", err, 1, true)
  end)

  describe("compatibility groups", function()
    local files = {F .. "node-with-dra.yaml", F .. "claim-two-devices.yaml",
      P .. "resourceslice-compatibilitygroups-pool-v1.yaml", P .. "deviceclass-test-class-v1.yaml"}
    it("allocates two devices of one group with DRADeviceCompatibilityGroups", function()
      local r = core.allocate{node = "scheduler-perf-dra-0", files = files,
        gates = "DRADeviceCompatibilityGroups=true"}
      assert.are.equal("allocated", r.status, r.reason)
      assert.are.equal(2, #r.claims[1].allocation.devices.results)
    end)
    it("skips devices that declare groups while the gate is off, and says so", function()
      local r = core.allocate{node = "scheduler-perf-dra-0", files = files}
      assert.are.equal("unsatisfiable", r.status)
      assert.matches("2 declare compatibilityGroups (DRADeviceCompatibilityGroups is off)", r.reason, 1, true)
    end)
    it("cannot satisfy matchAttribute on attribute-less devices (the documented negative case)", function()
      local r = core.schedule{gates = "DRADeviceCompatibilityGroups=true",
        files = {F .. "node-with-dra.yaml", F .. "pod-test-claim-template.yaml",
        P .. "resourceslice-compatibilitygroups-pool-v1.yaml", P .. "deviceclass-test-class-v1.yaml",
        P .. "resourceclaimtemplate-two-devices-matchattribute-v1beta2.yaml"}}
      local p = by_pod(r)["pod-0"]
      assert.are.equal("unschedulable", p.status)
      assert.matches("lack the attribute of a constraint (dra.example.com/slice)", p.reason, 1, true)
    end)
  end)

  it("list-type attributes: 32 requests matched on a list attribute take devices 32..63", function()
    local r = core.schedule{gates = "DRAListTypeAttributes=true", files = {F .. "node-with-dra.yaml",
      P .. "resourceslice-list-attributes-64dev-v1.yaml", P .. "deviceclass-test-class-v1.yaml",
      P .. "resourceclaimtemplate-32req-matchattribute-list-v1.yaml", F .. "pod-test-claim-template.yaml"}}
    local p = by_pod(r)["pod-0"]
    assert.are.equal("scheduled", p.status, p.reason)
    local want = {}
    for i = 0, 31 do want[#want + 1] = "req-" .. i .. " device-" .. (32 + i) end
    assert.are.same(want, results(p))
  end)

  it("consumable capacity: two requests share one device with two shareIDs", function()
    local r = core.schedule{files = {F .. "node-with-dra.yaml", F .. "pod-test-claim-template.yaml",
      F .. "consumablecapacity-split.yaml", P .. "deviceclass-consumablecapacity-v1beta2.yaml",
      P .. "resourceclaimtemplate-consumablecapacity-v1beta2.yaml"}}
    local p = by_pod(r)["pod-0"]
    assert.are.equal("scheduled", p.status, p.reason)
    local res = p.claims[1].allocation.devices.results
    assert.are.equal(2, #res)
    for _, x in ipairs(res) do
      assert.are.equal("shareable-device", x.device)
      assert.matches("^%x+%-%x+%-4%x+%-[89ab]%x+%-%x+$", x.shareID)
      assert.are.equal("10Gi", x.consumedCapacity.memory)
    end
    assert.are_not.equal(res[1].shareID, res[2].shareID)
  end)

  it("consumable capacity: dra-driver-cpu grouped mode takes 10 CPUs of a NUMA device", function()
    local C = M .. "dra-driver-cpu/"
    for _, slice in ipairs{"resourceslice-grouped-mode-docs.yaml", "resourceslice-grouped-kind-ci-live.yaml"} do
      local r = core.schedule{gates = "DRAListTypeAttributes=true",
        files = {C .. slice, C .. "deviceclass-dra.cpu.yaml", C .. "pod-with-claim-grouped-mode.yaml"}}
      local p = by_pod(r)["pod-cpu-dra-claim"]
      assert.are.equal("scheduled", p.status, p.reason)
      local x = p.claims[1].allocation.devices.results[1]
      assert.are.equal("cpudevnuma000", x.device)
      assert.are.equal("10", x.consumedCapacity["dra.cpu/cpu"])
    end
  end)

  it("device taints: a DeviceTaintRule blocks claims without a toleration", function()
    local base = {M .. "k8s-e2e/devicetaintrule-v1.yaml", F .. "class-example.yaml",
      F .. "node-with-dra.yaml", P .. "resourceslice-basic-10dev-v1.yaml"}
    local files = {table.unpack(base)}
    files[#files + 1] = M .. "k8s-e2e/resourceclaim-toleration-opaque-config-v1.yaml"
    local p = by_pod(core.schedule{files = files})["test-external-claim"]
    assert.are.equal("scheduled", p.status, p.reason)
    assert.are.same({{opaque = {driver = "test-driver.cdi.k8s.io", parameters = {a = "b"}}, source = "FromClaim"}},
      p.claims[1].allocation.devices.config)
    assert.are.equal("dra.example.com/unhealthy", p.claims[1].allocation.devices.results[1].tolerations[1].key)
  end)

  it("device taints: NoExecute rule vs. toleration variants (dra-example-driver)", function()
    local D = M .. "dra-example-driver/"
    local common = {D .. "device-taint-eviction-time-1-claimtemplates-pods.yaml",
      D .. "resourceslice-gpu-8devices-readme.yaml", D .. "deviceclass-gpu.example.com.rendered.yaml"}
    local noexec = {table.unpack(common)}
    noexec[#noexec + 1] = D .. "device-taint-eviction-time-2-devicetaintrule-noexecute.yaml"
    local p = by_pod(core.schedule{files = noexec})
    assert.are.equal("unschedulable", p["pod-no-toleration"].status)
    assert.matches("8 tainted without a matching toleration", p["pod-no-toleration"].reason, 1, true)
    assert.are.equal("scheduled", p["pod-with-toleration"].status)
    assert.are.equal("scheduled", p["pod-with-300s-toleration"].status)
    -- the tolerations only cover NoExecute: a NoSchedule rule blocks everyone
    local nosched = {table.unpack(common)}
    nosched[#nosched + 1] = D .. "device-taint-noschedule-devicetaintrule.yaml"
    for _, q in pairs(by_pod(core.schedule{files = nosched})) do
      assert.are.equal("unschedulable", q.status)
    end
  end)

  it("GPU+NIC alignment on AWS p4d reproduces the recorded allocation", function()
    local D = M .. "dranet/"
    local r = core.schedule{files = {F .. "pods-aws-aligned.yaml", D .. "aws-p4d-resourceslice-gpu-a100x8.yaml",
      D .. "aws-p4d-resourceslice-dranet-efa.yaml", M .. "nvidia-gpu/deviceclasses-all.rendered.yaml",
      D .. "aws-deviceclass-efa.yaml", D .. "aws-rct-gpu-efa-aligned-unaligned.yaml"}}
    assert.are.equal(4, #r.pods)
    local roots = {}
    for _, p in ipairs(r.pods) do
      assert.are.equal("scheduled", p.status, p.reason)
      roots[#roots + 1] = results(p)[1] .. "+" .. results(p)[2]
    end
    assert.are.same({"gpu gpu-0+efa pci-0000-10-1b-0", "gpu gpu-2+efa pci-0000-20-1b-0",
      "gpu gpu-4+efa pci-0000-90-1b-0", "gpu gpu-6+efa pci-0000-a0-1b-0"}, roots)
    -- with three PCIe roots taken, the fourth worker gets exactly what the
    -- recorded claim status holds
    local rec = core.yaml_decode(H.read_file(D .. "aws-resourceclaim-allocated-status.yaml"))[1]
    local got = r.pods[4].claims[1].allocation
    assert.are.same(rec.status.allocation.devices.results, got.devices.results)
    assert.are.same(rec.status.allocation.nodeSelector, got.nodeSelector)
  end)

  it("GPU+NIC on OCI GB200: every claim template allocates on its own", function()
    local D = M .. "dranet/"
    local pods = core.load_docs(F .. "pods-oci-gb200.yaml")
    assert.is_not_nil(pods)
    for _, doc in ipairs(pods) do
      local pod = doc.object
      local r = core.schedule{text = core.json_encode(pod), files = {D .. "oci-gb200-resourceslice-gpu.yaml",
        D .. "oci-gb200-resourceslice-dranet.yaml", M .. "nvidia-gpu/deviceclasses-all.rendered.yaml",
        D .. "oci-deviceclass-dranet.net.yaml", D .. "oci-gb200-rct-gpu-nic-numa.yaml"}}
      assert.are.equal("scheduled", r.pods[1].status, pod.metadata.name .. ": " .. tostring(r.pods[1].reason))
    end
  end)

  it("prioritized list: pod0 falls back to older-gpu, pod1 gets latest-gpu", function()
    local D = M .. "dra-example-driver/"
    local r = core.schedule{files = {D .. "prioritized-alternatives.yaml", D .. "resourceslice-gpu-8devices-readme.yaml",
      D .. "deviceclass-gpu.example.com.rendered.yaml"}}
    local p = by_pod(r)
    assert.are.same({"gpu/older-gpu gpu-0"}, results(p.pod0))
    assert.are.same({"gpu/latest-gpu gpu-1"}, results(p.pod1))
    assert.are.same({2}, p.pod0.claims[1].chosen)
    assert.are.same({0}, p.pod1.claims[1].chosen)
  end)

  it("whole H100 nodes (EKS, live slices) with NVIDIA's classes", function()
    local r = core.schedule{files = {M .. "nvidia-aicr/eks-2x-h100x8-resourceslices-live.yaml",
      M .. "nvidia-gpu/deviceclasses-all.rendered.yaml", M .. "nvidia-gpu/quickstart-gpu-test8-v1beta1.yaml"}}
    local p = r.pods[1]
    assert.are.equal("scheduled", p.status, p.reason)
    assert.are.equal(2, #p.claims[1].allocation.devices.results)
    assert.are.equal("gpu.nvidia.com", p.claims[1].allocation.devices.results[1].driver)
  end)
end)
