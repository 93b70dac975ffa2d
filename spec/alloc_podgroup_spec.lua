-- alloc_podgroup_spec.lua - PodGroup claims (KEP-5729, gate
-- DRAWorkloadResourceClaims, beta, off; needs GenericWorkload) in
-- `allocate`: the pods of a PodGroup whose claim entries match the group's
-- share one claim, allocated once and reserved for the PodGroup, as `serve`
-- does (the same reading, engine/alloc/al_podgroup.c); a template entry
-- gets the claim the resource claim controller makes for the group.
local core = require "draengine.core"
local H = require "support.helper"
local K = require "support.kubeapi"
local S = require "support.serve"

local GATES = "DRAWorkloadResourceClaims=true,GenericWorkload=true"
local PG_UID = "7e1b0c55-2222-4333-8444-555555555555"

local function list(objs)
  return core.json_encode({ apiVersion = "v1", kind = "List", items = objs })
end

local function podgroup(name, uid, entries, statuses)
  return { apiVersion = "scheduling.k8s.io/v1beta1", kind = "PodGroup",
    metadata = { name = name, namespace = "default", uid = uid },
    spec = { schedulingPolicy = { basic = {} }, resourceClaims = entries },
    status = statuses and { resourceClaimStatuses = statuses } or nil }
end

local function member(name, group, entry)
  local p = K.pod("default", name, { claims = { entry } })
  p.metadata.uid = name .. "-1111-4111-8111-111111111111"
  p.spec.schedulingGroup = group and { podGroupName = group } or nil
  return p
end

-- two nodes of 4 GPUs; one template of 2 GPUs
local function cluster()
  return { K.node("n1"), K.node("n2"), K.slice("n1", "gpu.example.com", 4), K.slice("n2", "gpu.example.com", 4),
    K.class("gpu", "gpu.example.com"), K.template("default", "two-gpus", "gpu", 2) }
end

local TEMPLATE_ENTRY = { name = "gpu", resourceClaimTemplateName = "two-gpus" }

