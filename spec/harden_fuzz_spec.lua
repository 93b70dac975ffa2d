-- harden_fuzz_spec.lua - inputs a fuzzing campaign found that crashed,
-- leaked, hung or were taken silently (2026-12-05; the issue note has the
-- campaign).  Each case holds the fix's behaviour; several only fail
-- under `make test-asan`, where the crash or the leak is caught.
local H = require "support.helper"
local P = require "fixtures.policy.helper"
local core = require "draengine.core"

local tmp = H.tmpdir()
teardown(function() H.rmdir(tmp) end)

local function file(name, text)
  local p = tmp .. "/" .. name
  H.write(p, text)
  return p
end

local function yaml(docs)
  local out = {}
  for _, d in ipairs(docs) do out[#out + 1] = core.yaml_encode(d) end
  return table.concat(out, "---\n")
end

local function node(name) return { apiVersion = "v1", kind = "Node", metadata = { name = name } } end
local CLASS = { apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "c" },
  spec = { selectors = { { cel = { expression = 'device.driver == "d.example.com"' } } } } }
local function claim(nreq, constraints)
  local reqs = {}
  for i = 1, nreq do reqs[i] = { name = "r" .. (i - 1), exactly = { deviceClassName = "c" } } end
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim", metadata = { name = "cl", namespace = "default" },
    spec = { devices = { requests = reqs, constraints = constraints } } }
end
local POD = { apiVersion = "v1", kind = "Pod", metadata = { name = "p", namespace = "default" },
  spec = { containers = { { name = "c", image = "x" } }, resourceClaims = { { name = "r", resourceClaimName = "cl" } } } }
local function slice(name, nodename, devices, count)
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = name },
    spec = { driver = "d.example.com", nodeName = nodename,
      pool = { name = "p", generation = 1, resourceSliceCount = count or 1 }, devices = devices } }
end

