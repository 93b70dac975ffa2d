-- kube_faults_spec.lua - the client against an unhealthy API server, with
-- request counts measured over time: lists that page forever, watches that
-- end at once (empty, one event, garbage, ERROR 410/500, dropped) must back
-- off as client-go's reflector does instead of storming the server, and every
-- failure (401, 403, 429, 500, 503, TLS verification, refused connections,
-- undecodable bodies) is counted and reported with its resource, verb, code
-- and reason, rate-limited.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"
local core = require "draengine.core"

local function now()
  local f = io.popen("date +%s.%N"); local s = f:read("l"); f:close(); return tonumber(s)
end

-- Requests the server saw for a resource and verb (the specs' own set-up
-- traffic is not counted).
local function count(srv, res, verb)
  local per = srv:stats().by_res[res]
  return per and per[verb] or 0
end

local function synced(inf, secs)
  return K.wait_for(function() inf:poll(50); return inf:synced() end, secs or 10, 0)
end

local function find(list, pred)
  for _, x in ipairs(list) do if pred(x) then return x end end
end

local function failures_of(cl, res, verb, reason)
  local n = 0
  for _, f in ipairs((cl:failures())) do
    if f.resource == res and f.verb == verb and (not reason or f.reason == reason) then n = n + f.count end
  end
  return n
end

