-- kube_warnings_spec.lua - what serve does with the API server's field
-- validation: --field-validation goes with every write, and a Warning header
-- (an unknown field the server dropped, a deprecated API) is logged and
-- counted, never silently ignored. `make e2e` runs serve with Strict against
-- a real kube-apiserver and fails on any such warning.
local K = require "support.kubeapi"
local S = require "support.serve"

describe("serve and the server's field validation", function()
  local srv, procs
  before_each(function() srv = K.start{}; procs = {} end)
  after_each(function()
    assert.are.same({}, S.stop_all(procs))
    srv:stop()
  end)

  local function run(extra)
    srv:load(S.cluster(2, 4))
    local pods = S.workload(6)
    srv:load(pods)
    local args = { "--leader-elect=false", "--pod-initial-backoff=100ms", "--pod-max-backoff=1s" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    local p = S.start(srv, args)
    procs[#procs + 1] = p
    K.wait_for(function()
      local n = 0
      for _, x in ipairs(srv:get("/api/v1/pods").items) do if x.spec.nodeName then n = n + 1 end end
      return n == #pods
    end, 30)
    return p
  end

  it("sends fieldValidation=Strict on every write when asked, and none by default", function()
    run{ "--field-validation", "Strict" }
    local n = 0
    for _, w in ipairs(srv:writes()) do
      n = n + 1
      assert.truthy(w.query:find("fieldValidation=Strict", 1, true), w.method .. " " .. w.path .. "?" .. w.query)
    end
    assert.is_true(n >= 6)
    srv:stop(); srv = K.start{}
    assert.are.same({}, S.stop_all(procs)); procs = {}
    run()
    for _, w in ipairs(srv:writes()) do assert.is_nil(w.query:find("fieldValidation", 1, true)) end
  end)

  it("logs and counts every Warning header", function()
    srv:faults{ warnings = 3 }
    local p = run()
    local log = p:stderr()
    local n = 0
    for line in log:gmatch("[^\n]+") do
      if line:find("server warning on ", 1, true) and line:find('unknown field \\"spec.injected\\" (injected)', 1, true) then
        n = n + 1
      end
    end
    assert.are.equal(3, n, log)
    local _, body = p:http("/metrics")
    assert.truthy(body:find("\ndraengine_kube_api_warnings_total 3\n", 1, true))
  end)

  it("refuses an unknown --field-validation value", function()
    local H = require "support.helper"
    local rc, _, err = H.run{ "serve", "--field-validation", "strict", "--kubeconfig", "/dev/null" }
    assert.are.equal(2, rc)
    assert.truthy(err:find("--field-validation", 1, true))
  end)
end)
