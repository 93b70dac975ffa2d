-- alloc_explain_spec.lua - failures explained in terms a user can act on,
-- the search budget, and byte-for-byte determinism.
local core = require "draengine.core"
local H = require "support.helper"

local F = H.root .. "/spec/fixtures/alloc/"
local NODES = F .. "three-nodes.yaml"

local function claim(name, body)
  return string.format([[
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: %s, namespace: default}
spec:
  devices:
%s]], name, body)
end

local function allocate(node, text, extra)
  local f = H.write_temp(text, ".yaml")
  local args = {"allocate", "--node", node, "-f", NODES, "-f", f}
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  local rc, out, err = H.run(args)
  os.remove(f)
  return rc, out, err
end

describe("explanations", function()
  it("count what the class matches when there are too few devices", function()
    local rc, _, err = allocate("node-a", claim("three", [[
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com, count: 3}
]]))
    assert.are.equal(1, rc)
    assert.matches("cannot allocate all claims on node node-a: claim three, request gpu (3 x class gpu.example.com): 2 of 2 devices on the node match the class and selectors -> 2 usable", err, 1, true)
  end)

  it("say how many devices other claims hold", function()
    local rc, _, err = allocate("node-a", claim("holder", [[
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.example.com, pool: node-a, device: gpu-1}
]]) .. claim("two", [[
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com, count: 2}
]]))
    assert.are.equal(1, rc)
    assert.matches("2 of 2 devices on the node match the class and selectors, 1 in use by other claims -> 1 usable", err, 1, true)
  end)

  it("blame the constraint when every request could be served alone", function()
    local rc, _, err = allocate("node-a", claim("distinct-models", [[
    requests:
    - name: a
      exactly: {deviceClassName: gpu.example.com}
    - name: b
      exactly: {deviceClassName: gpu.example.com}
    constraints:
    - distinctAttribute: gpu.example.com/model
]]))
    assert.are.equal(1, rc)
    assert.matches("every request can be served alone, but not all together: no combination satisfies distinctAttribute gpu.example.com/model (claim distinct-models)", err, 1, true)
    assert.matches("distinctAttribute gpu.example.com/model: 2 requests need 2 devices with different values, but their usable devices offer only 1: A100", err, 1, true)
    assert.is_nil(err:find("compete for the same devices", 1, true))
  end)

  it("name capacity that is too small", function()
    local rc, _, err = allocate("node-a", claim("big", [[
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        capacity:
          requests: {memory: 64Gi}
]]))
    assert.are.equal(1, rc)
    assert.matches("2 without enough free capacity -> 0 usable", err, 1, true)
  end)

  it("report a hard error with upstream's words and exit 2", function()
    local rc, _, err = allocate("node-a", claim("lost", [[
    requests:
    - name: gpu
      exactly: {deviceClassName: no-such-class}
]]))
    assert.are.equal(2, rc)
    assert.matches("claim default/lost, request gpu: could not retrieve device class no-such-class", err, 1, true)
  end)
end)

-- One node with three GPUs of different models on two NUMA nodes, for the
-- constraint explanations.
local MIXED = [[
---
apiVersion: v1
kind: Node
metadata: {name: mixed}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: mixed-gpus}
spec:
  driver: gpu.example.com
  nodeName: mixed
  pool: {name: mixed, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {model: {string: A100}, numa: {int: 0}}}
  - {name: gpu-1, attributes: {model: {string: H100}, numa: {int: 0}}}
  - {name: gpu-2, attributes: {model: {string: H100}, numa: {int: 0}}}
]]