local function run(objs, gates)
  local f = H.write_temp(list(objs), ".json")
  local args = { "allocate", "-f", f, "-o", "json" }
  if gates then args[#args + 1] = "--feature-gates=" .. gates end
  local rc, out, err = H.run(args)
  os.remove(f)
  local items = rc < 2 and core.json_decode(out).items or {}
  local pods, claims = {}, {}
  for _, o in ipairs(items) do
    if o.kind == "Pod" then pods[o.metadata.name] = o else claims[o.metadata.name] = o end
  end
  return rc, pods, claims, err
end

local function claim_name(pod)
  for _, st in ipairs(pod.status.resourceClaimStatuses or {}) do
    if st.name == "gpu" then return st.resourceClaimName end
  end
end

describe("PodGroup claims in allocate", function()
  it("members share one claim made for the group from the template; a pod outside gets its own", function()
    local objs = cluster()
    objs[#objs + 1] = podgroup("train", PG_UID, { TEMPLATE_ENTRY })
    for i = 1, 3 do objs[#objs + 1] = member("train-" .. i, "train", TEMPLATE_ENTRY) end
    objs[#objs + 1] = member("loner", nil, TEMPLATE_ENTRY)
    local rc, pods, claims, err = run(objs, GATES)
    assert.are.equal(0, rc, err)
    local shared = claim_name(pods["train-1"])
    assert.matches("^train%-gpu%-%w%w%w%w%w$", shared)
    for i = 2, 3 do assert.are.equal(shared, claim_name(pods["train-" .. i])) end
    local c = claims[shared]
    assert.are.same({ apiVersion = "scheduling.k8s.io/v1beta1", kind = "PodGroup", name = "train", uid = PG_UID,
      controller = true }, c.metadata.ownerReferences[1])
    assert.are.equal("gpu", c.metadata.annotations["resource.kubernetes.io/pod-claim-name"])
    assert.are.equal(2, #c.status.allocation.devices.results)
    -- reserved once, for the PodGroup, however many pods use it
    assert.are.same({ { apiGroup = "scheduling.k8s.io", resource = "podgroups", name = "train", uid = PG_UID } },
      c.status.reservedFor)
    -- every member runs where the group's devices are
    for i = 1, 3 do assert.are.equal(pods["train-1"].spec.nodeName, pods["train-" .. i].spec.nodeName) end
    -- the loner: its own claim, other devices
    local lc = claims[claim_name(pods.loner)]
    assert.matches("^loner%-gpu%-", lc.metadata.name)
    assert.are.equal("Pod", lc.metadata.ownerReferences[1].kind)
    local used = {}
    for _, r in ipairs(c.status.allocation.devices.results) do used[r.pool .. "/" .. r.device] = true end
    for _, r in ipairs(lc.status.allocation.devices.results) do assert.is_nil(used[r.pool .. "/" .. r.device]) end
  end)

  it("the alpha workloadRef names the group too; an empty podGroupName names none", function()
    local objs = cluster()
    objs[#objs + 1] = podgroup("train", PG_UID, { TEMPLATE_ENTRY })
    local a = member("alpha-1", nil, TEMPLATE_ENTRY)
    a.spec.workloadRef = { podGroupName = "train" }
    -- schedulingGroup without a name: the workloadRef is read instead
    local b = member("alpha-2", nil, TEMPLATE_ENTRY)
    b.spec.schedulingGroup = { }
    b.spec.workloadRef = { podGroupName = "train" }
    -- an empty name is no group, and the workloadRef beside it is not read
    local c = member("empty", "", TEMPLATE_ENTRY)
    c.spec.workloadRef = { podGroupName = "train" }
    objs[#objs + 1], objs[#objs + 2], objs[#objs + 3] = a, b, c
    local rc, pods, claims, err = run(objs, GATES)
    assert.are.equal(0, rc, err)
    local shared = claim_name(pods["alpha-1"])
    assert.matches("^train%-gpu%-", shared)
    assert.are.equal(shared, claim_name(pods["alpha-2"]))
    assert.are.equal("PodGroup", claims[shared].metadata.ownerReferences[1].kind)
    assert.matches("^empty%-gpu%-", claim_name(pods.empty))
  end)

  it("without DRAWorkloadResourceClaims each pod gets its own claim", function()
    local objs = cluster()
    objs[#objs + 1] = podgroup("train", PG_UID, { TEMPLATE_ENTRY })
    for i = 1, 2 do objs[#objs + 1] = member("train-" .. i, "train", TEMPLATE_ENTRY) end
    local rc, pods, claims = run(objs)
    assert.are.equal(0, rc)
    local a, b = claim_name(pods["train-1"]), claim_name(pods["train-2"])
    assert.are_not.equal(a, b)
    assert.are.equal("train-1", claims[a].status.reservedFor[1].name)
  end)

  it("an entry that differs from the group's (another template) is the pod's own", function()
    local objs = cluster()
    objs[#objs + 1] = K.template("default", "one-gpu", "gpu", 1)
    objs[#objs + 1] = podgroup("train", PG_UID, { TEMPLATE_ENTRY })
    objs[#objs + 1] = member("same", "train", TEMPLATE_ENTRY)
    objs[#objs + 1] = member("other", "train", { name = "gpu", resourceClaimTemplateName = "one-gpu" })
    local rc, pods, claims = run(objs, GATES)
    assert.are.equal(0, rc)
    assert.matches("^train%-gpu%-", claim_name(pods.same))
    assert.matches("^other%-gpu%-", claim_name(pods.other))
    assert.are.equal("other", claims[claim_name(pods.other)].status.reservedFor[1].name)
  end)

  it("a pod whose PodGroup is not in the input is unschedulable", function()
    local objs = cluster()
    objs[#objs + 1] = member("orphan", "missing", TEMPLATE_ENTRY)
    local rc, pods, _, err = run(objs, GATES)
    assert.are.equal(1, rc)
    assert.matches('podgroup.scheduling.k8s.io "missing" not found', err, 1, true)
    assert.matches('podgroup.scheduling.k8s.io "missing" not found', pods.orphan.status.conditions[1].message, 1, true)
  end)
end)

describe("PodGroup claims: allocate and serve agree", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 51 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  it("a claim the controller made for the group is shared the same way", function()
    local function objs()
      local o = cluster()
      local tc = K.claim("default", "infer-gpu-abcde", "gpu", 2)
      tc.metadata.ownerReferences = { { apiVersion = "scheduling.k8s.io/v1beta1", kind = "PodGroup",
        name = "infer", uid = PG_UID, controller = true } }
      o[#o + 1] = tc
      o[#o + 1] = podgroup("infer", PG_UID, { TEMPLATE_ENTRY }, { { name = "gpu", resourceClaimName = "infer-gpu-abcde" } })
      return o
    end
    local pods = {}
    for i = 1, 3 do pods[i] = member("infer-" .. i, "infer", TEMPLATE_ENTRY) end
    -- allocate
    local all = objs()
    for _, p in ipairs(pods) do all[#all + 1] = p end
    local rc, opods, oclaims, err = run(all, GATES)
    assert.are.equal(0, rc, err)
    local oc = oclaims["infer-gpu-abcde"]
    assert.are.equal(1, #oc.status.reservedFor)
    assert.are.equal("podgroups", oc.status.reservedFor[1].resource)
    for i = 1, 3 do assert.are.equal(opods["infer-1"].spec.nodeName, opods["infer-" .. i].spec.nodeName) end
    -- serve
    srv:load(objs())
    procs[#procs + 1] = S.start(srv, { "--leader-elect=false", "--feature-gates=" .. GATES })
    srv:load(pods)
    local done = K.wait_for(function()
      for i = 1, 3 do
        if not srv:get("/api/v1/namespaces/default/pods/infer-" .. i).spec.nodeName then return false end
      end
      return true
    end, 20 * (H.asan and 3 or 1), 0.1)
    assert.is_true(done)
    local sc = srv:get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/infer-gpu-abcde")
    assert.are.same(oc.status.reservedFor[1].uid, sc.status.reservedFor[1].uid)
    assert.are.equal(#oc.status.reservedFor, #sc.status.reservedFor)
    assert.are.same(oc.status.allocation.devices.results, sc.status.allocation.devices.results)
    assert.are.equal(opods["infer-1"].spec.nodeName, srv:get("/api/v1/namespaces/default/pods/infer-1").spec.nodeName)
  end)
end)
