-- policy_e2e.lua - a Lua policy on a real control plane: its derived
-- attribute is what a DeviceClass selects, and serve picks up new revisions
-- from a ConfigMap-style directory whose `..data` link is flipped the way the
-- kubelet's atomic writer does it, several times in a row.
local E = require "e2e.support.e2e"
local K = require "support.kubeapi"
local H = require "support.helper"

local NS = "e2e-policy"
local DRIVER = "gpu.e2e.example.com"

-- Revision `gold`: only the device with that index is gold.
local function policy(gold)
  return string.format([[
return {
  name = "e2e-tier",
  version = "1.0.%d",
  api = 1,
  description = "the device with index %d is gold",
  domains = { "tier.e2e.example.com" },
  derive = function(device)
    local i = device.attributes.index
    if i == nil then return nil end
    return { ["tier.e2e.example.com/tier"] = (i == %d) and "gold" or "bronze" }
  end,
}
]], gold, gold, gold)
end

-- A ConfigMap volume as the kubelet writes it: DIR/..<ts>/ holds the files,
-- DIR/..data links to it, DIR/<file> links to ..data/<file>; an update writes
-- a new ..<ts>, renames a ..data_tmp link over ..data and removes the old dir.
local Volume = {}
Volume.__index = Volume

local function volume(dir)
  H.sh("mkdir -p " .. H.shell_quote(dir))
  return setmetatable({ dir = dir, n = 0 }, Volume)
end

function Volume:write(files)
  self.n = self.n + 1
  local ts = string.format("..2026_12_02_00_00_%02d.%09d", self.n, self.n)
  local q = H.shell_quote
  H.sh("mkdir " .. q(self.dir .. "/" .. ts))
  for name, text in pairs(files) do H.write(self.dir .. "/" .. ts .. "/" .. name, text) end
  H.sh("ln -s " .. q(ts) .. " " .. q(self.dir .. "/..data_tmp") .. " && mv -T " ..
    q(self.dir .. "/..data_tmp") .. " " .. q(self.dir .. "/..data"))
  for name in pairs(files) do
    H.sh("test -L " .. q(self.dir .. "/" .. name) .. " || ln -s " .. q("..data/" .. name) .. " " ..
      q(self.dir .. "/" .. name))
  end
  if self.old then H.sh("rm -rf " .. q(self.dir .. "/" .. self.old)) end
  self.old = ts
end

local function metric(p, name)
  local _, body = p:http("/metrics")
  return tonumber((body or ""):match("\n" .. name:gsub("[%-%.%[%]{}\"=]", "%%%0") .. " ([%d%.e%+]+)"))
end

describe("serve on a real control plane: policies", function()
  local mark, dir
  before_each(function()
    mark = E.audit_mark()
    E.namespace(NS)
    E.node("pol-n1")
    E.create(K.slice("pol-n1", DRIVER, 4))
    -- nothing but the policy publishes this attribute
    E.create({ apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "e2e-gold" },
      spec = { selectors = {
        { cel = { expression = 'device.driver == "' .. DRIVER .. '"' } },
        { cel = { expression = 'device.attributes["tier.e2e.example.com"].tier == "gold"' } } } } })
    E.create(K.template(NS, "gold-gpu", "e2e-gold", 1))
    dir = H.tmpdir()
  end)
  after_each(function()
    E.reset()
    H.rmdir(dir)
  end)

  it("allocates by a derived attribute and follows three ..data flips in a row", function()
    local vol = volume(dir .. "/policies")
    vol:write({ ["tier.lua"] = policy(0) })
    local p = E.serve{ "--policy-dir", vol.dir, "--policy-rescan", "10m",
      "--pod-initial-backoff=100ms", "--pod-max-backoff=1s" }
    local ok0 = E.wait(function() return metric(p, 'draengine_policy_reloads_total{result="ok"}') end, 30,
      "the policy metrics")
    for rev = 0, 2 do
      if rev > 0 then
        vol:write({ ["tier.lua"] = policy(rev) })
        -- picked up from the flip itself (inotify), long before the 10 min rescan
        E.wait(function()
          return (metric(p, 'draengine_policy_reloads_total{result="ok"}') or 0) >= ok0 + rev
        end, 15, "reload " .. rev .. " after a ..data flip")
      end
      local name = "gold-" .. rev
      E.create(K.pod(NS, name, { claims = { { name = "gpu", resourceClaimTemplateName = "gold-gpu" } } }))
      local pod = E.wait(function() return E.bound(NS, name) end, 60, name .. " bound")
      assert.are.same({ DRIVER .. "/pol-n1/gpu-" .. rev }, E.devices(E.pod_claim(pod, "gpu")))
    end
    -- a revision that fails to load is refused; the last good one stays
    local failed0 = metric(p, 'draengine_policy_reloads_total{result="failed"}') or 0
    vol:write({ ["tier.lua"] = "return { name = 'e2e-tier', derive = " })
    E.wait(function()
      return (metric(p, 'draengine_policy_reloads_total{result="failed"}') or 0) > failed0
    end, 15, "the broken revision to be refused")
    E.create(K.pod(NS, "gold-after-broken", { claims = { { name = "gpu", resourceClaimTemplateName = "gold-gpu" } } }))
    E.wait(function()
      for _, e in ipairs(E.events(NS, "gold-after-broken")) do if e.reason == "FailedScheduling" then return e end end
    end, 60, "FailedScheduling: revision 2's only gold device is taken")
    assert.is_nil(E.bound(NS, "gold-after-broken"))
    assert.are.same({}, E.check())
    assert.are.same({}, E.stop_serves())
    assert.are.same({}, E.refused(mark))
    assert.are.same({}, E.warnings(p))
  end)
end)