describe("constraint explanations", function()
  local function two(constraints, countb)
    return MIXED .. claim("pair", string.format([[
    requests:
    - name: a
      exactly: {deviceClassName: gpu.example.com}
    - name: b
      exactly: {deviceClassName: gpu.example.com, count: %d}
    constraints:
%s]], countb or 1, constraints))
  end

  it("name the matchAttribute no value of enough devices satisfies", function()
    -- two H100 for three devices: every request alone has its model, together they do not
    local rc, _, err = allocate("mixed", two("    - matchAttribute: gpu.example.com/model\n", 2))
    assert.are.equal(1, rc)
    assert.matches("every request can be served alone, but not all together: no combination satisfies matchAttribute gpu.example.com/model (claim pair)", err, 1, true)
    assert.matches("values on usable devices: A100, H100", err, 1, true)
    assert.is_nil(err:find("compete for the same devices", 1, true))
  end)

  it("name the distinctAttribute a request's devices cannot satisfy", function()
    local rc, _, err = allocate("mixed", two("    - distinctAttribute: gpu.example.com/numa\n      requests: [a, b]\n", 2))
    assert.are.equal(1, rc)
    assert.matches("no combination satisfies distinctAttribute gpu.example.com/numa (claim pair, requests a, b)", err, 1, true)
    assert.matches("request b needs 2 devices with different values, but its usable devices offer fewer: 0", err, 1, true)
  end)

  it("blame too few devices, not a constraint that some choice satisfies", function()
    -- matchAttribute model is satisfiable (gpu-1, gpu-2); four devices for three make it fail
    local text = MIXED .. claim("three", [[
    requests:
    - name: a
      exactly: {deviceClassName: gpu.example.com}
    - name: b
      exactly: {deviceClassName: gpu.example.com}
    - name: c
      exactly: {deviceClassName: gpu.example.com, count: 2}
    constraints:
    - matchAttribute: gpu.example.com/model
      requests: [a, b]
]])
    local rc, _, err = allocate("mixed", text)
    assert.are.equal(1, rc)
    assert.is_nil(err:find("no combination satisfies", 1, true), err)
    assert.matches("every request can be served alone, but not all together: the requests need 4 devices between them, but at most 3 of them can be served at once", err, 1, true)
  end)

  it("allocate when the constraint can be met (no false failure)", function()
    local rc, out = allocate("mixed", two("    - matchAttribute: gpu.example.com/model\n"))
    assert.are.equal(0, rc)
    assert.matches('"device": "gpu-1"', out, 1, true)
    assert.matches('"device": "gpu-2"', out, 1, true)
  end)
end)

