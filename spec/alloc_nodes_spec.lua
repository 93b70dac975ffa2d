-- alloc_nodes_spec.lua - choosing a node for each pod (allocate without
-- --node): filters, firstAvailable scoring, ties in node-name order, each
-- allocation visible to the next pod, claims shared between pods.
local core = require "draengine.core"
local H = require "support.helper"

local F = H.root .. "/spec/fixtures/alloc/"
local NODES = F .. "three-nodes.yaml"

-- pods: list of {name, template, [extra spec lines]}
local function pods(list)
  local out = {}
  for _, p in ipairs(list) do
    out[#out + 1] = string.format([[
---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  containers: [{name: c, image: x}]
%s  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: %s}
]], p[1], p[3] or "", p[2])
  end
  return table.concat(out)
end

local function placement(r)
  local t = {}
  for _, p in ipairs(r.pods) do
    if p.status == "scheduled" then
      t[#t + 1] = p.name .. "@" .. p.node .. ":" .. p.claims[1].allocation.devices.results[1].device
    else
      t[#t + 1] = p.name .. ":" .. p.status
    end
  end
  return t
end

describe("node choice", function()
  it("fills nodes in name order, each pod seeing the previous allocations", function()
    local r = core.schedule{file = NODES, text = pods{{"p0", "one-gpu"}, {"p1", "one-gpu"}, {"p2", "one-gpu"}}}
    assert.are.same({"p0@node-a:gpu-0", "p1@node-a:gpu-1", "p2@node-b:gpu-0"}, placement(r))
  end)

  it("skips nodes whose devices do not match the selectors", function()
    local r = core.schedule{file = NODES, text = pods{{"p0", "one-h100"}}}
    assert.are.same({"p0@node-b:gpu-0"}, placement(r))
  end)

  it("prefers the node where an earlier firstAvailable alternative fits (8 - index)", function()
    local r = core.schedule{file = NODES, text = pods{{"p0", "prefer-h100"}}}
    assert.are.same({"p0@node-b:gpu-0"}, placement(r))
    assert.are.equal(8, r.pods[1].score)
    assert.are.same({0}, r.pods[1].claims[1].chosen)
  end)

  it("respects the pod's nodeSelector and the nodes' taints", function()
    local r = core.schedule{file = NODES, text = pods{
      {"zone-b", "one-gpu", "  nodeSelector: {zone: b}\n"},
      {"tolerant", "one-h100", "  nodeSelector: {zone: c}\n  tolerations: [{key: dedicated, operator: Equal, value: ml, effect: NoSchedule}]\n"},
      {"intolerant", "one-gpu", "  nodeSelector: {zone: c}\n"}}}
    assert.are.same({"zone-b@node-b:gpu-0", "tolerant@node-c:gpu-0", "intolerant:unschedulable"}, placement(r))
    assert.matches("untolerated taint", r.pods[3].reason, 1, true)
  end)

  it("summarises why no node fits, top reasons first", function()
    local list = {}
    for i = 1, 7 do list[#list + 1] = {"p" .. i, "one-gpu"} end
    local r = core.schedule{file = NODES, text = pods(list)}
    local pl = placement(r)
    assert.are.equal("p6@node-b:gpu-3", pl[6])
    assert.are.equal("p7:unschedulable", pl[7])
    local why = r.pods[7].reason
    assert.matches("^0/3 nodes are available: ", why)
    assert.matches("1 x node(s) had untolerated taint", why, 1, true)
    assert.matches("2 x no free device", why, 1, true)
  end)

  it("allocates a claim shared by two pods once and places both pods with it", function()
    local M = H.shared_dir() .. "/corpus/manifests/dra-example-driver/"
    local r = core.schedule{files = {M .. "basic-shared-claim-across-pods.yaml", M .. "resourceslice-gpu-8devices-readme.yaml",
      M .. "deviceclass-gpu.example.com.rendered.yaml"}}
    assert.are.equal(2, #r.pods)
    assert.are.equal("scheduled", r.pods[1].status, r.pods[1].reason)
    assert.are.equal("scheduled", r.pods[2].status, r.pods[2].reason)
    assert.is_true(r.pods[1].claims[1].allocated_now)
    assert.is_false(r.pods[2].claims[1].allocated_now)
    assert.are.same(r.pods[1].claims[1].allocation, r.pods[2].claims[1].allocation)
    assert.are.equal(r.pods[1].node, r.pods[2].node)
  end)

  it("uses the node names of the slices when the input has no Node objects", function()
    local M = H.shared_dir() .. "/corpus/manifests/dra-example-driver/"
    local r = core.schedule{files = {M .. "cel-selector.yaml", M .. "resourceslice-gpu-8devices-readme.yaml",
      M .. "deviceclass-gpu.example.com.rendered.yaml"}}
    assert.are.equal("scheduled", r.pods[1].status, r.pods[1].reason)
    assert.are.equal("dra-example-driver-cluster-worker", r.pods[1].node)
  end)
end)

describe("allocate command without --node", function()
  it("prints one table row per device with the attributes that decided it", function()
    local pod = H.write_temp(pods{{"p0", "one-h100"}, {"p1", "prefer-h100"}}, ".yaml")
    local rc, out, err = H.run{"allocate", "-f", NODES, "-f", pod, "-o", "table"}
    os.remove(pod)
    assert.are.equal(0, rc, err)
    assert.matches("POD%s+CLAIM%s+REQUEST%s+NODE%s+DRIVER%s+POOL%s+DEVICE%s+ATTRIBUTES", out)
    assert.matches("default/p0%s+default/p0%-gpu%-%w+%s+gpu%s+node%-b%s+gpu%.example%.com%s+node%-b%s+gpu%-0%s+model=H100", out)
    assert.matches("default/p1%s+default/p1%-gpu%-%w+%s+gpu/h100%s+node%-b", out)
    assert.matches("2 pod%(s%) scheduled, 0 unschedulable", out)
  end)

  it("exits 1 and names each unschedulable pod on stderr", function()
    local pod = H.write_temp(pods{{"p0", "one-gpu", "  nodeName: node-z\n"}}, ".yaml")
    local rc, out, err = H.run{"allocate", "-f", NODES, "-f", pod, "-o", "json"}
    os.remove(pod)
    assert.are.equal(1, rc)
    assert.matches("pod default/p0: unschedulable: 0/3 nodes are available: 3 x node%(s%) didn't match the requested node name", err)
    -- the List holds the pod only (no claim was allocated), with kube-scheduler's condition
    local items = core.json_decode(out).items
    assert.are.equal(1, #items)
    assert.are.equal("Pod", items[1].kind)
    local c = items[1].status.conditions[1]
    assert.are.same({ "PodScheduled", "False", "Unschedulable" }, { c.type, c.status, c.reason })
    assert.are.equal("0/3 nodes are available: 3 node(s) didn't match the requested node name. preemption: 0/3 "
      .. "nodes are available: 3 Preemption is not helpful for scheduling.", c.message)
  end)
end)

describe("extended resources backed by DRA (KEP-5004)", function()
  local M = H.shared_dir() .. "/corpus/manifests/dra-example-driver/"
  local files = {M .. "extended-resource-request.yaml", M .. "resourceslice-gpu-8devices-readme.yaml",
    M .. "deviceclass-gpu.example.com-extendedresource.rendered.yaml"}

  it("give pods asking for a class's resource a scheduler-made claim", function()
    local r = core.schedule{files = files}
    assert.are.equal(2, #r.pods)
    for i, p in ipairs(r.pods) do
      assert.are.equal("scheduled", p.status, p.reason)
      local c = p.claims[#p.claims]
      assert.matches("^" .. p.name .. "%-extended%-resources%-%w%w%w%w%w$", c.name)
      assert.is_true(c.allocated_now)
      local x = c.allocation.devices.results[1]
      assert.are.equal("container-0-request-0", x.request)
      assert.are.equal("gpu-" .. (i - 1), x.device)
    end
  end)

  it("leave the resource to the device plugin on a node that offers it", function()
    local node = [[
apiVersion: v1
kind: Node
metadata: {name: dra-example-driver-cluster-worker}
status:
  allocatable: {example.com/gpu: "4"}
]]
    local r = core.schedule{files = files, text = node}
    local byname = {}
    for _, p in ipairs(r.pods) do byname[p.name] = p end
    -- pod0 asks for the implicit deviceclass.resource.kubernetes.io/... name: DRA
    assert.are.equal(1, #byname.pod0.claims)
    -- pod1 asks for example.com/gpu, which the node's allocatable offers
    assert.are.equal("scheduled", byname.pod1.status)
    assert.are.equal(0, #byname.pod1.claims)
  end)
end)
