-- shadow_e2e.lua - `draengine serve --shadow` beside the real kube-scheduler
-- 1.37 (profile `reference`, its own Lease): kube-scheduler binds the pods
-- and allocates their claims, draengine computes its own decision on the same
-- state for each, logs both and writes nothing - the audit log shows no write
-- by draengine's ServiceAccount.  With one node that has the devices, both
-- schedulers must agree on the node; the devices then show that draengine
-- allocates as kube-scheduler's DRA allocator does.
local E = require "e2e.support.e2e"
local K = require "support.kubeapi"
local H = require "support.helper"
local core = require "draengine.core"

local NS = "e2e-shadow"
local DRIVER = "gpu.shadow.example.com"

-- The real kube-scheduler with the `reference` profile; returns its pid.
local function start_reference()
  local cfg = E.dir .. "/shadow-reference.yaml"
  H.write(cfg, string.format([[
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
leaderElection:
  leaderElect: true
  resourceName: kube-scheduler-shadow-reference
  resourceNamespace: kube-system
profiles:
- schedulerName: reference
]], assert(os.getenv("E2E_REFERENCE_KUBECONFIG"), "E2E_REFERENCE_KUBECONFIG")))
  local log, pidf = E.dir .. "/kube-scheduler-shadow.log", E.dir .. "/kube-scheduler-shadow.pid"
  H.sh(string.format("env -u LD_PRELOAD %s --config=%s --feature-gates=%s --secure-port=0 --v=1 >%s 2>&1 & " ..
    "echo $! > %s", H.shell_quote(E.bin_dir .. "/kube-scheduler"), H.shell_quote(cfg), H.shell_quote(E.gates),
    H.shell_quote(log), H.shell_quote(pidf)))
  local pid = tonumber(H.read_file(pidf))
  H.write(E.dir .. "/pids/kube-scheduler-shadow-" .. pid, tostring(pid))
  return pid
end

local lines = H.json_lines

describe("serve --shadow beside the real kube-scheduler", function()
  local mark, dir, ref
  before_each(function()
    mark = E.audit_mark()
    dir = H.tmpdir()
    E.namespace(NS)
    E.node("shadow-gpu")
    E.node("shadow-cpu") -- fits the pods, but has no devices
    E.create(K.slice("shadow-gpu", DRIVER, 6))
    E.create(K.class("shadow-gpu", DRIVER))
    E.create(K.template(NS, "one-gpu", "shadow-gpu", 1))
    E.create(K.claim(NS, "pair", "shadow-gpu", 2))
    ref = start_reference()
  end)
  after_each(function()
    if ref then os.execute("kill " .. ref .. " 2>/dev/null"); os.remove(E.dir .. "/pids/kube-scheduler-shadow-" .. ref) end
    E.reset()
    H.rmdir(dir)
  end)

  it("computes draengine's decision for every pod kube-scheduler binds, agrees on each, writes nothing", function()
    local log = dir .. "/shadow.jsonl"
    local p = E.serve{ "--shadow", "--shadow-scheduler", "reference", "--shadow-log", log }
    E.wait(function() return p:stderr():find("informers synced", 1, true) end, 30, "informers synced")
    -- one pod at a time, so each decision sees the allocations of the ones before
    local names = { "t1", "t2", "pair", "t3" }
    for i, name in ipairs(names) do
      local claims = name == "pair" and { { name = "gpu", resourceClaimName = "pair" } }
                                     or { { name = "gpu", resourceClaimTemplateName = "one-gpu" } }
      E.create(K.pod(NS, name, { scheduler = "reference", claims = claims }))
      E.wait(function() return E.bound(NS, name) end, 60, "kube-scheduler binds " .. name)
      E.wait(function() return #lines(log) >= i end, 30, "the shadow's decision for " .. name)
    end
    local by = {}
    for _, l in ipairs(lines(log)) do by[l.name] = l end
    for _, name in ipairs(names) do
      local l = by[name]
      local pod = E.pod(NS, name)
      -- theirs is what the cluster holds
      assert.are.equal(pod.spec.nodeName, l.theirs.node)
      assert.are.same(E.devices(E.pod_claim(pod, "gpu")), l.theirs.devices)
      -- and draengine would have done the same
      assert.are.equal("same", l.outcome, core.json_encode(l))
      assert.are.equal("shadow-gpu", l.ours.node)
      assert.are.same(l.theirs.devices, l.ours.devices)
      assert.are.equal("reference", l.scheduler)
    end
    local _, m = p:http("/metrics")
    assert.are.equal(4, tonumber(m:match('draengine_shadow_decisions_total{outcome="same"} (%d+)')))
    assert.are.equal(1, tonumber(m:match("draengine_shadow_agreement_ratio ([%d%.]+)")))
    -- nothing written by draengine's ServiceAccount: no status, binding, Event or Lease
    local writes = {}
    for _, ev in ipairs(E.audit(mark)) do
      if ev.verb ~= "get" and ev.verb ~= "list" and ev.verb ~= "watch" then
        writes[#writes + 1] = ev.verb .. " " .. ev.requestURI
      end
    end
    assert.are.same({}, writes)
    assert.are.same({}, E.refused(mark))
    assert.are.same({}, E.check())
  end)
end)
