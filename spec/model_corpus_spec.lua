-- model_corpus_spec.lua - every manifest of the third-party corpus loads, or
-- is refused with an error that names the file, the document, the object and
-- the field; the files kept BROKEN on purpose (SOURCES.md) are refused for
-- the defect SOURCES.md lists.
local core = require "draengine.core"
local H = require "support.helper"

local shared = H.shared_dir()
local corpus = shared and (shared .. "/corpus/manifests")

local function files()
  local out = {}
  local p = io.popen("find " .. H.shell_quote(corpus) .. " -name '*.yaml' -o -name '*.json' | LC_ALL=C sort")
  for f in p:lines() do out[#out + 1] = f end
  p:close()
  return out
end

local function load_all(path)
  local g = core.graph { keep_going = true }
  local ok, err = pcall(g.load, g, path)
  return ok, err, g
end

-- SOURCES.md: the defect of each BROKEN file, as the field paths and
-- values our error must point at.
local broken = {
  ["intel/gpu-pod-inline-aligned-gpus-BROKEN-keys.yaml"] = {
    'document 2: Pod "test-inline-claim"',
    'apiVersion: Required value (found "apiversion": field names are case-sensitive)',
  },
  ["k8s-enhancements/kep4815-multihost-tpu-perdevicenodeselection-BROKEN.yaml"] = {
    -- first slice has no node selection
    'document 1: ResourceSlice "device-slice": spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required',
    -- operator "IN" (must be In)
    'spec.devices[0].nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "IN": not a valid selector operator',
    -- capacity written as a plain quantity instead of {value: ...}
    'spec.devices[0].capacity["tpus"]: Invalid value: a string: must be an object with a "value" quantity',
  },
  ["k8s-enhancements/kep4816-firstavailable-v1beta2-BROKEN-constraint.yaml"] = {
    -- requests: ["nic", gpu"] -> the string gpu"
    'spec.devices.constraints[0].requests[1]: Invalid value: "gpu\\"": must be the name of a request in the claim',
    -- matchAttribute given as a list
    "spec.devices.constraints[0].matchAttribute: Invalid value: an array: must be a string",
  },
  ["k8s-enhancements/kep5004-extendedresource-deviceclass-and-slice-v1beta1-BROKEN.yaml"] = {
    -- the slice has no pool
    'document 2: ResourceSlice "gke-drabeta-n1-standard-4-2xt4-346fe653-zrw2-gpu.coqj92d": spec.pool.name: Required value',
    "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
  },
  ["k8s-website/resourceclaim-v1-BROKEN-cel-indent.yaml"] = {
    -- "expression" at the level of "cel": {cel: null, expression: ...}
    'spec.devices.requests[0].exactly.selectors[0]: unknown field "expression" (it belongs under "cel")',
    "spec.devices.requests[0].exactly.selectors[0].cel: Required value",
  },
}

describe("the manifest corpus", function()
  if not corpus then
    pending("../shared/corpus not found")
    return
  end

  local all = files()

  it("has the files SOURCES.md describes", function()
    assert.is_true(#all >= 100)
    for name in pairs(broken) do
      local f = io.open(corpus .. "/" .. name)
      assert.is_not_nil(f, name)
      f:close()
    end
  end)

  it("loads every file or refuses it with a located error", function()
    local loaded, refused = 0, 0
    for _, f in ipairs(all) do
      local ok, err = load_all(f)
      if ok then
        loaded = loaded + 1
      else
        refused = refused + 1
        -- file: document N: Kind "name": field path: message
        assert.truthy(err:find(f, 1, true), err)
        assert.truthy(err:match(": document %d+: "), err)
        assert.truthy(err:match("^[^\n]*: document %d+: %u%a+ [\"(]"), err)
      end
    end
    assert.is_true(loaded >= 90, "loaded " .. loaded)
    assert.is_true(refused >= 5)
  end)

  for name, defects in pairs(broken) do
    it("refuses " .. name .. " for its listed defect", function()
      local ok, err = load_all(corpus .. "/" .. name)
      assert.is_false(ok)
      for _, d in ipairs(defects) do
        assert.truthy(err:find(d, 1, true), "missing: " .. d .. "\nin: " .. err)
      end
    end)
  end

  it("refuses other known-defective files precisely", function()
    local cases = {
      ["k8s-e2e/devicetaintpolicy-v1alpha3-OLD-selector-field.yaml"] =
        'spec: unknown field "selector" (pre-release drafts called it "selector"; the released API calls it "deviceSelector")',
      ["k8s-enhancements/kep5491-typed-list-attributes-fragment.yaml"] = "apiVersion: Required value",
      ["k8s-enhancements/kep5491-pcieroot-list-cpu-gpu-nic-story.yaml"] =
        'document 4: ResourceClaim (no name): metadata.name: Required value: name or generateName is required; spec: unknown field "requests" (it belongs under "devices")',
      ["k8s-enhancements/kep6080-derived-attributes-gpu-nic-numa-v1.yaml"] =
        'spec.devices.requests[0].exactly.derivedAttributes[0].name: Invalid value: "shared-numa-node": a fully qualified name must be a domain and a name separated by a slash',
      ["k8s-scheduler-perf/resourceslice-partitionable-backtracking-v1.yaml"] =
        "only one of `sharedCounters` or `devices` is allowed",
      ["k8s-enhancements/kep5963-compatibility-groups-mig-vs-vgpu.yaml"] =
        'spec.devices.requests[0]: unknown field "deviceClassName" (in resource.k8s.io/v1 and v1beta2 it belongs under "exactly")',
    }
    for name, want in pairs(cases) do
      local ok, err = load_all(corpus .. "/" .. name)
      assert.is_false(ok, name)
      assert.truthy(err:find(want, 1, true), "missing: " .. want .. "\nin: " .. err)
    end
  end)

  it("decodes real hardware shapes with their attributes and capacities", function()
    local g = core.graph()
    g:load(corpus .. "/nvidia-aicr/eks-2x-h100x8-resourceslices-live.yaml")
    local d = g:device("gpu.nvidia.com", "gpu-node-1", "gpu-0")
    assert.are.equal("NVIDIA H100 80GB HBM3", d.attributes["gpu.nvidia.com/productName"])
    assert.are.equal("81559Mi", d.capacity["gpu.nvidia.com/memory"])
    assert.are.equal("gpu-node-1", d.node)
    assert.are.same({ "gpu-node-1", "gpu-node-2" }, g:nodes())
    local st = g:stats()
    assert.are.equal(4, st.slices)
    assert.are.equal(20, st.devices)
  end)

  it("converts the v1beta1 `basic` wrapper and v1alpha3 slices", function()
    local g = core.graph()
    g:load(corpus .. "/google-tpu/resourceslice-v1beta1-kind-fake-tpu-readme.yaml")
    g:load(corpus .. "/nvidia-gpu/imex-resourceslice-v1alpha3.yaml")
    local imex = g:device("gpu.nvidia.com", "imex-domain-0f884867-ba2f-4294-9155-b495ff367eea-1", "imex-channel-3")
    assert.are.equal(3, imex.attributes["gpu.nvidia.com/channel"])
    assert.is_nil(imex.node)
    local shared_slices = g:shared_slices()
    assert.are.equal(2, #shared_slices)
  end)

  it("never crashes the command on any file (one run over the whole corpus)", function()
    local rc, out, err = H.run({ "inspect", "-f", corpus })
    assert.are.equal(2, rc)
    assert.are.equal("", out)
    for name in pairs(broken) do
      assert.truthy(err:find(name, 1, true), name)
    end
  end)
end)
