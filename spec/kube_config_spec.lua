-- kube_config_spec.lua - finding and authenticating to the API server:
-- kubeconfig loading order and merging, contexts, auth kinds, in-cluster
-- service accounts with rotating tokens, --master, and redaction.
local H = require "support.helper"
local core = require "draengine.core"
local kube = core.kube

local function tmpdir()
  local d = os.tmpname(); os.remove(d); os.execute("mkdir -p " .. d); return d
end
local write = H.write

local function kubeconfig(server, user, ctx, extra)
  local cfg = { apiVersion = "v1", kind = "Config", ["current-context"] = ctx or "main",
    clusters = { { name = "c1", cluster = { server = server } } },
    users = { { name = "u1", user = user or { token = "abcdefghijklmnop" } } },
    contexts = { { name = ctx or "main", context = { cluster = "c1", user = "u1", namespace = "team-a" } } } }
  for k, v in pairs(extra or {}) do cfg[k] = v end
  return core.json_encode(cfg)
end

describe("kube config", function()
  local d
  before_each(function() d = tmpdir() end)
  after_each(function() os.execute("rm -rf " .. d) end)

  it("uses --kubeconfig alone, with its current-context", function()
    write(d .. "/a", kubeconfig("https://a.example:6443"))
    local c = kube.config{ kubeconfig = d .. "/a", env_kubeconfig = "", no_in_cluster = true }
    assert.are.equal("https://a.example:6443", c:server())
    assert.are.equal("kubeconfig", c:source())
    assert.are.equal("main", c:context())
    assert.are.equal("team-a", c:namespace())
  end)

  it("reads YAML kubeconfigs as kubectl writes them", function()
    write(d .. "/y", [[
apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod-cluster
  cluster:
    server: https://prod.example:6443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: yaml-token-0123456789
contexts:
- name: prod
  context:
    cluster: prod-cluster
    user: admin
]])
    local c = kube.config{ kubeconfig = d .. "/y" }
    assert.are.equal("https://prod.example:6443", c:server())
    assert.are.equal("default", c:namespace())
    assert.truthy(c:describe():find("insecure-skip-tls-verify=true", 1, true))
    assert.falsy(c:describe():find("yaml-token", 1, true))
  end)

  it("names the file when a kubeconfig is not valid YAML", function()
    write(d .. "/bad", "clusters: [unclosed\n")
    local ok, err = pcall(kube.config, { kubeconfig = d .. "/bad" })
    assert.is_false(ok)
    assert.truthy(err:find(d .. "/bad", 1, true))
  end)

  it("merges the KUBECONFIG list: the first file that sets a value wins", function()
    -- file 1 sets no current-context but defines cluster c1; file 2 sets
    -- current-context and also defines c1 (ignored: file 1 came first).
    write(d .. "/one", core.json_encode{ apiVersion = "v1", kind = "Config",
      clusters = { { name = "c1", cluster = { server = "https://first:1" } } } })
    write(d .. "/two", kubeconfig("https://second:2"))
    local c = kube.config{ env_kubeconfig = d .. "/missing:" .. d .. "/one:" .. d .. "/two", no_in_cluster = true }
    assert.are.equal("https://first:1", c:server())
    assert.are.equal("main", c:context())
    assert.truthy(c:describe():find("files=" .. d .. "/one:" .. d .. "/two", 1, true))
  end)

  it("falls back to ~/.kube/config", function()
    os.execute("mkdir -p " .. d .. "/.kube")
    write(d .. "/.kube/config", kubeconfig("https://home:443"))
    local c = kube.config{ env_kubeconfig = "", home = d, no_in_cluster = true }
    assert.are.equal("https://home:443", c:server())
  end)

  it("takes --context over current-context and names what is missing", function()
    write(d .. "/a", kubeconfig("https://a:1", nil, "main"))
    assert.has_error(function() kube.config{ kubeconfig = d .. "/a", context = "nope" } end,
      d .. '/a: context "nope" is not defined')
    write(d .. "/b", core.json_encode{ contexts = { { name = "x", context = { cluster = "gone", user = "u" } } },
      ["current-context"] = "x" })
    assert.has_error(function() kube.config{ kubeconfig = d .. "/b" } end,
      d .. '/b: context "x": cluster "gone" is not defined')
  end)

  it("resolves relative paths against the kubeconfig's directory and reads token files", function()
    os.execute("mkdir -p " .. d .. "/sub")
    write(d .. "/sub/tok", "  file-token-value-123\n")
    write(d .. "/sub/cfg", kubeconfig("https://a:1", { tokenFile = "tok" }))
    local c = kube.config{ kubeconfig = d .. "/sub/cfg" }
    local desc = c:describe()
    assert.truthy(desc:find("tokenFile=" .. d .. "/sub/tok", 1, true))
    assert.truthy(desc:find("token=<redacted, 20 bytes>", 1, true))
    assert.falsy(desc:find("file-token-value-123", 1, true))
  end)

  it("refuses exec plugins, half a client certificate and bad base64 with a clear error", function()
    write(d .. "/a", kubeconfig("https://a:1", { exec = { command = "aws" } }))
    assert.has_error(function() kube.config{ kubeconfig = d .. "/a" } end)
    local ok, err = pcall(kube.config, { kubeconfig = d .. "/a" })
    assert.is_false(ok)
    assert.truthy(err:find('user "u1": exec credential plugins are not supported', 1, true))
    write(d .. "/b", kubeconfig("https://a:1", { ["client-certificate-data"] = "QUJD" }))
    ok, err = pcall(kube.config, { kubeconfig = d .. "/b" })
    assert.truthy(err:find("client-certificate and client-key must be given together", 1, true))
    write(d .. "/c", kubeconfig("https://a:1", { ["client-key-data"] = "!!!", ["client-certificate-data"] = "QUJD" }))
    ok, err = pcall(kube.config, { kubeconfig = d .. "/c" })
    assert.truthy(err:find("client-key-data: not valid base64", 1, true))
  end)

  it("uses the in-cluster service account when nothing else is configured", function()
    write(d .. "/token", "sa-token-aaaaaaaa")
    write(d .. "/ca.crt", "-----BEGIN CERTIFICATE-----\n")
    write(d .. "/namespace", "draengine-system\n")
    local c = kube.config{ env_kubeconfig = "", home = d .. "/nohome", sa_dir = d,
      env_host = "10.96.0.1", env_port = "443" }
    assert.are.equal("https://10.96.0.1:443", c:server())
    assert.are.equal("in-cluster", c:source())
    assert.are.equal("draengine-system", c:namespace())
    local v6 = kube.config{ env_kubeconfig = "", home = d .. "/nohome", sa_dir = d,
      env_host = "fd00::1", env_port = "443" }
    assert.are.equal("https://[fd00::1]:443", v6:server())
  end)

  it("re-reads a rotated token file and still redacts the old token", function()
    write(d .. "/token", "first-token-aaaaaaaa")
    write(d .. "/ca.crt", "x")
    local c = kube.config{ env_kubeconfig = "", home = d .. "/nohome", sa_dir = d,
      env_host = "10.0.0.1", env_port = "443" }
    write(d .. "/token", "second-token-bbbbbbbbbb")
    assert.are.equal(#"second-token-bbbbbbbbbb", c:reload_token())
    local s = c:redact("saw first-token-aaaaaaaa and second-token-bbbbbbbbbb and Bearer xyz123")
    assert.falsy(s:find("first-token", 1, true))
    assert.falsy(s:find("second-token", 1, true))
    assert.falsy(s:find("xyz123", 1, true))
    assert.truthy(s:find("[REDACTED]", 1, true))
  end)

  it("lets --master replace the server, and works with --master alone", function()
    write(d .. "/a", kubeconfig("https://a:1"))
    assert.are.equal("https://override:9", kube.config{ kubeconfig = d .. "/a", master = "https://override:9" }:server())
    local c = kube.config{ master = "http://127.0.0.1:8080/", env_kubeconfig = "", home = d .. "/none", no_in_cluster = true }
    assert.are.equal("http://127.0.0.1:8080", c:server())
    assert.are.equal("master", c:source())
  end)

  it("says what to do when there is no configuration at all", function()
    local ok, err = pcall(kube.config, { env_kubeconfig = "", home = d .. "/none", no_in_cluster = true })
    assert.is_false(ok)
    assert.truthy(err:find("no configuration: give --kubeconfig or --master", 1, true))
  end)
end)

describe("kube time and backoff helpers", function()
  it("formats MicroTime and parses RFC 3339", function()
    local ns = kube.parse_time("2024-05-06T07:08:09.123456Z")
    assert.are.equal("2024-05-06T07:08:09.123456Z", kube.format_time(ns))
    assert.are.equal(kube.parse_time("2024-05-06T09:08:09+02:00"), kube.parse_time("2024-05-06T07:08:09Z"))
    assert.is_nil(kube.parse_time("yesterday"))
  end)

  it("backs off exponentially with deterministic jitter in [1, 2)", function()
    local a = kube.backoff(800, 30000, 42, 8)
    local b = kube.backoff(800, 30000, 42, 8)
    local c = kube.backoff(800, 30000, 43, 8)
    assert.are.same(a, b)
    assert.are_not.same(a, c)
    local base = 800
    for i = 1, 8 do
      assert.is_true(a[i] >= base and a[i] < 2 * base, "delay " .. i)
      base = math.min(base * 2, 30000)
    end
  end)
end)
