-- e2e.lua - drive the real control plane that spec/e2e/cluster.py started.
--
--   local E = require "e2e.support.e2e"
--   E.create(K.node("n1"))                      -- POST ?fieldValidation=Strict
--   local p = E.serve{ "--policies", dir }      -- draengine serve as the RBAC example's SA
--   E.wait(function() return E.bound("ns", "pod") end, 30, "pod bound")
--   E.reset()                                   -- delete everything a spec made
--
-- Every request of draengine's ServiceAccount lands in the API server's audit
-- log; E.audit_check() fails a spec on any request the server refused for
-- other reasons than a lost race (403 = the RBAC example is short of a verb,
-- 400/422 = we wrote something the real server does not accept).
local H = require "support.helper"
local K = require "support.kubeapi"
local S = require "support.serve"
local core = require "draengine.core"

local M = {}

M.dir = assert(os.getenv("E2E_DIR"), "run the e2e specs with `make e2e` (spec/e2e/cluster.py run)")
M.bin_dir = os.getenv("E2E_K8S_BIN")
M.gates = os.getenv("E2E_FEATURE_GATES")
M.server = os.getenv("E2E_SERVER")
M.admin_kubeconfig = os.getenv("E2E_ADMIN_KUBECONFIG")
M.serve_kubeconfig = os.getenv("E2E_DRAENGINE_KUBECONFIG")
M.audit_log = os.getenv("E2E_AUDIT_LOG")
M.cluster = os.getenv("E2E_CLUSTER")
M.sa_user = "system:serviceaccount:draengine-system:draengine"

M.admin = core.kube.client(core.kube.config{ kubeconfig = M.admin_kubeconfig },
  { qps = 100000, burst = 100000 })

M.sleep = K.sleep
M.null = core.null

-- ---- REST paths ---------------------------------------------------------------

local KINDS = {
  Node = { "/api/v1", "nodes" },
  Namespace = { "/api/v1", "namespaces" },
  Pod = { "/api/v1", "pods", true },
  ConfigMap = { "/api/v1", "configmaps", true },
  ResourceSlice = { "/apis/resource.k8s.io/v1", "resourceslices" },
  DeviceClass = { "/apis/resource.k8s.io/v1", "deviceclasses" },
  ResourceClaim = { "/apis/resource.k8s.io/v1", "resourceclaims", true },
  ResourceClaimTemplate = { "/apis/resource.k8s.io/v1", "resourceclaimtemplates", true },
  DeviceTaintRule = { "/apis/resource.k8s.io/v1", "devicetaintrules" },
  ResourcePoolStatusRequest = { "/apis/resource.k8s.io/v1alpha3", "resourcepoolstatusrequests" },
  PodGroup = { "/apis/scheduling.k8s.io/v1beta1", "podgroups", true },
  Workload = { "/apis/scheduling.k8s.io/v1beta1", "workloads", true },
}

-- path(kind, ns, name, sub): the collection path without name.
function M.path(kind, ns, name, sub)
  local k = assert(KINDS[kind], "unknown kind " .. tostring(kind))
  local p = k[1]
  if k[3] then p = p .. "/namespaces/" .. assert(ns, kind .. " needs a namespace") end
  p = p .. "/" .. k[2]
  if name then p = p .. "/" .. name end
  if sub then p = p .. "/" .. sub end
  return p
end

local function errmsg(status, body, err)
  if type(body) == "table" and body.message then return status .. " " .. body.message end
  return tostring(status) .. " " .. tostring(err)
end

function M.request(method, path, body)
  return M.admin:request(method, path, body)
end

-- Create an object (strict field validation: our own test objects must be
-- exactly what the real API accepts); returns the stored object.
function M.create(obj)
  local md = obj.metadata
  local status, out, err = M.request("POST", M.path(obj.kind, md.namespace) .. "?fieldValidation=Strict", obj)
  assert(status == 201 or status == 200,
    "create " .. obj.kind .. " " .. tostring(md.name or md.generateName) .. ": " .. errmsg(status, out, err))
  return out
end

function M.get(kind, ns, name)
  local status, out = M.request("GET", M.path(kind, ns, name))
  if status == 404 then return nil end
  assert(status == 200, "get " .. kind .. " " .. tostring(name) .. ": " .. tostring(status))
  return out
end