describe("search budget", function()
  -- 30 devices with only two NUMA values, three requests that must all be on
  -- different NUMA nodes: impossible; the forward check sees it only once
  -- two requests hold values, so the search tries the pairs
  local devs = {}
  for i = 0, 29 do
    devs[#devs + 1] = string.format("  - name: dev-%02d\n    attributes: {numa: {int: %d}}\n", i, i % 2)
  end
  local text = [[
---
apiVersion: v1
kind: Node
metadata: {name: trap-node}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: trap-slice}
spec:
  driver: gpu.example.com
  nodeName: trap-node
  pool: {name: trap, generation: 1, resourceSliceCount: 1}
  devices:
]] .. table.concat(devs) .. claim("spread", [[
    requests:
    - name: a
      exactly: {deviceClassName: gpu.example.com}
    - name: b
      exactly: {deviceClassName: gpu.example.com}
    - name: c
      exactly: {deviceClassName: gpu.example.com}
    constraints:
    - distinctAttribute: gpu.example.com/numa
]])

  it("ends with a clear error when --max-search-steps is reached", function()
    local rc, _, err = allocate("trap-node", text, {"--max-search-steps", "50"})
    assert.are.equal(2, rc)
    assert.matches("search limit reached on node trap-node: more than 50 steps", err, 1, true)
    assert.matches("--max-search-steps", err, 1, true)
  end)

  it("finishes normally within the default budget", function()
    local rc, _, err = allocate("trap-node", text)
    assert.are.equal(1, rc)
    assert.matches("no combination satisfies distinctAttribute gpu.example.com/numa (claim spread)", err, 1, true)
    assert.matches("3 requests need 3 devices with different values, but their usable devices offer only 2: 0, 1", err, 1, true)
  end)

  it("stops at --dra-filter-timeout (DRASchedulerFilterTimeout) as kube-scheduler's Filter does", function()
    -- five distinct devices of forty for one request, then a request nothing serves:
    -- C(40,5) combinations before the search gives up.  With DRAListTypeAttributes
    -- no search is pruned (list-mode matchAttribute keeps upstream's narrowed
    -- intersection across a backtrack), so the request nothing serves is found
    -- only at the end of each combination
    local devs = {}
    for i = 0, 39 do
      devs[#devs + 1] = string.format("  - name: dev-%02d\n    attributes: {idx: {int: %d}}\n", i, i)
    end
    local deep = "---\napiVersion: v1\nkind: Node\nmetadata: {name: trap-node}\n---\n" ..
      "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: trap-slice}\nspec:\n" ..
      "  driver: gpu.example.com\n  nodeName: trap-node\n  pool: {name: trap, generation: 1, resourceSliceCount: 1}\n" ..
      "  devices:\n" .. table.concat(devs) .. claim("deep", [[
    requests:
    - name: a
      exactly: {deviceClassName: gpu.example.com, count: 5}
    - name: b
      exactly:
        deviceClassName: gpu.example.com
        selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].idx > 100'}}]
    constraints:
    - distinctAttribute: gpu.example.com/idx
]])
    local list = "DRAListTypeAttributes=true"
    local rc, _, err = allocate("trap-node", deep, {"--dra-filter-timeout", "20ms", "--feature-gates", list})
    assert.are.equal(2, rc)
    assert.matches("node trap-node: timed out trying to allocate devices", err, 1, true)
    -- without the timeout (0s) the step budget ends it instead
    rc, _, err = allocate("trap-node", deep, {"--dra-filter-timeout", "0s", "--feature-gates", list})
    assert.are.equal(2, rc)
    assert.matches("search limit reached on node trap-node: more than 1000000 steps", err, 1, true)
    -- with the gate off the flag is refused, as kube-scheduler refuses filterTimeout
    rc, _, err = allocate("trap-node", text, {"--dra-filter-timeout", "1ms", "--feature-gates", "DRASchedulerFilterTimeout=false"})
    assert.are.equal(2, rc)
    assert.matches("--dra-filter-timeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled", err, 1, true)
  end)

  it("reports the steps used through core.allocate", function()
    local r = core.allocate{node = "trap-node", file = NODES, text = text, max_steps = 100000}
    assert.are.equal("unsatisfiable", r.status)
    assert.is_true(r.steps > 50 and r.steps < 100000, tostring(r.steps))
  end)
end)

