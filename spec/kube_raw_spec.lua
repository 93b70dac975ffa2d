-- kube_raw_spec.lua - the kube client frames its requests and answers itself
-- on the connection libcurl opens (drivers/kube/kc_raw.c).  A scripted server
-- (spec/support/rawhttp.py) answers byte for byte as told and records what it
-- received: the request head, and every way an HTTP/1.1 answer may be framed
-- or cut short.
local core = require "draengine.core"
local H = require "support.helper"

local TOKEN = "raw-token-" .. string.rep("x", 900) -- a ServiceAccount token's size

local function start()
  local dir = H.tmpdir()
  assert(os.execute("env -u LD_PRELOAD python3 " .. H.shell_quote(H.root .. "/spec/support/rawhttp.py") ..
    " --dir " .. H.shell_quote(dir) .. " >" .. H.shell_quote(dir .. "/log") .. " 2>&1 &"))
  for _ = 1, 200 do
    local f = io.open(dir .. "/port")
    if f then f:close(); break end
    os.execute("sleep 0.05")
  end
  local port = assert(tonumber(H.read_file(dir .. "/port")), "rawhttp.py did not start")
  H.write(dir .. "/kubeconfig", ([[
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:%d"}}]
users: [{name: u, user: {token: "%s"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
]]):format(port, TOKEN))
  local s = { dir = dir }
  function s.script(list) H.write(dir .. "/script.json", core.json_encode(list)) end
  function s.requests() return H.json_lines(dir .. "/requests.jsonl") end
  function s.client(opts)
    local cfg = core.kube.config{ kubeconfig = dir .. "/kubeconfig" }
    local o = { qps = 100000, burst = 100000, max_retries = 1, timeout_ms = 3000 }
    for k, v in pairs(opts or {}) do o[k] = v end
    return core.kube.client(cfg, o)
  end
  function s.stop()
    os.execute("kill " .. H.read_file(dir .. "/pid") .. " 2>/dev/null")
    H.rmdir(dir)
  end
  return s
end

local function answer(status, headers, body)
  return "HTTP/1.1 " .. status .. "\r\n" .. table.concat(headers, "\r\n") .. "\r\n\r\n" .. (body or "")
end

local function header(req, name)
  for _, kv in ipairs(req.headers) do
    if kv[1]:lower() == name:lower() then return kv[2] end
  end
end

describe("the kube client's own HTTP/1.1 framing", function()
  local srv
  before_each(function() srv = start() end)
  after_each(function() srv.stop() end)

  it("sends the head libcurl sent: target, Host, agent, token, types and length", function()
    local c = srv.client()
    local status, out, err = c:request("PUT", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c?x=1",
      { apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim",
        metadata = { name = "c", namespace = "ns", resourceVersion = "7" } })
    assert.is_nil(err)
    assert.are.equal(200, status)
    assert.are.equal("Success", out.status)
    local r = srv.requests()[1]
    assert.are.equal("PUT", r.method)
    assert.are.equal("/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c?x=1", r.target)
    assert.are.equal("127.0.0.1:" .. H.read_file(srv.dir .. "/port"), header(r, "Host"))
    assert.truthy(header(r, "User-Agent"):find("^draengine/"))
    assert.are.equal("Bearer " .. TOKEN, header(r, "Authorization"))
    assert.are.equal("application/json", header(r, "Accept"))
    assert.are.equal("application/json", header(r, "Content-Type"))
    assert.are.equal(#r.body, tonumber(header(r, "Content-Length")))
    assert.are.same({ apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim",
      metadata = { name = "c", namespace = "ns", resourceVersion = "7" } }, core.json_decode(r.body))
    -- a GET has no body and no length; a DELETE says its length is 0
    c:request("GET", "/api/v1/nodes")
    c:request("DELETE", "/api/v1/namespaces/ns/pods/p")
    local rs = srv.requests()
    assert.is_nil(header(rs[2], "Content-Length"))
    assert.are.equal("0", header(rs[3], "Content-Length"))
    -- one kept-alive connection carried all three
    assert.are.same({ 1, 1, 1 }, { rs[1].conn, rs[2].conn, rs[3].conn })
  end)

  it("reads chunked answers (extensions, trailers), answers in 1-byte pieces and interim 100s", function()
    local body = '{"kind":"Node","metadata":{"name":"n-1"}}'
    srv.script({
      { send = answer("200 OK", { "Transfer-Encoding: chunked" },
          "5;ext=1\r\n" .. body:sub(1, 5) .. "\r\n" .. string.format("%x", #body - 5) .. "\r\n" ..
          body:sub(6) .. "\r\n0\r\nX-Trailer: t\r\n\r\n") },
      { send = answer("200 OK", { "Content-Length: " .. #body }, body), pieces = #body + 40 },
      { send = "HTTP/1.1 100 Continue\r\n\r\n" .. answer("201 Created", { "Content-Length: " .. #body }, body) },
    })
    local c = srv.client()
    for i, want in ipairs({ 200, 200, 201 }) do
      local status, out, err = c:request("GET", "/api/v1/nodes/n-1")
      assert.is_nil(err, "answer " .. i)
      assert.are.equal(want, status)
      assert.are.equal("n-1", out.metadata.name, "answer " .. i)
    end
    local rs = srv.requests()
    assert.are.same({ 1, 1, 1 }, { rs[1].conn, rs[2].conn, rs[3].conn })
  end)

  it("reads a body that runs to the end of the connection, then connects again", function()
    local body = '{"kind":"Node","metadata":{"name":"eof"}}'
    srv.script({
      { send = answer("200 OK", { "Connection: close" }, body), close = true },
      { send = answer("200 OK", { "Content-Length: " .. #body, "Connection: close" }, body), close = true },
    })
    local c = srv.client()
    for _ = 1, 3 do
      local status, _, err = c:request("GET", "/api/v1/nodes/eof")
      assert.is_nil(err)
      assert.are.equal(200, status)
    end
    local rs = srv.requests()
    assert.are.same({ 1, 2, 3 }, { rs[1].conn, rs[2].conn, rs[3].conn })
  end)

  it("sends once more on a new connection when a kept-alive one was closed unanswered", function()
    srv.script({ {}, { drop = true } }) -- the default answer, then a silent close
    local c = srv.client({ max_retries = 1 })
    assert.are.equal(200, (c:request("GET", "/api/v1/nodes")))
    local status, _, err = c:request("POST", "/api/v1/namespaces/ns/pods/p/binding",
      { apiVersion = "v1", kind = "Binding", metadata = { name = "p" }, target = { kind = "Node", name = "n" } })
    assert.is_nil(err)
    assert.are.equal(200, status)
    local rs = srv.requests()
    assert.are.equal(3, #rs)
    assert.are.same({ 1, 1, 2 }, { rs[1].conn, rs[2].conn, rs[3].conn })
    assert.are.equal(rs[2].body, rs[3].body)
  end)

  -- generateName: a create the client never sends twice (kc_http.c), so each
  -- answer below is what one request got
  it("fails, without a retry, an answer cut short or not HTTP at all", function()
    srv.script({
      { send = answer("200 OK", { "Content-Length: 100" }, '{"kind":'), close = true },
      { send = "SSH-2.0-OpenSSH\r\n\r\n", close = true },
      { send = answer("200 OK", { "Transfer-Encoding: chunked" }, "zz\r\n"), close = true },
    })
    local c = srv.client({ max_retries = 1 })
    local want = { "the connection ended inside the answer's body", "not an HTTP/1.x status line",
                   "a bad chunk size" }
    for i = 1, 3 do
      local status, out, err = c:request("POST", "/api/v1/namespaces/ns/events",
        { apiVersion = "v1", kind = "Event", metadata = { generateName = "e" .. i .. "-" } })
      assert.are.equal(0, status)
      assert.is_nil(out)
      assert.truthy(err and err:find(want[i], 1, true), "answer " .. i .. ": " .. tostring(err))
    end
    assert.are.equal(3, #srv.requests()) -- a POST that got part of an answer is not sent again
    local st = c:stats()
    assert.are.equal(3, st.requests)
  end)

  it("times out an answer that never comes", function()
    local slow = { send = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{" }
    srv.script({ slow, slow })
    local c = srv.client({ max_retries = 1, timeout_ms = 300 })
    local t0 = os.time()
    local status, _, err = c:request("GET", "/api/v1/nodes") -- and its one retry
    assert.are.equal(0, status)
    assert.truthy(err and err:find("timed out", 1, true), err)
    assert.is_true(os.time() - t0 < 4)
    assert.are.equal(2, #srv.requests())
  end)
end)

describe("jansson's block cache", function()
  it("keeps freed blocks by class, within its caps", function()
    -- a tree a Lua value holds is freed by the collector, whenever it runs:
    -- collect before each reading, so each pass has given back all it took
    local function stats()
      collectgarbage("collect"); collectgarbage("collect")
      return core.jalloc_stats()
    end
    local installed, blocks0 = stats()
    if not installed then return end -- not under AddressSanitizer: see engine/base/jalloc.h
    local docs = {}
    for _, f in ipairs(H.find_files(H.shared_dir() .. "/corpus/manifests", "*.yaml")) do
      docs[#docs + 1] = H.read_file(f)
    end
    for _, text in ipairs(docs) do pcall(core.load_text, text, "x.yaml") end
    local _, blocks, bytes = stats()
    assert.is_true(blocks > blocks0)
    assert.is_true(bytes <= 32 * 32 * 1024)
    -- the same work again takes its blocks from the cache: it hardly grows.
    -- A pass takes some 2,400 blocks; when earlier specs have warmed the
    -- cache the first pass adds only a few dozen, and each later pass still
    -- adds a handful (2-18 measured), so the bound has a floor
    for _, text in ipairs(docs) do pcall(core.load_text, text, "x.yaml") end
    local _, blocks2 = stats()
    assert.is_true(blocks2 - blocks <= math.max(64, (blocks - blocks0) / 10), blocks0 .. " " .. blocks .. " " .. blocks2)
  end)
end)