function M.list(kind, ns, query)
  local p = ns and M.path(kind, ns) or (KINDS[kind][1] .. "/" .. KINDS[kind][2])
  local status, out, err = M.request("GET", p .. (query and ("?" .. query) or ""))
  assert(status == 200, "list " .. kind .. ": " .. errmsg(status, out, err))
  return out.items
end

-- Replace an object or its status (PUT with its resourceVersion).
function M.update(obj, sub)
  local md = obj.metadata
  local status, out, err = M.request("PUT", M.path(obj.kind, md.namespace, md.name, sub) ..
    "?fieldValidation=Strict", obj)
  return status, out, err
end

-- Read-modify-write until it sticks (conflicts with controllers are normal).
function M.modify(kind, ns, name, fn, sub)
  for _ = 1, 20 do
    local o = assert(M.get(kind, ns, name), kind .. " " .. name .. " not found")
    o.kind = kind
    fn(o)
    local status, out, err = M.update(o, sub)
    if status == 200 then return out end
    assert(status == 409, "update " .. kind .. " " .. name .. ": " .. errmsg(status, out, err))
  end
  error("update " .. kind .. " " .. name .. ": conflicts did not end")
end

-- Delete now: grace period 0, since no kubelet will ever confirm a pod's end.
function M.delete(kind, ns, name)
  local status, out, err = M.request("DELETE", M.path(kind, ns, name),
    { apiVersion = "v1", kind = "DeleteOptions", gracePeriodSeconds = 0 })
  assert(status == 200 or status == 202 or status == 404,
    "delete " .. kind .. " " .. name .. ": " .. errmsg(status, out, err))
end

function M.wait(fn, secs, what)
  local v = K.wait_for(fn, secs or 30, 0.1)
  assert(v, "timed out after " .. tostring(secs or 30) .. " s waiting for " .. (what or "a condition"))
  return v
end

-- ---- objects ----------------------------------------------------------------

-- A node as a kubelet would register it: Ready, with capacity and allocatable.
function M.node(name, opts)
  opts = opts or {}
  local labels = { ["kubernetes.io/hostname"] = name }
  for k, v in pairs(opts.labels or {}) do labels[k] = v end
  local alloc = { cpu = "64", memory = "512Gi", pods = "110" }
  for k, v in pairs(opts.allocatable or {}) do alloc[k] = v end
  local n = { apiVersion = "v1", kind = "Node", metadata = { name = name, labels = labels },
    spec = { taints = opts.taints },
    status = { capacity = alloc, allocatable = alloc,
      conditions = { { type = "Ready", status = "True", reason = "KubeletReady",
        message = "e2e node without a kubelet" } } } }
  local out = M.create(n)
  -- status is not taken from a create on every version: set it when missing
  if not (out.status and out.status.allocatable and out.status.allocatable.cpu) then
    out.kind = "Node"
    out.status = n.status
    local status, o2, err = M.update(out, "status")
    assert(status == 200, "node status: " .. errmsg(status, o2, err))
  end
  return out
end

-- Extended resources cannot be overcommitted: the API server wants limits
-- equal to the requests.
function M.limits(pod)
  for _, c in ipairs(pod.spec.containers) do
    c.resources.limits = {}
    for k, v in pairs(c.resources.requests or {}) do c.resources.limits[k] = v end
  end
  return pod
end

function M.namespace(name, labels)
  M.create({ apiVersion = "v1", kind = "Namespace", metadata = { name = name, labels = labels } })
  M.namespaces[name] = true
end
M.namespaces = {}

-- ---- draengine serve ------------------------------------------------------------

