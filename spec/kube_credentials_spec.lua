-- kube_credentials_spec.lua - hostile kubeconfig credentials: control
-- characters that would inject headers, token files that are FIFOs or turn
-- bad on rotation, pipes given as kubeconfig or PEM files, basic auth
-- (username/password) against the test API server, the client-go refusals
-- (token with username/password, insecure-skip-tls-verify with a CA), and
-- userinfo in server URLs kept out of every message.
local H = require "support.helper"
local K = require "support.kubeapi"
local core = require "draengine.core"
local kube = core.kube

local function now()
  local f = io.popen("date +%s.%N"); local s = f:read("l"); f:close(); return tonumber(s)
end

local function kubeconfig(server, user, cluster_extra)
  local cluster = { server = server }
  for k, v in pairs(cluster_extra or {}) do cluster[k] = v end
  return core.json_encode{ apiVersion = "v1", kind = "Config", ["current-context"] = "main",
    clusters = { { name = "c1", cluster = cluster } },
    users = { { name = "u1", user = user } },
    contexts = { { name = "main", context = { cluster = "c1", user = "u1" } } } }
end

local function load_err(opts)
  local ok, err = pcall(kube.config, opts)
  assert.is_false(ok, "the configuration loaded")
  return tostring(err)
end

describe("kube credentials", function()
  local d
  before_each(function() d = H.tmpdir() end)
  after_each(function() H.rmdir(d) end)

  it("refuses a token holding any control character, without quoting it", function()
    for _, bad in ipairs({ "\r\n", "\n", "\r", "\t", "\1", "\27", "\127" }) do
      local tok = "secret-part-one" .. bad .. "X-Injected: yes"
      H.write(d .. "/cfg", kubeconfig("https://a:1", { token = tok }))
      local err = load_err{ kubeconfig = d .. "/cfg" }
      assert.truthy(err:find('user "u1": token: contains a control character', 1, true), err)
      assert.truthy(err:find(string.format("byte 0x%02x at offset 15", bad:byte(1)), 1, true), err)
      assert.falsy(err:find("secret-part-one", 1, true))
      assert.falsy(err:find("X-Injected", 1, true))
    end
    -- surrounding whitespace (a token file's trailing newline) is trimmed, not refused
    H.write(d .. "/cfg", kubeconfig("https://a:1", { token = "  fine-token-123\n" }))
    assert.truthy(kube.config{ kubeconfig = d .. "/cfg" }:describe():find("token=<redacted, 14 bytes>", 1, true))
  end)

  it("refuses a token file with CR/LF inside, at load and on rotation (keeping the good token)", function()
    H.write(d .. "/tok", "evil-token-aaaa\r\nX-Injected: yes\n")
    H.write(d .. "/cfg", kubeconfig("https://a:1", { tokenFile = "tok" }))
    local err = load_err{ kubeconfig = d .. "/cfg" }
    assert.truthy(err:find("token file " .. d .. "/tok: contains a control character (byte 0x0d", 1, true), err)
    assert.falsy(err:find("evil-token", 1, true))

    H.write(d .. "/tok", "good-token-bbbbbbbb\n")
    local c = kube.config{ kubeconfig = d .. "/cfg" }
    assert.are.equal("", (c:token_problem()))
    H.write(d .. "/tok", "rotated-bad\nX-Injected: yes")
    assert.are.equal(#"good-token-bbbbbbbb", c:reload_token()) -- the last good token stays
    local why, n = c:token_problem()
    assert.are.equal(1, n)
    assert.truthy(why:find("contains a control character (byte 0x0a", 1, true), why)
    assert.falsy(why:find("rotated-bad", 1, true))
    H.write(d .. "/tok", "next-good-token-cccc")
    assert.are.equal(#"next-good-token-cccc", c:reload_token())
    assert.are.equal("", (c:token_problem()))
  end)

  it("reports a token file that is a FIFO at once instead of blocking on it", function()
    H.sh("mkfifo " .. d .. "/tok")
    H.write(d .. "/cfg", kubeconfig("https://a:1", { tokenFile = d .. "/tok" }))
    local t0 = now()
    local err = load_err{ kubeconfig = d .. "/cfg" }
    assert.is_true(now() - t0 < 1, "took " .. (now() - t0) .. " s")
    assert.truthy(err:find("token file " .. d .. "/tok: not a regular file (a FIFO)", 1, true), err)
    -- the in-cluster token too, and a token file swapped for a FIFO later
    H.write(d .. "/ca.crt", "x")
    H.sh("mkfifo " .. d .. "/token")
    local t1 = now()
    err = load_err{ env_kubeconfig = "", home = d .. "/none", sa_dir = d, env_host = "10.0.0.1", env_port = "443" }
    assert.is_true(now() - t1 < 1)
    assert.truthy(err:find("not a regular file (a FIFO)", 1, true), err)
    os.remove(d .. "/tok")
    H.write(d .. "/tok", "first-token-dddddddd")
    local c = kube.config{ kubeconfig = d .. "/cfg" }
    os.remove(d .. "/tok")
    H.sh("mkfifo " .. d .. "/tok")
    local t2 = now()
    assert.are.equal(#"first-token-dddddddd", c:reload_token())
    assert.is_true(now() - t2 < 1)
    assert.truthy((c:token_problem()):find("a FIFO", 1, true))
  end)

  it("reads a kubeconfig from a pipe that delivers, and gives up on one that never does", function()
    H.write(d .. "/real", kubeconfig("https://piped:443", { token = "piped-token-123" }))
    H.sh("mkfifo " .. d .. "/fifo")
    -- the writer opens the pipe after a while (kubectl's --kubeconfig <(...))
    H.sh("sh -c 'sleep 0.3; cat " .. d .. "/real > " .. d .. "/fifo' >/dev/null 2>&1 &")
    local c = kube.config{ kubeconfig = d .. "/fifo" }
    assert.are.equal("https://piped:443", c:server())
    -- nobody writes: an error after the 2 s deadline, not a hang
    local t0 = now()
    local err = load_err{ kubeconfig = d .. "/fifo" }
    local took = now() - t0
    assert.is_true(took >= 1.9 and took < 5, "took " .. took .. " s")
    assert.truthy(err:find(d .. "/fifo: no data within 2000 ms", 1, true), err)
    -- a CA file that is such a pipe
    H.write(d .. "/cfg", kubeconfig("https://a:1", { token = "tok-12345678" }, { ["certificate-authority"] = "fifo" }))
    err = load_err{ kubeconfig = d .. "/cfg" }
    assert.truthy(err:find('cluster "c1": certificate-authority: ' .. d .. "/fifo: no data within", 1, true), err)
    -- a directory is named as one
    H.sh("mkdir " .. d .. "/dir")
    H.write(d .. "/cfg", kubeconfig("https://a:1", { tokenFile = "dir" }))
    err = load_err{ kubeconfig = d .. "/cfg" }
    assert.truthy(err:find("not a regular file (a directory)", 1, true), err)
  end)

  it("refuses the combinations client-go refuses, naming the file, user or cluster", function()
    H.write(d .. "/a", kubeconfig("https://a:1", { token = "tok-12345678", username = "alice", password = "pw" }))
    local err = load_err{ kubeconfig = d .. "/a" }
    assert.truthy(err:find(d .. '/a: user "u1": more than one authentication method: token and username/password', 1, true), err)
    H.write(d .. "/a", kubeconfig("https://a:1", { tokenFile = "/nonexistent", username = "alice" }))
    err = load_err{ kubeconfig = d .. "/a" }
    assert.truthy(err:find("tokenFile and username/password", 1, true), err)
    H.write(d .. "/a", kubeconfig("https://a:1", { password = "lonely-password" }))
    err = load_err{ kubeconfig = d .. "/a" }
    assert.truthy(err:find('user "u1": password without username', 1, true), err)
    assert.falsy(err:find("lonely-password", 1, true))
    H.write(d .. "/a", kubeconfig("https://a:1", { username = "a:b", password = "pw" }))
    assert.truthy(load_err{ kubeconfig = d .. "/a" }:find("username: contains ':'", 1, true))
    H.write(d .. "/a", kubeconfig("https://a:1", { username = "alice", password = "pass\r\nX-Injected: 1" }))
    err = load_err{ kubeconfig = d .. "/a" }
    assert.truthy(err:find('user "u1": password: contains a control character', 1, true), err)
    assert.falsy(err:find("X-Injected", 1, true))
    H.write(d .. "/a", kubeconfig("https://a:1", { username = "al\nice", password = "pw" }))
    assert.truthy(load_err{ kubeconfig = d .. "/a" }:find('user "u1": username: contains a control character', 1, true))

    -- insecure-skip-tls-verify with a CA, as data or as a file
    H.write(d .. "/ca.crt", "-----BEGIN CERTIFICATE-----\n")
    H.write(d .. "/b", kubeconfig("https://a:1", { token = "tok-12345678" },
      { ["insecure-skip-tls-verify"] = true, ["certificate-authority-data"] = "QUJD" }))
    err = load_err{ kubeconfig = d .. "/b" }
    assert.truthy(err:find(d .. '/b: cluster "c1": insecure-skip-tls-verify is true and a certificate authority is set (certificate-authority-data)', 1, true), err)
    H.write(d .. "/b", kubeconfig("https://a:1", { token = "tok-12345678" },
      { ["insecure-skip-tls-verify"] = true, ["certificate-authority"] = "ca.crt" }))
    assert.truthy(load_err{ kubeconfig = d .. "/b" }:find("(certificate-authority)", 1, true))
    H.write(d .. "/b", kubeconfig("https://a:1", { token = "tok-12345678" }, { ["insecure-skip-tls-verify"] = true }))
    assert.truthy(kube.config{ kubeconfig = d .. "/b" }:describe():find("insecure-skip-tls-verify=true", 1, true))
  end)

  it("keeps userinfo of a server URL out of server(), describe() and messages", function()
    local c = kube.config{ master = "https://admin:s3cret-pw@127.0.0.1:6443/", env_kubeconfig = "",
      home = d .. "/none", no_in_cluster = true }
    assert.are.equal("https://[REDACTED]@127.0.0.1:6443", c:server())
    assert.falsy(c:describe():find("s3cret", 1, true))
    assert.falsy(c:describe():find("admin", 1, true))
    assert.falsy(tostring(c):find("s3cret", 1, true))
    local m = c:redact("GET https://admin:s3cret-pw@127.0.0.1:6443/api failed; saw s3cret-pw; other https://u:other-pass@h/x")
    assert.falsy(m:find("s3cret", 1, true), m)
    assert.falsy(m:find("other-pass", 1, true), m)
    assert.truthy(m:find("127.0.0.1:6443/api", 1, true))
    -- a bad scheme is reported without the password
    H.write(d .. "/a", kubeconfig("ftp://bob:hunter2-pw@host:21", { token = "tok-12345678" }))
    local err = load_err{ kubeconfig = d .. "/a" }
    assert.truthy(err:find('server "ftp://[REDACTED]@host:21": must start with https://', 1, true), err)
    assert.falsy(err:find("hunter2", 1, true))
    -- control characters in the URL itself
    err = load_err{ master = "https://host:1/\r\nX-Injected: 1", env_kubeconfig = "", home = d .. "/none", no_in_cluster = true }
    assert.truthy(err:find("server URL: contains a control character at offset 15", 1, true), err)
  end)
end)

describe("kube basic auth", function()
  local srv
  before_each(function() srv = K.start{} end)
  after_each(function() srv:stop() end)

  local function basic_client(user, pass)
    local d = srv.dir
    H.write(d .. "/basic.cfg", core.json_encode{ apiVersion = "v1", kind = "Config", ["current-context"] = "b",
      clusters = { { name = "c", cluster = { server = srv.url, ["certificate-authority"] = srv.certdir .. "/ca.crt" } } },
      users = { { name = "u", user = { username = user, password = pass } } },
      contexts = { { name = "b", context = { cluster = "c", user = "u" } } } })
    local cfg = kube.config{ kubeconfig = d .. "/basic.cfg" }
    return kube.client(cfg, { max_retries = 1 }), cfg
  end

  it("authenticates with username/password, which used to be dropped silently", function()
    srv:basic{ "alice:correct horse" }
    srv:load{ K.node("n1") }
    local cl, cfg = basic_client("alice", "correct horse")
    local st, out, err = cl:request("GET", "/api/v1/nodes")
    assert.are.equal(200, st, err)
    assert.are.equal("n1", out.items[1].metadata.name)
    assert.is_true(srv:stats().basic_seen >= 1)
    local desc = cfg:describe()
    assert.truthy(desc:find("username=alice password=<redacted>", 1, true), desc)
    assert.falsy(desc:find("correct horse", 1, true))
    -- a wrong password is a 401 whose message quotes no credential
    local bad = basic_client("alice", "wrong-password-123")
    st, out, err = bad:request("GET", "/api/v1/nodes")
    assert.are.equal(401, st)
    assert.falsy(err:find("wrong-password", 1, true))
  end)
end)
