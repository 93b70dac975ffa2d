-- sched_explain_spec.lua - serve's FailedScheduling Events carry the same
-- explanations as allocate: a claim that fails on a matchAttribute or
-- distinctAttribute constraint is explained as that constraint.
local K = require "support.kubeapi"
local S = require "support.serve"

describe("draengine serve explanations", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 13 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  it("name the constraint no devices satisfy", function()
    local s = K.slice("node-001", "gpu.example.com", 2)
    s.spec.devices[1].attributes.model = { string = "A100" }
    s.spec.devices[2].attributes.model = { string = "H100" }
    local c = K.claim("default", "same-model", "gpu", 1)
    c.spec.devices.requests[2] = { name = "second", exactly = { deviceClassName = "gpu" } }
    c.spec.devices.constraints = { { matchAttribute = "gpu.example.com/model" } }
    srv:load{ K.class("gpu", "gpu.example.com"), K.node("node-001"), s, c,
      K.pod("default", "pair", { claims = { { name = "gpu", resourceClaimName = "same-model" } } }) }
    local p = S.start(srv, { "--leader-elect=false" })
    procs[#procs + 1] = p
    local ev = K.wait_for(function()
      for _, e in ipairs(srv:state().objects.events or {}) do
        if e.reason == "FailedScheduling" then return e end
      end
    end, 20)
    assert.is_truthy(ev, p:stderr())
    assert.matches("no combination satisfies matchAttribute gpu.example.com/model (claim same-model)", ev.note, 1, true)
    assert.is_nil(ev.note:find("compete for the same devices", 1, true))
  end)
end)