-- Start `draengine serve` with the RBAC example's ServiceAccount token and the
-- cluster's gate string; the cluster script kills it on exit via DIR/pids.
M.procs = {}
function M.serve(args, env)
  local a = { "--feature-gates", M.gates, "-v", "4", "--field-validation", "Strict" }
  local has_le = false
  for _, x in ipairs(args or {}) do
    a[#a + 1] = x
    if tostring(x):match("^%-%-leader%-elect") then has_le = true end
  end
  if not has_le then a[#a + 1] = "--leader-elect=false" end
  local p = S.start({ kubeconfig = M.serve_kubeconfig }, a, env)
  assert(p.port, "draengine serve did not start:\n" .. p:stderr())
  H.write(M.dir .. "/pids/draengine-" .. p.pid, tostring(p.pid))
  M.procs[#M.procs + 1] = p
  return p
end

-- Stop every serve this spec started; returns sanitizer reports.
function M.stop_serves()
  local reports = {}
  for _, p in ipairs(M.procs) do
    local log = p:stderr()
    local _, r = p:stop()
    if r then reports[#reports + 1] = r:sub(1, 3000) end
    os.remove(M.dir .. "/pids/draengine-" .. p.pid)
    p.final_log = log
    -- kept with the component logs (the dir survives a failed run)
    H.write(string.format("%s/draengine-serve-%d.log", M.dir, p.pid), log)
  end
  M.procs = {}
  return reports
end

-- ---- state --------------------------------------------------------------------

function M.pod(ns, name) return M.get("Pod", ns, name) end

function M.bound(ns, name)
  local p = M.pod(ns, name)
  return p and p.spec.nodeName and p or nil
end

-- The claim a pod's entry resolves to (template claims via pod status).
function M.pod_claim(p, entry)
  for _, r in ipairs(p.spec.resourceClaims or {}) do
    if r.name == entry then
      if r.resourceClaimName then return M.get("ResourceClaim", p.metadata.namespace, r.resourceClaimName) end
      for _, s in ipairs((p.status or {}).resourceClaimStatuses or {}) do
        if s.name == entry and s.resourceClaimName then
          return M.get("ResourceClaim", p.metadata.namespace, s.resourceClaimName)
        end
      end
    end
  end
  return nil
end

function M.devices(claim)
  local out = {}
  local a = claim and claim.status and claim.status.allocation
  for _, r in ipairs(a and a.devices and a.devices.results or {}) do
    out[#out + 1] = r.driver .. "/" .. r.pool .. "/" .. r.device
  end
  table.sort(out)
  return out
end

-- FailedScheduling events for a pod (events.k8s.io/v1), newest last.
function M.events(ns, pod)
  local st, out = M.request("GET", "/apis/events.k8s.io/v1/namespaces/" .. ns .. "/events")
  assert(st == 200, "list events: " .. tostring(st))
  local evs = {}
  for _, e in ipairs(out.items) do
    if e.regarding and e.regarding.name == pod then evs[#evs + 1] = e end
  end
  return evs
end

-- Cluster-wide invariants: every device in at most one claim (unless the
-- allocation shares it: admin access or consumable capacity), every bound
-- pod's claims allocated and reserved for it on its node. Returns a list of
-- violations.
function M.check()
  local bad = {}
  local function fail(fmt, ...) bad[#bad + 1] = string.format(fmt, ...) end
  local used = {}
  local claims = {}
  for _, c in ipairs(M.list("ResourceClaim")) do
    claims[c.metadata.namespace .. "/" .. c.metadata.name] = c
    local a = c.status and c.status.allocation
    for _, r in ipairs(a and a.devices and a.devices.results or {}) do
      local key = r.driver .. "/" .. r.pool .. "/" .. r.device
      local shared = r.adminAccess or r.shareID
      if used[key] and not shared and not used[key].shared then
        fail("device %s is in claims %s and %s", key, used[key].claim, c.metadata.name)
      end
      used[key] = { claim = c.metadata.name, shared = shared }
    end
  end
  for _, p in ipairs(M.list("Pod")) do
    if p.spec.nodeName and p.spec.schedulerName == "draengine" then
      for _, ref in ipairs(p.spec.resourceClaims or {}) do
        local c = M.pod_claim(p, ref.name)
        if not c then
          fail("pod %s: claim %s not found", p.metadata.name, ref.name)
        else
          local st = c.status or {}
          if not st.allocation then fail("claim %s of bound pod %s is not allocated", c.metadata.name, p.metadata.name) end
          local reserved = false
          for _, r in ipairs(st.reservedFor or {}) do
            if r.uid == p.metadata.uid or r.resource == "podgroups" then reserved = true end
          end
          if not reserved then fail("claim %s is not reserved for pod %s", c.metadata.name, p.metadata.name) end
        end
      end
    end
  end
  return bad
end

-- ---- the audit log --------------------------------------------------------------

-- Byte offset of the audit log now: pass it to audit() to read what came after.
function M.audit_mark()
  local f = io.open(M.audit_log, "rb")
  if not f then return 0 end
  local n = f:seek("end"); f:close(); return n
end

-- Audit events since `mark` (ResponseComplete stage) of `user` (default: draengine's SA).
function M.audit(mark, user)
  user = user or M.sa_user
  local f = io.open(M.audit_log, "rb")
  if not f then return {} end
  f:seek("set", mark or 0)
  local evs = {}
  for line in f:lines() do
    local ok, ev = pcall(core.json_decode, line)
    if ok and type(ev) == "table" and ev.stage == "ResponseComplete" and ev.user and ev.user.username == user then
      evs[#evs + 1] = ev
    end
  end
  f:close()
  return evs
end

-- Requests the server refused for a reason other than a lost race or a
-- stale read: every 4xx except 404 (a get after a delete), 409 (conflict)
-- and 410 (a watch that expired), and every 5xx but a killed client's.
-- Returns one line each.
function M.refused(mark)
  local out = {}
  for _, ev in ipairs(M.audit(mark)) do
    local code = ev.responseStatus and ev.responseStatus.code or 0
    -- a request whose client was killed mid-flight (the SIGKILL spec) is
    -- logged as 500 "client disconnected", or as 504 "... - context
    -- canceled" when the handler was waiting on etcd: not the server
    -- refusing it
    local msg = ev.responseStatus and ev.responseStatus.message or ""
    local gone = (code == 500 and msg == "client disconnected") or
      (code == 504 and msg:sub(-#"context canceled") == "context canceled")
    if code >= 400 and code ~= 404 and code ~= 409 and code ~= 410 and not gone then
      local o = ev.objectRef or {}
      out[#out + 1] = string.format("%d %s %s %s/%s%s: %s", code, ev.verb, ev.requestURI,
        o.namespace or "", o.name or "", o.subresource and ("/" .. o.subresource) or "",
        ev.responseStatus.message or ev.responseStatus.reason or "")
    end
  end
  return out
end

-- Lines of serve's log where the server sent a warning header.
function M.warnings(p)
  local out = {}
  for line in ((p.final_log or p:stderr()) .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("server warning") then out[#out + 1] = line end
  end
  return out
end

-- ---- clean-up ---------------------------------------------------------------------

local function delete_all(kind, ns)
  for _, o in ipairs(M.list(kind, ns)) do
    M.delete(kind, o.metadata.namespace, o.metadata.name)
  end
end

-- Delete what the specs made: pods first (grace 0; their claims' finalizers
-- are removed by the resourceclaim controller once no pod uses them), then the
-- namespaces the specs created and every cluster-scoped DRA object and node.
function M.reset()
  M.stop_serves()
  for ns in pairs(M.namespaces) do delete_all("Pod", ns) end
  for ns in pairs(M.namespaces) do
    -- claims keep the delete-protection finalizer while allocated; the
    -- namespace controller deletes them, the claim controller frees them
    M.delete("Namespace", nil, ns)
  end
  for _, kind in ipairs({ "DeviceTaintRule", "ResourceSlice", "DeviceClass", "Node" }) do
    delete_all(kind)
  end
  local left = M.namespaces
  M.namespaces = {}
  local ok = K.wait_for(function()
    for ns in pairs(left) do if M.get("Namespace", nil, ns) then return false end end
    return true
  end, 90, 0.1)
  if not ok then
    -- say what holds a namespace: objects left and their finalizers
    local held = {}
    for ns in pairs(left) do
      for _, kind in ipairs({ "Pod", "ResourceClaim", "PodGroup" }) do
        for _, o in ipairs(M.list(kind, ns)) do
          held[#held + 1] = string.format("%s %s/%s finalizers=%s reservedFor=%s", kind, ns, o.metadata.name,
            table.concat(o.metadata.finalizers or {}, ","),
            core.json_encode((o.status or {}).reservedFor or {}))
        end
      end
    end
    error("the spec's namespaces were not deleted within 90 s:\n  " .. table.concat(held, "\n  "))
  end
end

-- Restart kube-apiserver (same flags, same etcd); returns when it is ready.
function M.restart_apiserver()
  H.sh("env -u LD_PRELOAD python3 " .. H.shell_quote(M.cluster) .. " restart kube-apiserver --dir " ..
    H.shell_quote(M.dir))
end

function M.kubectl(args)
  local parts = { H.shell_quote(M.bin_dir .. "/kubectl"), "--kubeconfig", H.shell_quote(M.admin_kubeconfig) }
  for _, a in ipairs(args) do parts[#parts + 1] = H.shell_quote(a) end
  local p = io.popen("env -u LD_PRELOAD " .. table.concat(parts, " ") .. " 2>&1")
  local out = p:read("a")
  local ok = p:close()
  return ok, out
end

return M
