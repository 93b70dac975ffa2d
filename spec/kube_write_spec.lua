-- kube_write_spec.lua - requests and writes: optimistic concurrency, the
-- refusal to write without a resourceVersion, retries on 429/5xx, token
-- re-read on 401, QPS limits, client certificates, bindings and Events,
-- and that tokens never show up in messages.
local K = require "support.kubeapi"
local core = require "draengine.core"

local function now() -- wall time; os.clock() is CPU time
  local f = io.popen("date +%s.%N"); local s = f:read("l"); f:close(); return tonumber(s)
end
local function H_read(p) local f = assert(io.open(p)); local s = f:read("a"); f:close(); return s end

describe("kube writes", function()
  local srv
  before_each(function() srv = K.start{} end)
  after_each(function() srv:stop() end)

  local function claim_path(name) return "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/" .. name end

  it("updates status with the current resourceVersion and gets 409 on a stale one", function()
    srv:load{ K.claim("default", "c1", "gpu") }
    local cl = srv:client()
    local _, c = cl:request("GET", claim_path("c1"))
    local stale = core.json_decode(core.json_encode(c))
    c.status = { allocation = { devices = { results = {} } } }
    local st, out, err = cl:request("PUT", claim_path("c1") .. "/status", c)
    assert.are.equal(200, st, err)
    assert.are_not.equal(stale.metadata.resourceVersion, out.metadata.resourceVersion)
    stale.status = { allocation = { devices = { results = {} } } }
    st, out, err = cl:request("PUT", claim_path("c1") .. "/status", stale)
    assert.are.equal(409, st)
    assert.truthy(err:find("HTTP 409", 1, true))
    assert.truthy(err:find("the object has been modified", 1, true))
    local w = srv:writes()
    assert.are.equal(2, #w)
    assert.are.equal(w[1].sentResourceVersion, w[1].currentResourceVersion)
    assert.are_not.equal(w[2].sentResourceVersion, w[2].currentResourceVersion)
  end)

  it("reads only the identity of an answer when asked (request_peek)", function()
    srv:load{ K.claim("default", "c1", "gpu") }
    local cl = srv:client()
    local _, c = cl:request("GET", claim_path("c1"))
    c.metadata.finalizers = { "resource.kubernetes.io/delete-protection" }
    local id, err = cl:request_peek("PUT", claim_path("c1"), c)
    assert.is_nil(err)
    local _, now_c = cl:request("GET", claim_path("c1"))
    assert.are.same({ namespace = "default", name = "c1", resourceVersion = now_c.metadata.resourceVersion }, id)
    assert.are_not.equal(c.metadata.resourceVersion, id.resourceVersion)
    -- an answer the scan cannot read plainly (an escape) is decoded instead
    srv:faults{ rules = { { method = "PUT", status = 200, content_type = "application/json",
      body = '{"kind":"ResourceClaim","metadata":{"name":"c\\u0031","namespace":"default","resourceVersion":"99"}}' } } }
    id, err = cl:request_peek("PUT", claim_path("c1"), now_c)
    assert.is_nil(err)
    assert.are.same({ namespace = "default", name = "c1", resourceVersion = "99" }, id)
    -- and one without a resourceVersion is an error
    srv:faults{ rules = { { method = "PUT", status = 200, content_type = "application/json",
      body = '{"kind":"ResourceClaim","metadata":{"name":"c1"}}' } } }
    id, err = cl:request_peek("PUT", claim_path("c1"), now_c)
    assert.is_nil(id)
    assert.truthy(err:find("without metadata.name and resourceVersion", 1, true), err)
  end)

  it("refuses to PUT without a resourceVersion, before anything is sent", function()
    srv:load{ K.claim("default", "c1", "gpu") }
    local cl = srv:client()
    local st, _, err = cl:request("PUT", claim_path("c1") .. "/status", { metadata = { name = "c1" }, status = {} })
    assert.are.equal(0, st)
    assert.truthy(err:find("refusing to write without metadata.resourceVersion", 1, true))
    assert.are.equal(0, #srv:writes())
  end)

  it("honours Retry-After on 429 and retries 500s", function()
    srv:load{ K.claim("default", "c1", "gpu") }
    srv:faults{ rules = { { method = "PUT", status = 429, retry_after = 1, count = 1 },
      { method = "PUT", status = 500, count = 2 } } }
    local cl = srv:client()
    local _, c = cl:request("GET", claim_path("c1"))
    local t0 = now()
    local st, _, err = cl:request("PUT", claim_path("c1") .. "/status", c)
    local took = now() - t0
    assert.are.equal(200, st, err)
    assert.is_true(took >= 1.0, "waited " .. took)
    local s = cl:stats()
    assert.are.equal(1, s.throttled)
    assert.are.equal(3, s.retries)
    local statuses = {}
    for _, w in ipairs(srv:writes()) do statuses[#statuses + 1] = w.status end
    assert.are.same({ 429, 500, 500, 200 }, statuses)
  end)

  it("re-reads a rotated token file after a 401", function()
    local d = srv.dir
    local f = io.open(d .. "/tok", "w"); f:write("rotating-token-one-111"); f:close()
    local cfgtxt = core.json_decode(H_read(srv.kubeconfig))
    cfgtxt.users[1].user = { tokenFile = d .. "/tok" }
    f = io.open(d .. "/kc-file", "w"); f:write(core.json_encode(cfgtxt)); f:close()
    srv:tokens{ "rotating-token-one-111" }
    local cfg = core.kube.config{ kubeconfig = d .. "/kc-file" }
    local cl = core.kube.client(cfg, { qps = 1000, burst = 1000 })
    assert.are.equal(200, (cl:request("GET", "/api/v1/nodes")))
    f = io.open(d .. "/tok", "w"); f:write("rotating-token-two-222"); f:close()
    srv:tokens{ "rotating-token-two-222" }
    local st, _, err = cl:request("GET", "/api/v1/nodes")
    assert.are.equal(200, st, err)
    assert.are.equal(1, cl:stats().unauthorized)
    local seen = srv:get("/_test/tokens_seen")
    assert.is_true(seen["rotating-token-two-222"] >= 1)
  end)

  it("never puts a token in an error message", function()
    srv:tokens{}
    local cl, cfg = srv:client()
    local st, _, err = cl:request("GET", "/api/v1/nodes")
    assert.are.equal(401, st)
    assert.falsy(err:find(srv.token, 1, true))
    assert.falsy(cfg:describe():find(srv.token, 1, true))
    assert.truthy(cfg:describe():find("token=<redacted", 1, true))
  end)

  it("authenticates with a client certificate", function()
    srv:tokens{}
    local cl = srv:client(nil, "cert")
    local st, out, err = cl:request("GET", "/api/v1/nodes")
    assert.are.equal(200, st, err)
    assert.are.equal("NodeList", out.kind)
  end)

  it("fails TLS verification against the wrong CA", function()
    local cfgtxt = core.json_decode(H_read(srv.kubeconfig))
    cfgtxt.clusters[1].cluster["certificate-authority-data"] = nil
    cfgtxt.clusters[1].cluster["certificate-authority"] = srv.certdir .. "/client.crt"
    local p = srv.dir .. "/kc-wrong"
    local f = io.open(p, "w"); f:write(core.json_encode(cfgtxt)); f:close()
    local cl = core.kube.client(core.kube.config{ kubeconfig = p }, { max_retries = 1 })
    local st, _, err = cl:request("GET", "/api/v1/nodes")
    assert.are.equal(0, st)
    assert.truthy(err:find("GET /api/v1/nodes:", 1, true))
  end)

  it("limits write QPS with a token bucket", function()
    srv:load{ K.claim("default", "c1", "gpu") }
    local cfg = core.kube.config{ kubeconfig = srv.kubeconfig }
    local cl = core.kube.client(cfg, { qps = 20, burst = 1 })
    local t0 = now()
    for i = 1, 11 do
      local _, c = cl:request("GET", claim_path("c1"))
      c.metadata.labels = { n = tostring(i) }
      local st, _, err = cl:request("PUT", claim_path("c1"), c)
      assert.are.equal(200, st, err)
    end
    local took = now() - t0
    assert.is_true(took >= 0.45, "11 writes at 20 qps took " .. took)
    assert.is_true(cl:stats().rate_limited_ms >= 200, "rate limited " .. cl:stats().rate_limited_ms)
  end)

  it("binds pods once and reports the second binding as a conflict", function()
    srv:load{ K.node("n1"), K.pod("default", "p1") }
    local cl = srv:client()
    local ok, err = cl:bind("default", "p1", "", "n1")
    assert.is_true(ok, err)
    local pod = srv:get("/api/v1/namespaces/default/pods/p1")
    assert.are.equal("n1", pod.spec.nodeName)
    ok, err = cl:bind("default", "p1", "", "n2")
    assert.is_false(ok)
    assert.truthy(err:find("already assigned", 1, true))
  end)

  it("creates events.k8s.io/v1 Events with capped fields", function()
    srv:load{ K.pod("default", "p1") }
    local cl = srv:client()
    local pod = srv:get("/api/v1/namespaces/default/pods/p1")
    local ok, err = cl:event{ regarding = pod, type = "Warning", reason = "FailedScheduling",
      action = "Scheduling", note = string.rep("é", 600) }
    assert.is_true(ok, err)
    local evs = srv:get("/apis/events.k8s.io/v1/namespaces/default/events").items
    assert.are.equal(1, #evs)
    local e = evs[1]
    assert.are.equal("FailedScheduling", e.reason)
    assert.are.equal("p1", e.regarding.name)
    assert.are.equal("Pod", e.regarding.kind)
    assert.is_true(#e.note <= 1024)
    assert.truthy(utf8.len(e.note))
    assert.truthy(e.eventTime:match("^%d+%-%d+%-%d+T%d+:%d+:%d+%.%d%d%d%d%d%dZ$"))
  end)
end)
