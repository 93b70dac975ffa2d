-- sched_fit_spec.lua - node fit beyond devices, evaluated on a graph:
-- requests with sidecars and init containers, nodeSelector, required node
-- affinity, taints and tolerations, unschedulable nodes, allocatable.
local core = require "draengine.core"

local function node(name, extra)
  local n = { apiVersion = "v1", kind = "Node", metadata = { name = name, labels = { ["kubernetes.io/hostname"] = name } },
    status = { allocatable = { cpu = "4", memory = "8Gi", pods = "10" } } }
  for k, v in pairs(extra or {}) do n[k] = v end
  return n
end

local function pod(name, spec)
  spec.schedulerName = spec.schedulerName or "draengine"
  spec.containers = spec.containers or { { name = "c", image = "x" } }
  return { apiVersion = "v1", kind = "Pod", metadata = { name = name, namespace = "default", uid = name .. "-uid" }, spec = spec }
end

describe("scheduler node fit", function()
  local g
  before_each(function() g = core.graph{} end)

  it("adds up containers and sidecars and takes the larger init need", function()
    g:apply(pod("p", {
      initContainers = {
        { name = "side", image = "x", restartPolicy = "Always", resources = { requests = { cpu = "200m" } } },
        { name = "init", image = "x", resources = { requests = { cpu = "1", memory = "1Gi" } } },
      },
      containers = { { name = "a", image = "x", resources = { requests = { cpu = "300m", memory = "100Mi" } } },
        { name = "b", image = "x", resources = { requests = { cpu = "100m" } } } },
    }))
    local r = core.sched.pod_requests(g, "default", "p")
    -- regular 400m + sidecar 200m = 600m; init needs 1 + sidecar 200m = 1200m
    assert.are.equal(1200, r.cpu)
    assert.are.equal(1024 * 1024 * 1024 * 1000, r.memory)
  end)

  it("checks cpu and memory against allocatable", function()
    g:apply(node("n"))
    g:apply(pod("small", { containers = { { name = "c", image = "x", resources = { requests = { cpu = "1" } } } } }))
    g:apply(pod("big", { containers = { { name = "c", image = "x", resources = { requests = { cpu = "5" } } } } }))
    assert.is_true((core.sched.node_fit(g, "default", "small", "n")))
    local ok, reasons, why = core.sched.node_fit(g, "default", "big", "n")
    assert.is_false(ok)
    assert.are.same({ "resources" }, reasons)
    assert.are.equal("Insufficient cpu", why)
  end)

  it("honours nodeSelector and required node affinity", function()
    g:apply(node("ssd", { metadata = { name = "ssd", labels = { disk = "ssd", zone = "a" } } }))
    g:apply(pod("sel", { nodeSelector = { disk = "hdd" } }))
    g:apply(pod("aff", { affinity = { nodeAffinity = { requiredDuringSchedulingIgnoredDuringExecution = {
      nodeSelectorTerms = { { matchExpressions = { { key = "zone", operator = "In", values = { "a", "b" } } } } } } } } }))
    g:apply(pod("anti", { affinity = { nodeAffinity = { requiredDuringSchedulingIgnoredDuringExecution = {
      nodeSelectorTerms = { { matchExpressions = { { key = "zone", operator = "NotIn", values = { "a" } } } } } } } } }))
    local ok, reasons = core.sched.node_fit(g, "default", "sel", "ssd")
    assert.is_false(ok)
    assert.are.same({ "selector" }, reasons)
    assert.is_true((core.sched.node_fit(g, "default", "aff", "ssd")))
    assert.is_false((core.sched.node_fit(g, "default", "anti", "ssd")))
  end)

  it("refuses untolerated NoSchedule/NoExecute taints and cordoned nodes", function()
    g:apply(node("t", { spec = { taints = { { key = "gpu", value = "yes", effect = "NoSchedule" },
      { key = "soft", effect = "PreferNoSchedule" } } } }))
    g:apply(node("cordoned", { spec = { unschedulable = true } }))
    g:apply(pod("plain", {}))
    g:apply(pod("tol", { tolerations = { { key = "gpu", operator = "Equal", value = "yes", effect = "NoSchedule" } } }))
    g:apply(pod("tol-all", { tolerations = { { operator = "Exists" } } }))
    g:apply(pod("tol-wrong", { tolerations = { { key = "gpu", operator = "Equal", value = "no" } } }))
    local ok, reasons, why = core.sched.node_fit(g, "default", "plain", "t")
    assert.is_false(ok)
    assert.are.same({ "taint" }, reasons)
    assert.are.equal("node(s) had untolerated taint(s)", why) -- kube-scheduler 1.37's TaintToleration reason
    assert.is_true((core.sched.node_fit(g, "default", "tol", "t")))
    assert.is_true((core.sched.node_fit(g, "default", "tol-all", "t")))
    assert.is_false((core.sched.node_fit(g, "default", "tol-wrong", "t")))
    ok, reasons = core.sched.node_fit(g, "default", "plain", "cordoned")
    assert.is_false(ok)
    assert.are.same({ "unschedulable" }, reasons)
    assert.is_true((core.sched.node_fit(g, "default", "tol-all", "cordoned")))
  end)

  it("leaves extended resources a DeviceClass serves to DRA, and refuses unknown ones", function()
    g:apply(node("n"))
    g:apply({ apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "gpu" },
      spec = { extendedResourceName = "example.com/gpu" } })
    g:apply(pod("dra", { containers = { { name = "c", image = "x", resources = { requests = { ["example.com/gpu"] = "1" }, limits = { ["example.com/gpu"] = "1" } } } } }))
    g:apply(pod("none", { containers = { { name = "c", image = "x", resources = { requests = { ["other.com/fpga"] = "1" }, limits = { ["other.com/fpga"] = "1" } } } } }))
    assert.is_true((core.sched.node_fit(g, "default", "dra", "n")))
    local ok, _, why = core.sched.node_fit(g, "default", "none", "n")
    assert.is_false(ok)
    assert.are.equal("Insufficient other.com/fpga", why)
  end)
end)