describe("kube lists that page forever", function()
  local srv
  before_each(function() srv = K.start{ bookmark_ms = 200 } end)
  after_each(function() srv:stop() end)

  it("stops following continue tokens that bring nothing, backs off, and recovers", function()
    srv:load{ K.node("n1") }
    srv:faults{ rules = { { method = "GET", path = "/api/v1/nodes", list = "endless", count = 1e9 } } }
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes" }, seed = 3, backoff_ms = 200 }
    local t0 = now()
    inf:poll(3000)
    local lists, took = count(srv, "nodes", "list"), now() - t0
    -- before: ~3,400 requests per second; now 17 pages per burst, bursts
    -- 200-400, 400-800, 800-1600 ms apart: at most 4 bursts in 3 s
    assert.is_true(lists <= 4 * 17, lists .. " lists in " .. took .. " s")
    assert.is_true(lists >= 2 * 17, lists .. " lists in " .. took .. " s")
    assert.is_false(inf:synced())
    assert.truthy(inf:last_error():find("pages in a row brought no new object", 1, true), inf:last_error())
    assert.truthy(inf:describe():find("backing off (list in", 1, true), inf:describe())
    assert.is_true(failures_of(cl, "nodes", "list", "ListNoProgress") >= 2)
    local rep = cl:reports()
    assert.are.equal(1, #rep) -- the rest are held back by the rate limit, not lost
    assert.are.same({ "nodes", "list", 200, "ListNoProgress" }, { rep[1].resource, rep[1].verb, rep[1].code, rep[1].reason })
    -- the server heals: the next attempt lists it
    srv:faults{ clear_rules = true }
    assert.is_true(synced(inf, 10))
  end)

  it("refuses a repeated continue token at the second page", function()
    srv:faults{ rules = { { method = "GET", path = "/api/v1/nodes", list = "repeat", count = 1e9 } } }
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes" }, seed = 3, backoff_ms = 200 }
    inf:poll(2500)
    local lists = count(srv, "nodes", "list")
    assert.is_true(lists >= 4 and lists <= 8, lists .. " lists") -- 2 per burst
    assert.truthy(inf:last_error():find("repeats an earlier continue token", 1, true), inf:last_error())
    assert.is_true(failures_of(cl, "nodes", "list", "ListRepeatedToken") >= 2)
  end)

  it("counts pages that repeat the same objects under new tokens as no progress", function()
    srv:load{ K.node("a"), K.node("b"), K.node("c") }
    srv:faults{ rules = { { method = "GET", path = "/api/v1/nodes", list = "same_items", count = 1e9 } } }
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes" }, seed = 3, backoff_ms = 300, page_limit = 2, max_empty_pages = 4 }
    inf:poll(1500)
    local lists = count(srv, "nodes", "list")
    -- page 1 brings a and b, then 5 pages of the same two: 6 per burst, bursts
    -- 300-600 and 600-1200 ms apart
    assert.is_true(lists % 6 == 0 and lists >= 12 and lists <= 18, lists .. " lists")
    assert.truthy(inf:last_error():find("5 pages in a row brought no new object", 1, true), inf:last_error())
  end)

  it("caps the pages of one list, and a list within the cap syncs", function()
    local nodes = {}
    for i = 1, 30 do nodes[i] = K.node(string.format("n%02d", i)) end
    srv:load(nodes)
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes" }, seed = 3, backoff_ms = 5000, page_limit = 2, max_pages = 10 }
    inf:poll(1000)
    assert.are.equal(10, count(srv, "nodes", "list"))
    assert.is_false(inf:synced())
    assert.truthy(inf:last_error():find("more than 10 pages", 1, true), inf:last_error())
    local ok = srv:client():informer{ resources = { "nodes" }, seed = 3, page_limit = 2, max_pages = 15 }
    assert.is_true(synced(ok))
  end)
end)

describe("kube watches that end at once", function()
  local srv
  before_each(function() srv = K.start{ bookmark_ms = 200 } end)
  after_each(function() srv:stop() end)

  -- A synced informer whose watch has run long enough to count as healthy
  -- (min_watch_ms 300 instead of 1 s keeps the specs short).
  local function healthy(opts)
    if #srv:get("/api/v1/nodes").items == 0 then srv:load{ K.node("n1") } end
    local cl = srv:client()
    local o = { resources = { "nodes" }, seed = 5, backoff_ms = 100, min_watch_ms = 300 }
    for k, v in pairs(opts or {}) do o[k] = v end
    local inf = cl:informer(o)
    assert.is_true(synced(inf))
    inf:poll(400)
    return cl, inf
  end

  -- The backoff delay of each new failure episode (a jump up of the delay
  -- describe() shows), until n were seen.
  local function episodes(inf, n, secs)
    local d, prev = {}, nil
    K.wait_for(function()
      inf:poll(10)
      local ms = tonumber(inf:describe():match("%(%a+ in (%d+) ms"))
      if ms and (not prev or ms > prev + 30) then d[#d + 1] = ms end
      prev = ms
      return #d >= n
    end, secs or 15, 0)
    return d
  end

  -- Make every nodes watch misbehave in `mode` for `secs`.
  local function storm(mode, secs, opts)
    local cl, inf = healthy(opts)
    srv:faults{ rules = { { method = "GET", path = "/api/v1/nodes", watch = true, stream = mode, count = 1e9 } } }
    srv:drop()
    local w0, l0 = count(srv, "nodes", "watch"), count(srv, "nodes", "list")
    inf:poll(secs * 1000)
    return cl, inf, count(srv, "nodes", "watch") - w0, count(srv, "nodes", "list") - l0
  end

  -- Backoff 100 ms doubling, jitter [1, 2): at most 6 attempts in 4 s
  -- (100+200+400+800+1600 = 3.1 s at the least).  Before: 100-200 per second.
  for _, case in ipairs{
    { "empty", "ShortWatch", 0 }, { "one_event", "ShortWatch", 0 }, { "drop", "ConnectionLost", 0 },
    { "garbage", "UndecodableEvent", 1 }, { "error410", "Expired", 1 }, { "error500", "InternalError", 1 },
  } do
    local mode, reason, relists = case[1], case[2], case[3]
    it("backs off a watch that ends at once: " .. mode, function()
      local cl, inf, watches, lists = storm(mode, 4)
      assert.is_true(watches >= 3 and watches <= 6, watches .. " watches in 4 s")
      -- in-band errors relist (with the same backoff; the last may still be
      -- waiting); the others resume the watch
      assert.is_true(lists == relists * watches or lists == relists * (watches - 1),
        lists .. " lists for " .. watches .. " watches")
      assert.is_true(failures_of(cl, "nodes", "watch", reason) >= 3, reason)
      assert.truthy(inf:describe():find("backing off", 1, true) or watches > 0)
    end)
  end

  it("slows a 410 relist loop to client-go's pace instead of 34 relists a second", function()
    local cl, _, watches, lists = storm("error410", 6, { backoff_ms = 800 })
    -- 800 ms doubling: 0.8-1.6, 1.6-3.2, 3.2-6.4 s: 2 or 3 relists in 6 s
    assert.is_true(lists >= 2 and lists <= 3, lists .. " relists in 6 s")
    assert.is_true(watches == lists or watches == lists + 1)
    assert.is_true(cl:stats().relists >= 2)
  end)

  it("starts the backoff over after a healthy stretch, not after a successful list", function()
    local _, inf = healthy{ backoff_ms = 200, backoff_reset_ms = 1500 }
    srv:faults{ rules = { { method = "GET", path = "/api/v1/nodes", watch = true, stream = "error410", count = 3 } } }
    srv:drop()
    local d = episodes(inf, 3)
    -- the successful relists in between did not reset it: 200-400, 400-800, 800-1600
    assert.are.equal(3, #d)
    assert.is_true(d[1] < 400 and d[2] >= 350 and d[3] >= 750, table.concat(d, ", "))
    -- healthy for longer than the reset period, then one more failure
    K.wait_for(function() inf:poll(20); return not inf:describe():find("backing off", 1, true) end, 10, 0)
    inf:poll(2000)
    srv:faults{ rules = { { method = "GET", path = "/api/v1/nodes", watch = true, stream = "empty", count = 1 } } }
    srv:drop()
    local after = episodes(inf, 1)[1]
    assert.is_true(after < 400, "after a healthy stretch the delay is " .. tostring(after) .. " ms")
  end)

  it("draws different delays for different jitter seeds, within [d, 2d)", function()
    local delays = {}
    for i = 1, 3 do
      local _, inf = healthy{ seed = i * 7919, backoff_ms = 1000 }
      srv:faults{ rules = { { method = "GET", path = "/api/v1/nodes", watch = true, stream = "empty", count = 1 } } }
      srv:drop()
      delays[i] = episodes(inf, 1)[1]
      assert.truthy(delays[i], "no backoff seen: " .. inf:describe() .. core.json_encode(srv:stats().by_res))
    end
    table.sort(delays)
    for _, ms in ipairs(delays) do assert.is_true(ms >= 900 and ms < 2000, tostring(ms)) end
    assert.is_true(delays[3] - delays[1] > 100, table.concat(delays, ", "))
  end)
end)

describe("kube API failure reports", function()
  local srv
  before_each(function() srv = K.start{} end)
  after_each(function() srv:stop() end)

  local function client(opts)
    local o = { qps = 1000, burst = 1000, max_retries = 1, report_interval_ms = 400 }
    for k, v in pairs(opts or {}) do o[k] = v end
    return srv:client(o)
  end

  it("reports each failure with resource, verb, code, reason and the Status message", function()
    srv:load{ K.node("n1"), K.claim("default", "c1", "gpu") }
    srv:faults{ rules = {
      { method = "GET", path = "/api/v1/nodes$", status = 403, reason = "Forbidden",
        message = 'nodes is forbidden: User "system:serviceaccount:x:y" cannot list resource "nodes"' },
      { method = "PUT", path = "resourceclaims/c1/status", status = 500, count = 2 },
      { method = "GET", path = "/api/v1/nodes/n1", status = 429, retry_after = 0 },
      { method = "GET", path = "/api/v1/namespaces/default/pods$", status = 503, count = 2,
        body = "<html><body>503 Service Unavailable (proxy)</body></html>" },
      { method = "GET", path = "/apis/resource.k8s.io/v1/deviceclasses$", status = 200, body = "{not json" },
    } }
    local cl = client()
    local st, _, err = cl:request("GET", "/api/v1/nodes")
    assert.are.equal(403, st)
    assert.truthy(err:find("HTTP 403: Forbidden: nodes is forbidden", 1, true), err)
    local _, c = cl:request("GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c1")
    st = cl:request("PUT", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c1/status", c)
    assert.are.equal(500, st) -- two 500s: the first is retried, the second is the answer
    assert.are.equal(200, (cl:request("GET", "/api/v1/nodes/n1"))) -- 429, then served
    assert.are.equal(503, (cl:request("GET", "/api/v1/namespaces/default/pods"))) -- retried once
    st, _, err = cl:request("GET", "/apis/resource.k8s.io/v1/deviceclasses")
    assert.are.equal(200, st)
    assert.truthy(err and err:find("undecodable answer", 1, true), tostring(err))

    local rep = cl:reports()
    local function rep_of(res, verb, code)
      return find(rep, function(r) return r.resource == res and r.verb == verb and r.code == code end)
    end
    local r = assert(rep_of("nodes", "list", 403))
    assert.are.equal("Forbidden", r.reason)
    assert.truthy(r.message:find('cannot list resource "nodes"', 1, true))
    r = assert(rep_of("resourceclaims/status", "update", 500))
    assert.are.equal("InternalError", r.reason)
    assert.are.equal("TooManyRequests", assert(rep_of("nodes", "get", 429)).reason)
    r = assert(rep_of("pods", "list", 503))
    assert.are.equal("ServiceUnavailable", r.reason) -- no Status body: the code's reason
    assert.truthy(r.message:find("503 Service Unavailable (proxy)", 1, true))
    assert.are.equal("UndecodableBody", assert(rep_of("deviceclasses", "list", 200)).reason)
    -- both 500s are counted, though only the first was reported (same kind, within 400 ms)
    assert.are.equal(2, failures_of(cl, "resourceclaims/status", "update", "InternalError"))
    assert.are.equal(1, #(function() local n = {}; for _, x in ipairs(rep) do if x.code == 500 then n[#n + 1] = x end end; return n end)())
  end)

  it("reports 401 (with its token re-read), TLS verification failures and refused connections", function()
    local cl = client()
    srv:tokens{ "some-other-token-000" }
    assert.are.equal(401, (cl:request("GET", "/api/v1/nodes")))
    assert.are.equal(2, failures_of(cl, "nodes", "list", "Unauthorized")) -- first try and the re-read
    local r = cl:reports()[1]
    assert.are.same({ "nodes", "list", 401, "Unauthorized" }, { r.resource, r.verb, r.code, r.reason })
    assert.falsy(r.message:find(srv.token, 1, true))

    -- no CA: the server's certificate does not verify against the system store
    local d = srv.dir
    H.write(d .. "/noca.cfg", core.json_encode{ apiVersion = "v1", kind = "Config", ["current-context"] = "x",
      clusters = { { name = "c", cluster = { server = srv.url } } },
      users = { { name = "u", user = { token = srv.token } } },
      contexts = { { name = "x", context = { cluster = "c", user = "u" } } } })
    local tls = core.kube.client(core.kube.config{ kubeconfig = d .. "/noca.cfg" }, { max_retries = 1 })
    local st, _, err = tls:request("GET", "/api/v1/nodes")
    assert.are.equal(0, st)
    r = tls:reports()[1]
    assert.are.same({ "nodes", "list", 0, "TLSVerifyFailed" }, { r.resource, r.verb, r.code, r.reason })
    assert.truthy(r.message:find("certificate", 1, true), r.message)
    assert.truthy(err:find("certificate", 1, true), err)

    -- nothing listens on port 1
    local refused = core.kube.client(core.kube.config{ kubeconfig = srv.kubeconfig, master = "https://127.0.0.1:1" },
      { max_retries = 1 })
    st = refused:request("GET", "/api/v1/namespaces/default/pods/p1")
    assert.are.equal(0, st)
    r = refused:reports()[1]
    assert.are.same({ "pods", "get", 0, "ConnectionRefused" }, { r.resource, r.verb, r.code, r.reason })
    local f = (refused:failures())[1]
    assert.are.same({ "pods", "get", "<error>", "ConnectionRefused", 2 }, { f.resource, f.verb, f.code, f.reason, f.count })
  end)

  it("rate-limits reports per kind and in total, and never stops counting", function()
    srv:load{ K.node("n1") }
    local cl = client{ report_interval_ms = 500 }
    srv:faults{ rules = { { method = "GET", path = "/api/v1/nodes/n1", status = 403, count = 6 } } }
    for _ = 1, 5 do cl:request("GET", "/api/v1/nodes/n1") end
    local rep = cl:reports()
    assert.are.equal(1, #rep)
    K.sleep(0.6)
    cl:request("GET", "/api/v1/nodes/n1")
    rep = cl:reports()
    assert.are.equal(1, #rep)
    assert.are.equal(4, rep[1].suppressed) -- what was held back is said with the next report
    assert.are.equal(6, failures_of(cl, "nodes", "get"))

    -- 40 kinds at once (a server inventing a reason per answer): a burst of
    -- 20 reports, the rest held back; all 40 counted
    local rules = {}
    for i = 1, 40 do rules[i] = { method = "GET", path = "/api/v1/nodes/n1", status = 400, reason = "Reason" .. i } end
    srv:faults{ clear_rules = true }
    srv:faults{ rules = rules }
    local fresh = client{ report_interval_ms = 500 }
    for _ = 1, 40 do fresh:request("GET", "/api/v1/nodes/n1") end
    rep = fresh:reports()
    assert.is_true(#rep >= 20 and #rep <= 21, #rep .. " reports")
    local n = 0
    for _, f in ipairs((fresh:failures())) do if f.code == "400" then n = n + f.count end end
    assert.are.equal(40, n)
    local _, held = fresh:failures()
    assert.are.equal(40 - #rep, held)
  end)

  it("keeps metric labels clean and bounded whatever reasons the server sends", function()
    srv:load{ K.node("n1") }
    local cl = client()
    local rules = { { method = "GET", path = "/api/v1/nodes/n1", status = 400, reason = 'Bad"Reason\n{x="1"}' } }
    for i = 1, 300 do rules[#rules + 1] = { method = "GET", path = "/api/v1/nodes/n1", status = 400, reason = "R" .. i } end
    srv:faults{ rules = rules }
    for _ = 1, 301 do cl:request("GET", "/api/v1/nodes/n1") end
    local f = cl:failures()
    assert.are.equal(256, #f)
    assert.are.equal("Unknown", f[1].reason)
    local total = 0
    for _, x in ipairs(f) do
      assert.truthy(x.reason:match("^[%w]+$"), x.reason)
      total = total + x.count
    end
    assert.are.equal(301, total)
    assert.are.same({ "other", "other", "other", "Other" }, { f[256].resource, f[256].verb, f[256].code, f[256].reason })
  end)
end)

describe("draengine serve against a failing API server", function()
  local srv, procs
  before_each(function() srv = K.start{ bookmark_ms = 300 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs, 4000)
    srv:stop()
    assert.are.same({}, reports)
  end)

  local function serve(args, kubeconfig)
    local a = { "--leader-elect=false", "--watch-backoff=20ms", "--jitter-seed=7" }
    for _, x in ipairs(args or {}) do a[#a + 1] = x end
    local p = S.start(kubeconfig and { kubeconfig = kubeconfig } or srv, a)
    procs[#procs + 1] = p
    assert.truthy(p.port, "serve did not start: " .. p:stderr())
    return p
  end

  local function lines(log, pat)
    local n = 0
    for l in log:gmatch("[^\n]+") do if l:find(pat, 1, true) then n = n + 1 end end
    return n
  end

  it("logs each failure with resource, verb, code and reason, rate-limited, and counts all in /metrics", function()
    srv:load(S.cluster(2, 2))
    srv:faults{ rules = {
      { method = "GET", path = "/api/v1/pods", status = 403, reason = "Forbidden", count = 2,
        message = 'pods is forbidden: User "system:serviceaccount:draengine-system:draengine" cannot list resource "pods"' },
      { method = "GET", path = "/apis/resource.k8s.io/v1/deviceclasses", status = 500, count = 1e9 },
    } }
    local p = serve()
    K.wait_for(function() return p:stderr():find('reason="InternalError"', 1, true) end, 10)
    K.sleep(2.5)
    local log = p:stderr()
    local l403 = log:match('[^\n]*resource="pods" verb="list" code="403"[^\n]*')
    assert.truthy(l403, log)
    assert.are.equal("W", l403:sub(1, 1)) -- a warning, at the default verbosity
    assert.truthy(l403:find('"kube API request failed" resource="pods" verb="list" code="403" reason="Forbidden" message="HTTP 403: Forbidden: pods is forbidden: User', 1, true), l403)
    assert.are.equal(1, lines(log, 'code="403"')) -- the second 403 came within 10 s: counted, not logged
    -- a failure that repeats every few ms: one line per 10 s, every one counted
    assert.are.equal(1, lines(log, 'resource="deviceclasses" verb="list" code="500" reason="InternalError"'), log)
    local st, m = p:http("/metrics")
    assert.are.equal(200, st)
    local n = tonumber(m:match('draengine_kube_api_failures_total{resource="deviceclasses",verb="list",code="500",reason="InternalError"} (%d+)'))
    assert.is_true(n and n >= 5, tostring(n))
    assert.truthy(m:find('draengine_kube_api_failures_total{resource="pods",verb="list",code="403",reason="Forbidden"} 2', 1, true), m)
    assert.truthy(m:find("draengine_kube_api_failure_logs_suppressed_total ", 1, true))
    local _, ready = p:http("/readyz?verbose")
    assert.truthy(ready:find("[-]informer-synced failed", 1, true), ready)
  end)

  it("logs TLS verification failures and refused connections, never the URL's userinfo", function()
    local d = srv.dir
    H.write(d .. "/noca.cfg", core.json_encode{ apiVersion = "v1", kind = "Config", ["current-context"] = "x",
      clusters = { { name = "c", cluster = { server = "https://admin:pw-secret-123@127.0.0.1:" .. srv.port } } },
      users = { { name = "u", user = { token = srv.token } } },
      contexts = { { name = "x", context = { cluster = "c", user = "u" } } } })
    local p = serve({}, d .. "/noca.cfg")
    K.wait_for(function() return p:stderr():find("TLSVerifyFailed", 1, true) end, 10)
    local log = p:stderr()
    assert.truthy(log:find('verb="list" code="<error>" reason="TLSVerifyFailed" message="', 1, true), log)
    assert.truthy(log:find("server=https://[REDACTED]@127.0.0.1:", 1, true), log)
    assert.falsy(log:find("pw-secret", 1, true))
    assert.falsy(log:find(srv.token, 1, true))

    local q = serve({ "--master", "https://bob:pw-secret-456@127.0.0.1:1" })
    K.wait_for(function() return q:stderr():find("ConnectionRefused", 1, true) end, 10)
    log = q:stderr()
    assert.truthy(log:find('code="<error>" reason="ConnectionRefused"', 1, true), log)
    assert.falsy(log:find("pw-secret", 1, true))
    local _, m = q:http("/metrics")
    assert.truthy(m:find('draengine_kube_api_failures_total{resource="nodes",verb="list",code="<error>",reason="ConnectionRefused"}', 1, true), m)
  end)
end)
