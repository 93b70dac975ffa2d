-- ctl_serve_spec.lua - the kube-controller-manager work `draengine serve`
-- does beside scheduling, against the test API server: the
-- ResourcePoolStatusRequest controller (--pool-status-controller, gate
-- DRAResourcePoolStatus) and the NoExecute eviction reports (Events and
-- metrics; draengine never evicts).
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"

local PSR = "resourcepoolstatusrequests"

local function request(name, spec, extra)
  local r = { apiVersion = "resource.k8s.io/v1alpha3", kind = "ResourcePoolStatusRequest",
    metadata = { name = name }, spec = spec }
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

local function find(list, name)
  for _, o in ipairs(list or {}) do if o.metadata.name == name then return o end end
end

local function tainted_slice()
  local s = K.slice("node-001", "gpu.example.com", 3)
  s.spec.devices[2].taints = { { key = "xid", value = "79", effect = "NoExecute", timeAdded = "2026-01-01T00:00:00Z" } }
  s.spec.devices[3].taints = { { key = "maint", effect = "NoSchedule", timeAdded = "2026-01-01T00:00:00Z" } }
  return s
end

-- a pod bound to node-001 holding gpu-1 (the NoExecute-tainted device)
local function running(name, uid, device, tolerations)
  local c = K.claim("default", name .. "-gpu", "gpu", 1)
  c.status = { allocation = { devices = { results = { { request = "gpu", driver = "gpu.example.com",
    pool = "node-001", device = device, tolerations = tolerations } } } },
    reservedFor = { { resource = "pods", name = name, uid = uid } } }
  local p = K.pod("default", name, { claims = { { name = "gpu", resourceClaimName = name .. "-gpu" } } })
  p.metadata.uid = uid
  p.spec.nodeName = "node-001"
  return c, p
end

