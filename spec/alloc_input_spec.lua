-- alloc_input_spec.lua - objects given twice to `draengine allocate`: an
-- identical copy is accepted, a different one refused (or, in warn mode,
-- kept under another name).  Content is hashed only when names collide, the
-- first copy read again from its file (al_input.c); these pin that the
-- answers are those of hashing every object.
local H = require "support.helper"

local NODE_A = [[
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {a: "1"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec: {selectors: [{cel: {expression: "true"}}]}
]]
local NODE_B = [[
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {a: "2"}}
]]
-- the same Node as in NODE_A, other key order and format
local NODE_A_JSON = [[{"kind":"Node","apiVersion":"v1","metadata":{"labels":{"a":"1"},"name":"n1"}}]]

describe("allocate: an object given twice", function()
  local dir
  before_each(function()
    dir = H.tmpdir()
    H.write(dir .. "/a.yaml", NODE_A)
    H.write(dir .. "/b.yaml", NODE_B)
    H.write(dir .. "/c.json", NODE_A_JSON)
  end)
  after_each(function() H.rmdir(dir) end)

  it("is refused with --validate strict when the copies differ, naming the second", function()
    local rc, out, err = H.run({ "allocate", "-f", dir .. "/a.yaml", "-f", dir .. "/b.yaml", "--validate", "strict" })
    assert.are.equal(2, rc)
    assert.are.equal("", out)
    assert.are.equal("draengine allocate: " .. dir .. "/b.yaml: document 1: Node \"n1\" is defined twice with different content\n", err)
  end)

  it("is kept under another name with a warning by default", function()
    local rc, _, err = H.run({ "allocate", "-f", dir .. "/a.yaml", "-f", dir .. "/b.yaml" })
    assert.are.equal(0, rc)
    assert.matches("b.yaml: document 1: Node \"n1\" is defined twice with different content; the second copy is kept as \"n1~2\"", err, 1, true)
  end)

  it("is accepted silently when both copies are the same, whatever the key order", function()
    for _, second in ipairs({ "/c.json", "/a.yaml" }) do
      local rc, _, err = H.run({ "allocate", "-f", dir .. "/a.yaml", "-f", dir .. second, "--validate", "strict", "-o", "table" })
      assert.are.equal(0, rc)
      assert.are.equal("", err)
    end
  end)

  it("compares within one file, and against a first copy from a file when the second comes on stdin", function()
    H.write(dir .. "/both.yaml", NODE_A .. "---\n" .. NODE_B)
    local rc, _, err = H.run({ "allocate", "-f", dir .. "/both.yaml", "--validate", "strict" })
    assert.are.equal(2, rc)
    assert.matches("both.yaml: document 3: Node \"n1\" is defined twice with different content", err, 1, true)
    rc, _, err = H.run({ "allocate", "-f", dir .. "/a.yaml", "-f", "-", "--validate", "strict" }, NODE_B)
    assert.are.equal(2, rc)
    assert.matches("<stdin>: document 1: Node \"n1\" is defined twice with different content", err, 1, true)
    rc, _, err = H.run({ "allocate", "-f", "-", "-f", dir .. "/c.json", "--validate", "strict", "-o", "table" }, NODE_A)
    assert.are.equal(0, rc)
    assert.are.equal("", err)
    rc, _, err = H.run({ "allocate", "-f", "-", "-f", dir .. "/b.yaml", "--validate", "strict" }, NODE_A)
    assert.are.equal(2, rc)
    assert.matches("b.yaml: document 1: Node \"n1\" is defined twice with different content", err, 1, true)
  end)

  it("compares items of a List with each other", function()
    H.write(dir .. "/list.json", '{"apiVersion":"v1","kind":"List","items":[' ..
      '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"}},' ..
      '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n3"}},' ..
      '{"metadata":{"name":"n2"},"kind":"Node","apiVersion":"v1"},' ..
      '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n3","labels":{"x":"y"}}}]}')
    local rc, _, err = H.run({ "allocate", "-f", dir .. "/list.json", "--validate", "strict" })
    assert.are.equal(2, rc)
    assert.are.equal("draengine allocate: " .. dir .. "/list.json: document 1: items[3]: Node \"n3\" is defined twice with different content\n", err)
  end)

  it("compares ResourceSlices of a snapshot List (decoded by the fast path) like any object", function()
    local function slice(model)
      return '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"s1"},' ..
        '"spec":{"driver":"gpu.example.com","nodeName":"n1","pool":{"name":"n1","generation":1,"resourceSliceCount":1},' ..
        '"devices":[{"name":"gpu-0","attributes":{"model":{"string":"' .. model .. '"}}}]}}'
    end
    local node = '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}'
    H.write(dir .. "/same.json", '{"apiVersion":"v1","kind":"List","items":[' .. node .. ',' .. slice("a") .. ',' .. slice("a") .. ']}')
    H.write(dir .. "/diff.json", '{"apiVersion":"v1","kind":"List","items":[' .. node .. ',' .. slice("a") .. ',' .. slice("b") .. ']}')
    local rc, _, err = H.run({ "allocate", "-f", dir .. "/same.json", "--validate", "strict", "-o", "table" })
    assert.are.equal(0, rc)
    assert.are.equal("", err)
    rc, _, err = H.run({ "allocate", "-f", dir .. "/diff.json", "--validate", "strict" })
    assert.are.equal(2, rc)
    assert.are.equal("draengine allocate: " .. dir .. "/diff.json: document 1: items[2]: ResourceSlice \"s1\" is defined twice with different content\n", err)
    -- the second copy in another file, as YAML
    H.write(dir .. "/one.json", '{"apiVersion":"v1","kind":"List","items":[' .. node .. ',' .. slice("a") .. ']}')
    H.write(dir .. "/s.yaml", slice("b"))
    rc, _, err = H.run({ "allocate", "-f", dir .. "/one.json", "-f", dir .. "/s.yaml", "--validate", "strict" })
    assert.are.equal(2, rc)
    assert.matches("s.yaml: document 1: ResourceSlice \"s1\" is defined twice with different content", err, 1, true)
  end)

  it("schedules from a snapshot List as from the same objects in YAML", function()
    local out = {}
    for _, fmt in ipairs({ "json", "yaml" }) do
      local rc, text = H.run({ "sim", "--nodes", "6", "-o", fmt })
      assert.are.equal(0, rc)
      H.write(dir .. "/cluster." .. fmt, text)
    end
    H.write(dir .. "/pod.yaml", [[
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c1, namespace: default}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}
---
apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: default, uid: u1}
spec:
  containers: [{name: c, image: x}]
  resourceClaims: [{name: dev, resourceClaimName: c1}]
]])
    for _, fmt in ipairs({ "json", "yaml" }) do
      local rc, text, err = H.run({ "allocate", "-f", dir .. "/cluster." .. fmt, "-f", dir .. "/pod.yaml" })
      assert.are.equal(0, rc)
      assert.are.equal("", err)
      out[fmt] = text
    end
    assert.matches('"nodeName"', out.json)
    assert.are.equal(out.yaml, out.json)
  end)
end)
