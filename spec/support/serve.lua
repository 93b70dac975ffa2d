-- serve.lua - run `draengine serve` against the test API server and check
-- what it did.  Used by spec/sched_*_spec.lua.
local H = require "support.helper"
local K = require "support.kubeapi"
local core = require "draengine.core"

local M = {}
local Proc = {}
Proc.__index = Proc

-- Start `draengine serve` in the background; returns a process handle.
function M.start(srv, args, env)
  local log = os.tmpname()
  local pidf = os.tmpname()
  local parts = { H.shell_quote(H.bin), "serve", "--kubeconfig", H.shell_quote(srv.kubeconfig),
    "--port", "0", "--bind-address", "127.0.0.1" }
  for _, a in ipairs(args or {}) do parts[#parts + 1] = H.shell_quote(a) end
  -- a wrapper shell waits for the exit code; $! is draengine itself
  local inner = (env or "") .. " " .. table.concat(parts, " ") .. " >" .. log .. ".out 2>" .. log ..
    " & echo $! >" .. pidf .. ".tmp; mv " .. pidf .. ".tmp " .. pidf .. "; wait $!; echo $? >" .. log .. ".rc"
  os.remove(pidf)
  assert(os.execute("sh -c " .. H.shell_quote(inner) .. " >/dev/null 2>&1 &"))
  K.wait_for(function() local f = io.open(pidf); if f then f:close(); return true end end, 10, 0.02)
  local p = setmetatable({ log = log, pid = tonumber(H.read_file(pidf)) }, Proc)
  os.remove(pidf)
  -- the log names the port it bound ("listening" port="N")
  K.wait_for(function()
    local s = p:stderr()
    p.port = tonumber(s:match('port="(%d+)"') or s:match('"port":"(%d+)"'))
    return p.port or not p:alive()
  end, 20, 0.05)
  return p
end

function Proc:stderr()
  local f = io.open(self.log, "rb"); if not f then return "" end
  local s = f:read("a"); f:close(); return s
end

function Proc:alive()
  return self.pid and os.execute("kill -0 " .. self.pid .. " 2>/dev/null") == true
end

function Proc:signal(sig)
  if self.pid then os.execute("kill -" .. sig .. " " .. self.pid .. " 2>/dev/null") end
end

-- Wait for exit; returns the exit code (or nil on timeout).
function Proc:wait(secs)
  local deadline = os.time() + (secs or 20)
  while os.time() <= deadline do
    local f = io.open(self.log .. ".rc")
    if f then
      local rc = tonumber(f:read("l")); f:close()
      return rc
    end
    K.sleep(0.05)
  end
  return nil
end

-- Stop with SIGTERM (a graceful shutdown); returns the exit code and a
-- sanitizer report if the process printed one (ASan/LSan/UBSan builds).
function Proc:stop()
  if self:alive() then
    self:signal("TERM")
    if not self:wait(15) then self:signal("KILL"); self:wait(5) end
  end
  local rc = self:wait(1)
  local err = self:stderr()
  local report = err:match("(==%d+==ERROR: %a+Sanitizer.*)") or err:match("(runtime error:.*)")
  os.remove(self.log .. ".out")
  os.remove(self.log .. ".rc")
  os.remove(self.log)
  return rc, report
end

-- Stop every process in procs; the sanitizer reports they printed, each cut
-- to `cap` bytes (default 3000): an after_each asserts the list is empty.
function M.stop_all(procs, cap)
  local reports = {}
  for _, p in ipairs(procs) do
    local _, r = p:stop()
    if r then reports[#reports + 1] = r:sub(1, cap or 3000) end
  end
  return reports
end

-- The per-test fixture of the serve specs: t.setup starts a fresh test API
-- server (opts go to K.start); t.teardown stops every serve process in
-- t.procs and the server, and asserts no sanitizer report was left.  A spec
-- passes them to busted: before_each(t.setup); after_each(t.teardown).
function M.fixture(opts)
  local t = {}
  function t.setup()
    t.srv = K.start(opts)
    t.procs = {}
  end
  function t.teardown()
    local reports = M.stop_all(t.procs, 4000)
    t.srv:stop()
    require("luassert").are.same({}, reports)
  end
  return t
end

-- A sample's value on a /metrics page (an unlabelled integer sample).
function M.metric(body, name)
  return tonumber(body:match("\n" .. name .. " (%d+)"))
end

-- Pods the server shows bound, of those whose name starts with prefix (all
-- when nil).
function M.pods_bound(srv, prefix)
  local n = 0
  for _, p in ipairs(srv:get("/api/v1/pods").items) do
    if p.spec.nodeName and (not prefix or p.metadata.name:sub(1, #prefix) == prefix) then n = n + 1 end
  end
  return n
end

-- GET http://127.0.0.1:<port><path> with a raw socket through bash's /dev/tcp
-- (no curl needed); returns status, body.
function Proc:http(path)
  local out = os.tmpname()
  local cmd = "exec 3<>/dev/tcp/127.0.0.1/" .. self.port .. " && printf 'GET " .. path ..
    " HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >&3 && cat <&3 >" .. out
  os.execute("bash -c " .. H.shell_quote(cmd) .. " 2>/dev/null")
  local s = H.read_file(out); os.remove(out)
  local status = tonumber(s:match("^HTTP/1%.1 (%d+)"))
  local body = s:match("\r\n\r\n(.*)$") or ""
  return status, body
end

-- ---- scenario ------------------------------------------------------------------

-- nodes with `gpus` devices each, a class, templates; returns the objects.
function M.cluster(nnodes, gpus, opts)
  opts = opts or {}
  local objs = { K.class("gpu", "gpu.example.com"), K.template("default", "one-gpu", "gpu", 1),
    { apiVersion = "v1", kind = "Namespace", metadata = { name = "default" } } }
  for i = 1, nnodes do
    local name = string.format("node-%03d", i)
    objs[#objs + 1] = K.node(name, { ["kubernetes.io/hostname"] = name, zone = "z" .. (i % 3) })
    objs[#objs + 1] = K.slice(name, "gpu.example.com", gpus)
  end
  return objs
end

-- pods: every third one plain, the others half with a named claim, half
-- from the template.  Returns pods, claims.
function M.workload(n, prefix)
  local pods, claims = {}, {}
  for i = 1, n do
    local name = string.format("%s-%04d", prefix or "p", i)
    local kind = i % 3
    local refs
    if kind == 1 then
      claims[#claims + 1] = K.claim("default", name .. "-gpu", "gpu", 1)
      refs = { { name = "gpu", resourceClaimName = name .. "-gpu" } }
    elseif kind == 2 then
      refs = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } }
    end
    pods[#pods + 1] = K.pod("default", name, { claims = refs, requests = { cpu = "250m", memory = "1Gi" } })
  end
  return pods, claims
end

-- ---- invariants -------------------------------------------------------------------

-- Check the final state: returns a list of violations (empty = good) and counts.
function M.check(srv, opts)
  opts = opts or {}
  local st = srv:state().objects
  local bad = {}
  local function fail(fmt, ...) if #bad < 20 then bad[#bad + 1] = string.format(fmt, ...) end end
  local claims = {}
  for _, c in ipairs(st.resourceclaims) do claims[c.metadata.name] = c end
  local nodes = {}
  for _, n in ipairs(st.nodes) do nodes[n.metadata.name] = n end
  local used = {}
  local bound, total = 0, 0
  local cpu = {}
  for _, p in ipairs(st.pods) do
    total = total + 1
    local node = p.spec.nodeName
    if not node then
      fail("pod %s is not bound", p.metadata.name)
    else
      bound = bound + 1
      cpu[node] = (cpu[node] or 0) + 250
      if not nodes[node] then fail("pod %s bound to unknown node %s", p.metadata.name, node) end
    end
    for _, ref in ipairs(p.spec.resourceClaims or {}) do
      local cname = ref.resourceClaimName
      if ref.resourceClaimTemplateName then
        for _, s in ipairs((p.status or {}).resourceClaimStatuses or {}) do
          if s.name == ref.name then cname = s.resourceClaimName end
        end
      end
      local c = cname and claims[cname]
      if not c then
        fail("pod %s: claim %s lost", p.metadata.name, tostring(cname))
      elseif node then
        local st2 = c.status or {}
        if not st2.allocation then fail("claim %s of bound pod %s is not allocated", cname, p.metadata.name) end
        local reserved = false
        for _, r in ipairs(st2.reservedFor or {}) do if r.uid == p.metadata.uid then reserved = true end end
        if not reserved then fail("claim %s is not reserved for pod %s", cname, p.metadata.name) end
        local sel = st2.allocation and st2.allocation.nodeSelector
        if sel then
          local ok = false
          for _, t in ipairs(sel.nodeSelectorTerms or {}) do
            for _, f in ipairs(t.matchFields or {}) do
              for _, v in ipairs(f.values or {}) do if v == node then ok = true end end
            end
            for _, f in ipairs(t.matchExpressions or {}) do
              for _, v in ipairs(f.values or {}) do if v == node then ok = true end end
            end
          end
          if not ok then fail("claim %s allocated away from node %s of its pod", cname, node) end
        end
        local fin = false
        for _, f in ipairs(c.metadata.finalizers or {}) do fin = fin or f == "resource.kubernetes.io/delete-protection" end
        if not fin then fail("claim %s has no delete-protection finalizer", cname) end
      end
    end
  end
  for name, c in pairs(claims) do
    local a = (c.status or {}).allocation
    for _, r in ipairs(a and a.devices and a.devices.results or {}) do
      local key = r.driver .. "/" .. r.pool .. "/" .. r.device
      if used[key] then fail("device %s is in claims %s and %s", key, used[key], name) end
      used[key] = name
    end
  end
  for node, m in pairs(cpu) do
    if m > 64000 then fail("node %s over-committed: %d millicpu", node, m) end
  end
  -- every write carried a resourceVersion where one is required, and every
  -- accepted update carried the current one
  local writes = srv:writes()
  local puts, conflicts = 0, 0
  for _, w in ipairs(writes) do
    if w.method == "PUT" then
      puts = puts + 1
      if w.sentResourceVersion == nil or w.sentResourceVersion == core.null then
        fail("PUT %s without a resourceVersion", w.path)
      elseif w.status == 200 and w.sentResourceVersion ~= w.currentResourceVersion then
        fail("PUT %s accepted with a stale resourceVersion", w.path)
      end
      if w.status == 409 then conflicts = conflicts + 1 end
    end
  end
  return bad, { bound = bound, total = total, puts = puts, conflicts = conflicts, writes = #writes,
    devices = (function() local n = 0; for _ in pairs(used) do n = n + 1 end; return n end)() }
end

return M
