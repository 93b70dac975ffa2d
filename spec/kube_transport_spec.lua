-- kube_transport_spec.lua - which HTTP version the kube client asks for.
-- The test API server offers h2 and http/1.1 in its TLS handshake (ALPN) and
-- counts what each connection's client picked: by default every client picks
-- http/1.1 (drivers/kube/kc_http.c: kube-apiserver spends less CPU on it),
-- and http2 = true (serve's --kube-api-http2) picks h2.
local core = require "draengine.core"
local K = require "support.kubeapi"

describe("the kube client's HTTP version", function()
  local srv
  before_each(function() srv = K.start{ alpn_h2 = true } end)
  after_each(function() if srv then srv:stop() end end)

  it("is HTTP/1.1 unless HTTP/2 is asked for", function()
    local c = core.kube.client(srv.cfg, { max_retries = 1, timeout_ms = 3000 })
    local status = c:request("GET", "/api/v1/nodes")
    assert.are.equal(200, status)
    local alpn = srv:stats().alpn
    assert.is_nil(alpn.h2)
    assert.is_true((alpn["http/1.1"] or 0) >= 2) -- the admin client's and this one's

    -- this server speaks no HTTP/2: the request fails, but the handshake shows the choice
    local h2 = core.kube.client(srv.cfg, { max_retries = 1, timeout_ms = 3000, http2 = true })
    local st2 = h2:request("GET", "/api/v1/nodes")
    assert.are_not.equal(200, st2)
    assert.is_true((srv:stats().alpn.h2 or 0) >= 1) -- one handshake per attempt
  end)
end)
