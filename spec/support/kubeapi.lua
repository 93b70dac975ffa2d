-- kubeapi.lua - start and drive the test API server (spec/support/kubeapi.py)
-- from specs.
--
--   local K = require "support.kubeapi"
--   local srv = K.start{ bookmark_ms = 200 }      -- HTTPS on 127.0.0.1, fresh CA
--   srv:load{ node, slice, ... }                   -- objects, bypassing faults
--   srv:faults{ rules = {{ method = "PUT", status = 409, count = 2 }} }
--   srv:get("/api/v1/pods")                        -- decoded body
--   srv:stop()
local H = require "support.helper"
local core = require "draengine.core"

local M = {}
local Server = {}
Server.__index = Server

local function sleep(s) os.execute("sleep " .. tostring(s)) end
M.sleep = sleep

local function exists(p)
  local f = io.open(p, "r"); if f then f:close(); return true end; return false
end

-- One CA and set of certificates per busted run (openssl is the slow part
-- of starting a server); every server gets its own state directory.
local certdir

function M.start(opts)
  opts = opts or {}
  if not certdir then
    certdir = os.tmpname(); os.remove(certdir)
    assert(os.execute("mkdir -p " .. H.shell_quote(certdir)))
    local dir = certdir
    M._cleanup = setmetatable({}, { __gc = function() os.execute("rm -rf " .. H.shell_quote(dir)) end })
  end
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. H.shell_quote(dir)))
  local args = { "python3", H.root .. "/spec/support/kubeapi.py", "--dir", dir,
    "--bookmark-ms", tostring(opts.bookmark_ms or 500), "--seed", tostring(opts.seed or 1),
    "--cert-dir", certdir }
  if opts.no_claim_controller then args[#args + 1] = "--no-claim-controller" end
  if opts.token then args[#args + 1] = "--token"; args[#args + 1] = opts.token end
  if opts.alpn_h2 then args[#args + 1] = "--alpn-h2" end
  local parts = {}
  for i, a in ipairs(args) do parts[i] = H.shell_quote(a) end
  -- LD_PRELOAD (ASan) must not reach python.
  local cmd = "env -u LD_PRELOAD " .. table.concat(parts, " ") .. " >" .. dir .. "/server.log 2>&1 &"
  assert(os.execute(cmd))
  for _ = 1, 200 do
    if exists(dir .. "/port") then break end
    sleep(0.05)
  end
  assert(exists(dir .. "/port"), "test API server did not start: " .. (io.open(dir .. "/server.log") and H.read_file(dir .. "/server.log") or ""))
  local s = setmetatable({ dir = dir, certdir = certdir, kubeconfig = dir .. "/kubeconfig",
    token = opts.token or "test-token-0123456789abcdef" }, Server)
  s.port = tonumber(H.read_file(dir .. "/port"))
  s.pid = tonumber(H.read_file(dir .. "/pid"))
  s.url = "https://127.0.0.1:" .. s.port
  s.cfg = core.kube.config{ kubeconfig = s.kubeconfig }
  s.admin = core.kube.client(s.cfg, { qps = 100000, burst = 100000, header = "X-Test-Bypass: 1" })
  return s
end

function Server:stop()
  if self.pid then os.execute("kill " .. self.pid .. " 2>/dev/null"); self.pid = nil end
  os.execute("rm -rf " .. H.shell_quote(self.dir))
end

-- A client as draengine would use it (faults apply, writes recorded).
function Server:client(opts, context)
  local cfg = core.kube.config{ kubeconfig = self.kubeconfig, context = context }
  return core.kube.client(cfg, opts or { qps = 100000, burst = 100000 }), cfg
end

function Server:request(method, path, body)
  local status, out, err = self.admin:request(method, path, body)
  return status, out, err
end

function Server:get(path)
  local status, out, err = self.admin:request("GET", path)
  assert(status == 200, "GET " .. path .. ": " .. tostring(err))
  return out
end

function Server:post(path, body)
  local status, out, err = self.admin:request("POST", path, body)
  assert(status >= 200 and status < 300, "POST " .. path .. ": " .. tostring(err))
  return out
end

function Server:load(items)
  -- in batches so one request body stays small
  local n = 0
  for i = 1, #items, 500 do
    local batch = {}
    for j = i, math.min(i + 499, #items) do batch[#batch + 1] = items[j] end
    n = n + self:post("/_test/load", { items = batch }).created
  end
  return n
end

function Server:faults(f) return self:post("/_test/faults", f) end
function Server:drop() return self:post("/_test/drop", { x = 1 }) end
function Server:restart() return self:post("/_test/restart", { x = 1 }) end
function Server:tokens(list) return self:post("/_test/tokens", { valid = list }) end
function Server:basic(list) return self:post("/_test/basic", { valid = list }) end
function Server:writes() return self:get("/_test/writes").items end
-- Play a DRA driver that reports binding conditions: mode "ready" (all
-- True), "fail" (a failure condition True) or "none", after delay_ms.
function Server:driver(name, mode, delay_ms)
  return self:post("/_test/driver", { driver = name, mode = mode, delay_ms = delay_ms or 0 })
end
function Server:stats() return self:get("/_test/stats") end
function Server:state() return self:get("/_test/state") end

-- Wait until fn() is truthy (polling every `step` s) or `timeout` s passed.
function M.wait_for(fn, timeout, step)
  local deadline = os.time() + (timeout or 30)
  while os.time() <= deadline do
    local v = fn()
    if v then return v end
    sleep(step or 0.1)
  end
  return fn()
end

-- Object builders ---------------------------------------------------------
function M.node(name, labels, extra)
  local n = { apiVersion = "v1", kind = "Node",
    metadata = { name = name, labels = labels or { ["kubernetes.io/hostname"] = name } },
    status = { allocatable = { cpu = "64", memory = "512Gi", pods = "110" } } }
  for k, v in pairs(extra or {}) do n[k] = v end
  return n
end

function M.slice(node, driver, ndev, prefix)
  local devs = {}
  for i = 0, ndev - 1 do
    devs[#devs + 1] = { name = (prefix or "gpu") .. "-" .. i,
      attributes = { index = { int = i }, model = { string = "H100" } },
      capacity = { memory = { value = "80Gi" } } }
  end
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice",
    metadata = { name = node .. "-" .. driver:gsub("%.", "-") },
    spec = { driver = driver, nodeName = node, pool = { name = node, generation = 1, resourceSliceCount = 1 },
      devices = devs } }
end

function M.class(name, driver, extra)
  local c = { apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = name },
    spec = { selectors = { { cel = { expression = 'device.driver == "' .. driver .. '"' } } } } }
  for k, v in pairs(extra or {}) do c.spec[k] = v end
  return c
end

function M.claim(ns, name, class, count)
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim",
    metadata = { name = name, namespace = ns },
    spec = { devices = { requests = { { name = "gpu", exactly = { deviceClassName = class, count = count or 1 } } } } } }
end

-- A claim with several requests: each { class, count, CEL selector or nil },
-- named r1, r2, ...; constraints as the API writes them.
function M.claim_rq(ns, name, requests, constraints)
  local rq = {}
  for i, r in ipairs(requests) do
    local x = { deviceClassName = r[1], count = r[2] or 1 }
    if r[3] then x.selectors = { { cel = { expression = r[3] } } } end
    rq[i] = { name = "r" .. i, exactly = x }
  end
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim",
    metadata = { name = name, namespace = ns },
    spec = { devices = { requests = rq, constraints = constraints } } }