describe("distinctAttribute as kube-scheduler 1.37 keeps it", function()
  -- one slice of devices with the given values of `grp`, and a claim of one
  -- request of `count` devices that must all differ in it
  local function spread(values, count)
    local devs = {}
    for i, v in ipairs(values) do
      devs[#devs + 1] = string.format("  - name: dev-%02d\n    attributes: {grp: {int: %d}}\n", i - 1, v)
    end
    return "---\napiVersion: v1\nkind: Node\nmetadata: {name: trap-node}\n---\n" ..
      "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: trap-slice}\nspec:\n" ..
      "  driver: gpu.example.com\n  nodeName: trap-node\n  pool: {name: trap, generation: 1, resourceSliceCount: 1}\n" ..
      "  devices:\n" .. table.concat(devs) .. claim("spread", string.format([[
    requests:
    - name: r
      exactly: {deviceClassName: gpu.example.com, count: %d}
    constraints:
    - distinctAttribute: gpu.example.com/grp
]], count))
  end

  it("compares each device of a request with every one before it, not only the last", function()
    -- v0.36.2 kept one value per request: dev-02 (0) was compared with dev-01 (1) only
    local rc, _, err = allocate("trap-node", spread({ 0, 1, 0 }, 3))
    assert.are.equal(1, rc, err)
    assert.matches("request r needs 3 devices with different values, but its usable devices offer fewer: 0, 1", err, 1, true)
    -- first fit still: dev-02 is passed over for dev-03
    local out
    rc, out, err = allocate("trap-node", spread({ 0, 1, 0, 2 }, 3))
    assert.are.equal(0, rc, err)
    local got = {}
    for d in out:gmatch('"device": "(dev%-%d+)"') do got[#got + 1] = d end
    assert.are.same({ "dev-00", "dev-01", "dev-03" }, got)
  end)

  it("fails at once when a request needs more devices than there are values left", function()
    -- 64 devices, 7 values, 8 wanted: without the count of values left the
    -- search would try every way of picking 7 of them first
    local values = {}
    for i = 0, 63 do values[#values + 1] = i % 7 end
    local r = core.allocate{node = "trap-node", file = NODES, text = spread(values, 8), max_steps = 1000}
    assert.are.equal("unsatisfiable", r.status)
    assert.is_true(r.steps < 100, tostring(r.steps))
    -- and with 8 values it finds the first eight different ones
    values[64] = 7
    local rc, out, err = allocate("trap-node", spread(values, 8))
    assert.are.equal(0, rc, err)
    assert.matches('"device": "dev-63"', out, 1, true)
    assert.matches('"device": "dev-06"', out, 1, true)
    assert.falsy(out:find('"device": "dev-07"', 1, true), out)
  end)
end)

describe("determinism", function()
  local M = H.shared_dir() .. "/corpus/manifests/"

  it("gives identical bytes for the same input, shareIDs included", function()
    local args = {"allocate", "-f", F .. "node-with-dra.yaml", "-f", F .. "pod-test-claim-template.yaml",
      "-f", F .. "consumablecapacity-split.yaml", "-f", M .. "k8s-scheduler-perf/deviceclass-consumablecapacity-v1beta2.yaml",
      "-f", M .. "k8s-scheduler-perf/resourceclaimtemplate-consumablecapacity-v1beta2.yaml"}
    local rc1, out1 = H.run(args)
    local rc2, out2 = H.run(args)
    assert.are.equal(0, rc1)
    assert.are.equal(0, rc2)
    assert.are.equal(out1, out2)
    local ids = {}
    for id in out1:gmatch('"shareID": "([^"]+)"') do ids[#ids + 1] = id end
    assert.are.equal(2, #ids)
    for _, id in ipairs(ids) do
      assert.matches("^%x%x%x%x%x%x%x%x%-%x%x%x%x%-4%x%x%x%-[89ab]%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$", id)
      assert.are.equal(id:lower(), id)
    end
    -- another seed, other shareIDs, same devices
    args[#args + 1] = "--seed=7"
    local _, out3 = H.run(args)
    assert.are_not.equal(out1, out3)
    assert.are.equal(out1:gsub('"shareID": "[^"]+"', ""), out3:gsub('"shareID": "[^"]+"', ""))
  end)

  it("schedules the same pods to the same nodes every time", function()
    local pods = {}
    for i = 1, 9 do
      pods[#pods + 1] = string.format([[
---
apiVersion: v1
kind: Pod
metadata: {name: p%d, namespace: default}
spec:
  containers: [{name: c, image: x}]
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: %s}
]], i, i % 2 == 0 and "prefer-h100" or "one-gpu")
    end
    local f = H.write_temp(table.concat(pods), ".yaml")
    local a = {H.run{"allocate", "-f", NODES, "-f", f, "-o", "yaml"}}
    local b = {H.run{"allocate", "-f", NODES, "-f", f, "-o", "yaml"}}
    os.remove(f)
    assert.are.same(a, b)
    assert.matches("nodeSelectorTerms", a[2], 1, true)
  end)
end)
