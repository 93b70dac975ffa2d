-- workload_e2e.lua - PodGroup claims (KEP-5729, DRAWorkloadResourceClaims)
-- with the real scheduling.k8s.io/v1beta1 API: the real resourceclaim
-- controller makes one claim for the group from its template, and every pod
-- of the group shares its devices; the claim is reserved for the PodGroup.
local E = require "e2e.support.e2e"
local K = require "support.kubeapi"

local NS = "e2e-workload"
local DRIVER = "gpu.e2e.example.com"

local function podgroup(name, entry)
  return { apiVersion = "scheduling.k8s.io/v1beta1", kind = "PodGroup",
    metadata = { name = name, namespace = NS },
    spec = { schedulingPolicy = { basic = {} }, resourceClaims = { entry } } }
end

local function member(name, group, entry)
  local p = K.pod(NS, name, { claims = { entry } })
  p.spec.schedulingGroup = { podGroupName = group }
  return p
end

describe("serve on a real control plane: PodGroup claims", function()
  local mark
  before_each(function()
    mark = E.audit_mark()
    E.namespace(NS)
    E.node("wl-n1")
    E.create(K.slice("wl-n1", DRIVER, 4))
    E.create(K.class("e2e-gpu", DRIVER))
  end)
  after_each(function() E.reset() end)

  it("shares one claim from a template among the pods of a PodGroup", function()
    E.create(K.template(NS, "two-gpus", "e2e-gpu", 2))
    local entry = { name = "gpu", resourceClaimTemplateName = "two-gpus" }
    local pg = E.create(podgroup("group-a", entry))
    local p = E.serve{}
    for i = 1, 3 do E.create(member("member-" .. i, "group-a", entry)) end
    -- a pod outside the group with the same entry gets a claim of its own
    E.create(K.pod(NS, "loner", { claims = { entry } }))
    local claims = {}
    for i = 1, 3 do
      local pod = E.wait(function() return E.bound(NS, "member-" .. i) end, 60, "member-" .. i .. " bound")
      claims[i] = E.pod_claim(pod, "gpu") or (function()
        local g = E.get("PodGroup", NS, "group-a")
        for _, s in ipairs((g.status or {}).resourceClaimStatuses or {}) do
          if s.name == "gpu" then return E.get("ResourceClaim", NS, s.resourceClaimName) end
        end
      end)()
      assert.is_table(claims[i], "member-" .. i .. " has a claim")
    end
    assert.are.equal(claims[1].metadata.name, claims[2].metadata.name)
    assert.are.equal(claims[1].metadata.name, claims[3].metadata.name)
    local c = E.get("ResourceClaim", NS, claims[1].metadata.name)
    assert.are.equal(2, #E.devices(c))
    local rf = c.status.reservedFor
    assert.are.equal(1, #rf, "the group's claim is reserved once, for the PodGroup")
    assert.are.equal("scheduling.k8s.io", rf[1].apiGroup)
    assert.are.equal("podgroups", rf[1].resource)
    assert.are.equal(pg.metadata.uid, rf[1].uid)
    local loner = E.wait(function() return E.bound(NS, "loner") end, 60, "loner bound")
    local lc = E.pod_claim(loner, "gpu")
    assert.are_not.equal(c.metadata.name, lc.metadata.name)
    local both = {}
    for _, d in ipairs(E.devices(c)) do both[d] = true end
    for _, d in ipairs(E.devices(lc)) do assert.is_nil(both[d], "device " .. d .. " in two claims") end
    assert.are.same({}, E.check())
    assert.are.same({}, E.stop_serves())
    assert.are.same({}, E.refused(mark))
    assert.are.same({}, E.warnings(p))
  end)
end)