end

-- A bare pod (no requests, no scheduler name) using one claim as "dev":
-- what the allocator specs schedule directly, without a server.
function M.claim_pod(ns, name, claimname)
  return { apiVersion = "v1", kind = "Pod", metadata = { name = name, namespace = ns, uid = "uid-" .. name },
    spec = { containers = { { name = "c", image = "x" } },
      resourceClaims = { { name = "dev", resourceClaimName = claimname } } } }
end

function M.template(ns, name, class, count)
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceClaimTemplate",
    metadata = { name = name, namespace = ns },
    spec = { spec = { devices = { requests = { { name = "gpu", exactly = { deviceClassName = class, count = count or 1 } } } } } } }
end

function M.pod(ns, name, opts)
  opts = opts or {}
  local c = { name = "main", image = "busybox", resources = { requests = opts.requests or { cpu = "100m" } } }
  -- as the API server takes it: an extended resource's limit equals its request
  for k, v in pairs(c.resources.requests) do
    if k:find("/", 1, true) and not k:find("kubernetes.io/", 1, true) then
      c.resources.limits = c.resources.limits or {}
      c.resources.limits[k] = v
    end
  end
  if opts.claims then
    c.resources.claims = {}
    for _, r in ipairs(opts.claims) do c.resources.claims[#c.resources.claims + 1] = { name = r.name } end
  end
  local p = { apiVersion = "v1", kind = "Pod", metadata = { name = name, namespace = ns, labels = opts.labels },
    spec = { schedulerName = opts.scheduler or "draengine", containers = { c }, resourceClaims = opts.claims,
      nodeSelector = opts.node_selector, tolerations = opts.tolerations, affinity = opts.affinity },
    status = { phase = "Pending" } }
  return p
end

return M