describe("draengine serve --pool-status-controller", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 3 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  it("writes the status of a request as the controller computes it", function()
    local objs = { K.class("gpu", "gpu.example.com"), K.node("node-001"), tainted_slice(),
      K.slice("node-002", "gpu.example.com", 2) }
    local c, p = running("held", "uid-held", "gpu-0")
    objs[#objs + 1] = c
    objs[#objs + 1] = p
    objs[#objs + 1] = request("all-gpus", { driver = "gpu.example.com" })
    objs[#objs + 1] = request("one-pool", { driver = "gpu.example.com", poolName = "node-002", limit = 1 })
    objs[#objs + 1] = request("other-driver", { driver = "nic.example.com" })
    srv:load(objs)
    local proc = S.start(srv, { "--leader-elect=false", "--feature-gates=DRAResourcePoolStatus=true",
      "--pool-status-controller" })
    procs[#procs + 1] = proc
    local done = K.wait_for(function()
      local st = srv:state().objects[PSR]
      for _, r in ipairs(st) do if not r.status then return nil end end
      return st
    end, 20)
    assert.is_truthy(done, proc:stderr())
    local all = find(done, "all-gpus").status
    assert.are.equal(2, all.poolCount)
    assert.are.same({ driver = "gpu.example.com", poolName = "node-001", generation = 1, resourceSliceCount = 1,
      totalDevices = 3, allocatedDevices = 1, availableDevices = 0, unavailableDevices = 2, nodeName = "node-001" },
      all.pools[1])
    assert.are.equal("node-002", all.pools[2].poolName)
    assert.are.equal(2, all.pools[2].availableDevices)
    local cond = all.conditions[1]
    assert.are.equal("Complete", cond.type)
    assert.are.equal("True", cond.status)
    assert.are.equal("CalculationComplete", cond.reason)
    assert.are.equal("Calculated status for 2 pools", cond.message)
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$", cond.lastTransitionTime)
    local one = find(done, "one-pool").status
    assert.are.equal(1, one.poolCount)
    assert.are.equal("node-002", one.pools[1].poolName)
    local none = find(done, "other-driver").status
    assert.are.equal(0, none.poolCount)
    assert.is_nil(none.pools)
    assert.are.equal("Calculated status for 0 pools", none.conditions[1].message)
    -- every status went through the status subresource, once per request
    local puts = 0
    for _, w in ipairs(srv:writes()) do
      if w.method == "PUT" and w.path:find(PSR, 1, true) then
        puts = puts + 1
        assert.matches("/status$", w.path)
        assert.are.equal(200, w.status)
      end
    end
    assert.are.equal(3, puts)
    local _, m = proc:http("/metrics")
    assert.matches('draengine_resourcepoolstatusrequest_controller_requests_processed_total{driver="gpu.example.com"} 2', m, 1, true)
  end)

  it("does not write a status while a pool is incomplete, and deletes requests past their time to live", function()
    local half = K.slice("node-001", "gpu.example.com", 1)
    half.spec.pool.resourceSliceCount = 2
    local old = os.date("!%Y-%m-%dT%H:%M:%SZ", os.time() - 2 * 86400)
    local objs = { K.class("gpu", "gpu.example.com"), K.node("node-001"), half,
      request("stuck", { driver = "gpu.example.com" }),
      request("stuck-old", { driver = "gpu.example.com" }),
      request("answered-old", { driver = "gpu.example.com" }, { status = { poolCount = 0, conditions = { {
        type = "Complete", status = "True", reason = "CalculationComplete", message = "Calculated status for 0 pools",
        lastTransitionTime = old } } } }) }
    objs[5].metadata.creationTimestamp = old
    srv:load(objs)
    local proc = S.start(srv, { "--leader-elect=false", "--feature-gates=DRAResourcePoolStatus=true",
      "--pool-status-controller", "-v", "2" })
    procs[#procs + 1] = proc
    local gone = K.wait_for(function()
      local st = srv:state().objects[PSR]
      return #st == 1 and st
    end, 20)
    assert.is_truthy(gone, proc:stderr())
    assert.are.equal("stuck", gone[1].metadata.name)
    K.wait_for(function() return proc:stderr():find("dropped after 5 retries", 1, true) end, 10)
    assert.matches("ResourcePoolStatusRequest stuck: dropped after 5 retries: incomplete pools detected", proc:stderr(), 1, true)
    assert.is_nil(srv:state().objects[PSR][1].status)
    for _, w in ipairs(srv:writes()) do
      if w.method == "DELETE" then assert.matches("/resourcepoolstatusrequests/[a-z-]*old$", w.path) end
      assert.is_falsy(w.method == "PUT" and w.path:find("stuck", 1, true), w.path)
    end
  end)

  it("is refused without DRAResourcePoolStatus and stays off by default", function()
    local rc, _, err = H.run({ "serve", "--master", "https://127.0.0.1:1", "--pool-status-controller" })
    assert.are.equal(2, rc)
    assert.matches("--pool-status-controller needs the DRAResourcePoolStatus feature gate", err, 1, true)
    srv:load{ K.class("gpu", "gpu.example.com"), K.node("node-001"), K.slice("node-001", "gpu.example.com", 1),
      request("ignored", { driver = "gpu.example.com" }), K.pod("default", "canary", {}) }
    local proc = S.start(srv, { "--leader-elect=false", "--feature-gates=DRAResourcePoolStatus=true" })
    procs[#procs + 1] = proc
    assert.is_truthy(K.wait_for(function()
      return (find(srv:state().objects.pods, "canary").spec or {}).nodeName
    end, 20), proc:stderr())
    assert.is_nil(srv:state().objects[PSR][1].status)
    for _, w in ipairs(srv:writes()) do assert.is_nil(w.path:find(PSR, 1, true)) end
  end)
end)

describe("draengine serve NoExecute reports", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 4 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  local function events(reason)
    local out = {}
    for _, e in ipairs(srv:state().objects.events or {}) do
      if e.reason == reason then out[#out + 1] = e end
    end
    return out
  end

  it("reports pods whose devices gain an untolerated NoExecute taint, and when that ends", function()
    local objs = { K.class("gpu", "gpu.example.com"), K.node("node-001"), tainted_slice() }
    local c1, p1 = running("victim", "uid-victim", "gpu-1")
    local c2, p2 = running("patient", "uid-patient", "gpu-0",
      { { key = "xid", operator = "Exists", effect = "NoExecute", tolerationSeconds = 300 } })
    local c3, p3 = running("immune", "uid-immune", "gpu-2",
      { { key = "xid", operator = "Exists", effect = "NoExecute" } })
    for _, o in ipairs({ c1, p1, c2, p2, c3, p3 }) do objs[#objs + 1] = o end
    srv:load(objs)
    local proc = S.start(srv, { "--leader-elect=false" })
    procs[#procs + 1] = proc
    local ev = K.wait_for(function() local e = events("DeviceTaintNoExecute"); return #e >= 1 and e end, 20)
    assert.is_truthy(ev, proc:stderr())
    assert.are.equal(1, #ev)
    assert.are.equal("victim", ev[1].regarding.name)
    assert.are.equal("Warning", ev[1].type)
    assert.matches("deletes this pod at or after 2026%-01%-01T00:00:00Z", ev[1].note)
    assert.matches("claim victim%-gpu device gpu.example.com/node%-001/gpu%-1 has taint xid=79:NoExecute %(ResourceSlice", ev[1].note)
    -- a DeviceTaintRule now drains gpu-0 and gpu-2: the tolerations decide
    srv:load{ { apiVersion = "resource.k8s.io/v1", kind = "DeviceTaintRule", metadata = { name = "drain" },
      spec = { deviceSelector = { driver = "gpu.example.com", pool = "node-001" },
        taint = { key = "xid", value = "48", effect = "NoExecute", timeAdded = "2026-02-01T00:00:00Z" } } } }
    local ev2 = K.wait_for(function() local e = events("DeviceTaintNoExecute"); return #e >= 3 and e end, 20)
    assert.is_truthy(ev2, proc:stderr())
    local by = {}
    for _, e in ipairs(ev2) do by[e.regarding.name] = e.note end
    assert.matches("at or after 2026%-02%-01T00:05:00Z", by.patient)
    assert.matches("DeviceTaintRule drain%), tolerated for 300s", by.patient)
    assert.is_nil(by.immune)
    local _, m = proc:http("/metrics")
    assert.matches("draengine_device_taint_pods_pending_eviction 2", m, 1, true)
    -- the rule goes: patient is no longer due, victim still is
    local dst = srv:request("DELETE", "/apis/resource.k8s.io/v1/devicetaintrules/drain")
    assert.are.equal(200, dst)
    local cleared = K.wait_for(function() local e = events("DeviceTaintNoExecuteCleared"); return #e >= 1 and e end, 20)
    assert.is_truthy(cleared, proc:stderr())
    assert.are.equal("patient", cleared[1].regarding.name)
    assert.are.equal("Normal", cleared[1].type)
    -- nothing was deleted: evicting is kube-controller-manager's job
    assert.are.equal(3, #srv:state().objects.pods)
  end)
end)

describe("draengine serve --dra-filter-timeout", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 5 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  it("fails a node whose device search outlasts it, as kube-scheduler's Filter does", function()
    -- five distinct devices of forty for one request, then a request nothing serves;
    -- with DRAListTypeAttributes no search is pruned (alloc_explain_spec.lua), so
    -- the search tries the C(40,5) combinations
    local s = K.slice("node-001", "gpu.example.com", 40)
    for i, d in ipairs(s.spec.devices) do d.attributes.idx = { int = i } end
    local c = K.claim("default", "deep", "gpu", 5)
    c.spec.devices.requests[2] = { name = "none", exactly = { deviceClassName = "gpu",
      selectors = { { cel = { expression = 'device.attributes["gpu.example.com"].idx > 100' } } } } }
    c.spec.devices.constraints = { { distinctAttribute = "gpu.example.com/idx" } }
    srv:load{ K.class("gpu", "gpu.example.com"), K.node("node-001"), s, c,
      K.pod("default", "deep-pod", { claims = { { name = "gpu", resourceClaimName = "deep" } } }) }
    local proc = S.start(srv, { "--leader-elect=false", "--dra-filter-timeout=20ms",
      "--feature-gates=DRAListTypeAttributes=true" })
    procs[#procs + 1] = proc
    local ev = K.wait_for(function()
      for _, e in ipairs(srv:state().objects.events or {}) do
        if e.reason == "FailedScheduling" then return e end
      end
    end, 20)
    assert.is_truthy(ev, proc:stderr())
    assert.matches("node node-001: timed out trying to allocate devices", ev.note, 1, true)
    local rc, _, err = H.run({ "serve", "--master", "https://127.0.0.1:1", "--dra-filter-timeout=1s",
      "--feature-gates=DRASchedulerFilterTimeout=false" })
    assert.are.equal(2, rc)
    assert.matches("--dra-filter-timeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled", err, 1, true)
  end)
end)