describe("allocate on hostile manifests", function()
  it("explains a node whose slice has an invalid node selector (its reason outlived its scope)", function()
    local s = slice("s", nil, { { name = "dev0" } })
    s.spec.nodeName = nil
    s.spec.nodeSelector = { nodeSelectorTerms = { { matchExpressions = { { key = "k", operator = "In" } } } } }
    local rc, _, err = H.run({ "allocate", "-f", file("badsel.yaml", yaml({ node("n1"), CLASS, s, claim(1), POD })) })
    assert.are.equal(1, rc, err)
    assert.truthy(err:find("pod default/p: unschedulable: 0/1 nodes are available: 1 x gather pool information: " ..
      "failed to perform node selection for slice s", 1, true), err)
  end)

  it("keeps both copies of a long-named object defined twice (its key overflowed a 1 KiB buffer)", function()
    local name = ("a"):rep(1100) -- kind, namespace and name past 1 KiB; the warning is cut at its cap
    local a = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, namespace = "default" }, data = { k = "1" } }
    local b = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, namespace = "default" }, data = { k = "2" } }
    local rc, _, err = H.run({ "allocate", "-f", file("long.yaml", yaml({ a, b })) })
    assert.are.equal(0, rc, err)
    assert.truthy(err:find('ConfigMap "default/' .. name .. '" is defined twice with different content; the second ' ..
      'copy is kept as "', 1, true), err)
  end)

  it("frees a claim's compiled requests past the slab's record size (24 requests leaked 4.6 KiB)", function()
    local devs = {}
    for i = 0, 23 do devs[#devs + 1] = { name = "dev" .. i, attributes = { x = { int = i } } } end
    local rc, out, err = H.run({ "allocate", "--node", "n0", "-f", file("many.yaml",
      yaml({ CLASS, node("n0"), slice("s0", "n0", devs), claim(24, { { distinctAttribute = "d.example.com/x" } }), POD })) })
    assert.are.equal(0, rc, err)
    assert.are.equal(24, #core.json_decode(out).items[1].status.allocation.devices.results)
  end)

  it("keeps each request's candidates while later requests add selector sets (they lived in an array that moved)", function()
    -- eight requests, eight selectors: the node's candidate sets grew from 2 to 4 to 8 and the
    -- first requests kept pointers into the array given back (a crash in 3 of 1,500 fuzz problems;
    -- under make test-asan the slab's poisoning reports the stale read)
    local devs, reqs = {}, {}
    for i = 0, 7 do
      devs[#devs + 1] = { name = "dev" .. i, attributes = { idx = { int = i } } }
      reqs[#reqs + 1] = { name = "r" .. i, exactly = { deviceClassName = "c",
        selectors = { { cel = { expression = 'device.attributes["d.example.com"].idx == ' .. (7 - i) } } } } }
    end
    local cl = claim(0)
    cl.spec.devices.requests = reqs
    local rc, out, err = H.run({ "allocate", "--node", "n0", "-f", file("sets.yaml",
      yaml({ CLASS, node("n0"), slice("s0", "n0", devs), cl, POD })) })
    assert.are.equal(0, rc, err)
    local got = {}
    for _, r in ipairs(core.json_decode(out).items[1].status.allocation.devices.results) do
      got[#got + 1] = r.request .. "=" .. r.device
    end
    assert.are.same({ "r0=dev7", "r1=dev6", "r2=dev5", "r3=dev4", "r4=dev3", "r5=dev2", "r6=dev1", "r7=dev0" }, got)
  end)

  it("explains a matchAttribute no pair of 5,120 devices meets (the explanation ran the call's arena dry)", function()
    local docs = { CLASS, node("n0") }
    for s = 0, 39 do
      local devs = {}
      for i = 0, 127 do devs[#devs + 1] = { name = ("d%d-%d"):format(s, i), attributes = { x = { int = s * 128 + i } } } end
      docs[#docs + 1] = slice("s" .. s, "n0", devs, 40)
    end
    docs[#docs + 1] = claim(2, { { matchAttribute = "d.example.com/x" } })
    docs[#docs + 1] = POD
    local rc, _, err = H.run({ "allocate", "--validate", "strict", "-f", file("match.yaml", yaml(docs)) })
    assert.are.equal(1, rc, err)
    assert.truthy(err:find("no combination satisfies matchAttribute d.example.com/x (claim cl)", 1, true), err)
  end)

  it("names every duplicate device of a slice past the API's 128 devices", function()
    local devs = {}
    for i = 0, 299 do devs[#devs + 1] = { name = "dev" .. (i == 250 and 7 or i == 299 and 100 or i) } end
    local rc, _, err = H.run({ "inspect", "-f", file("dups.yaml", yaml({ node("n0"), slice("s0", "n0", devs) })) })
    assert.are.equal(2, rc, err)
    assert.truthy(err:find('spec.devices[250]: Duplicate value: "dev7"', 1, true), err)
    assert.truthy(err:find('spec.devices[299]: Duplicate value: "dev100"', 1, true), err)
  end)
end)

describe("policies and workloads", function()
  local dirs = {}
  teardown(function() for _, d in ipairs(dirs) do P.rm(d) end end)
  local function pdir(files) local d = P.dir(files); dirs[#dirs + 1] = d; return d end
  local FIX = H.root .. "/policies/spec/fixtures/oci-gb200.yaml"

  it("refuses a derived string that is not UTF-8 or holds a NUL", function()
    for _, bad in ipairs({ '"\\xff\\xfe"', '"a\\0b"' }) do
      local d = pdir({ ["p.lua"] = 'return {name = "p", version = "1.0.0", api = 1, domains = {"x.example.com"},\n' ..
        '  derive = function(device) return {["x.example.com/a"] = ' .. bad .. '} end}\n' })
      local rc, _, err = H.run({ "inspect", "-f", FIX, "--policies", d })
      assert.are.equal(2, rc, err)
      assert.truthy(err:find('derive returned attribute \\"x.example.com/a\\": byte %d of the string is') or
        err:find('derive returned attribute "x.example.com/a": byte %d of the string is'), err)
    end
  end)

  it("reads an empty admit reason as 'refused', and fails one that is not UTF-8 (Events and conditions carry it)", function()
    local cases = {
      { '""', "refused by policy: policy p: refused" },
      { '"\\xff"', "admit returned a reason whose byte 0 is not valid UTF-8" },
    }
    for _, case in ipairs(cases) do
      local d = pdir({ ["p.lua"] = 'return {name = "p", version = "1.0.0", api = 1, domains = {},\n' ..
        '  admit = function(claim) return false, ' .. case[1] .. ' end}\n' })
      local rc, _, err = H.run({ "allocate", "-f", FIX, "-f", H.root .. "/spec/fixtures/policy/gb200-numa-claim.yaml",
        "--node", "10.140.65.248", "--policies", d })
      assert.are.equal(1, rc, err)
      assert.truthy(err:find(case[2], 1, true), err)
    end
  end)

  it("shows control characters of an admit reason and of a policy's error as escapes, and cuts a long reason between characters", function()
    local function allocate(body)
      local d = pdir({ ["p.lua"] = 'return {name = "p", version = "1.0.0", api = 1, domains = {},\n' ..
        '  admit = function(claim) ' .. body .. ' end}\n' })
      local rc, out, err = H.run({ "allocate", "-f", FIX, "-f", H.root .. "/spec/fixtures/policy/gb200-numa-claim.yaml",
        "--node", "10.140.65.248", "--policies", d })
      assert.are.equal(1, rc, err)
      return out .. err
    end
    local text = allocate('return false, "red\\27[31m\\r\\nFAKE\\7 \\194\\155x"')
    assert.truthy(text:find("policy p: red\\x1b[31m\\r\\nFAKE\\x07 \\u009bx", 1, true), text)
    assert.falsy(text:find("\27", 1, true), text)
    text = allocate('error("boom\\27[2J\\255")')
    assert.truthy(text:find("boom\\x1b[2J\\xff", 1, true), text)
    assert.falsy(text:find("\27", 1, true), text)
    -- 300 bytes of two-byte characters: the reason keeps whole ones only
    text = allocate('return false, string.rep("\\195\\169", 150)')
    local reason = text:match("policy p: ([\195\169]+)")
    assert.truthy(reason, text)
    assert.are.equal(254, #reason)
    assert.truthy(utf8.len(reason), "the cut reason is valid UTF-8")
  end)

  it("fails a policy spec whose teardown fails", function()
    local d = pdir({ ["p.lua"] = 'return {name = "p", version = "1.0.0", api = 1, domains = {"x.example.com"},\n' ..
      '  derive = function(device) return {} end}\n',
      ["spec/t_spec.lua"] = 'describe("d", function()\n  teardown(function() error("boom") end)\n' ..
        '  it("passes", function() end)\nend)\n' })
    local rc, out = H.run({ "policy", "test", d })
    assert.are.equal(1, rc, out)
    assert.truthy(out:find("d (teardown)", 1, true), out)
    assert.truthy(out:find("teardown: ", 1, true), out)
    assert.truthy(out:find("1 passed, 1 failed", 1, true), out)
  end)

  it("takes only whole counts above 0 as a workload's extended resources, naming the file and path", function()
    for _, v in ipairs({ '"0.5"', '"-1"', '"0"', '"x"', "0", "-2" }) do
      local f = file("w.json", '{"workloads": [{"name": "e", "extendedResources": {"nvidia.com/gpu": ' .. v .. '}}]}')
      local rc, _, err = H.run({ "run", "--nodes", "4", "--no-policies", "--workload", f })
      assert.are.equal(2, rc, v .. ": " .. err)
      assert.truthy(err:find(f .. ': workloads[0].extendedResources["nvidia.com/gpu"]: must be a whole count above 0', 1, true), err)
    end
  end)

  it("refuses a kubeconfig server URL longer than the request buffers take", function()
    local cfg = file("kc.yaml", table.concat({ "apiVersion: v1", "kind: Config", "current-context: c",
      "clusters:", "- name: k", "  cluster:", "    server: https://" .. ("a"):rep(600) .. ".example.com",
      "contexts:", "- name: c", "  context: {cluster: k, user: u}", "users:", "- name: u", "  user: {token: t}" }, "\n"))
    local rc, _, err = H.run({ "snapshot", "--kubeconfig", cfg, "--timeout", "2s" })
    assert.are_not.equal(0, rc)
    assert.truthy(err:find("server URL: 620 bytes long, more than the 512 allowed", 1, true), err)
  end)
end)
