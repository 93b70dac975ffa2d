-- Specs run inside the policy sandbox: `draengine policy test examples/policy-pack`.
describe("gold-quota", function()
  local quota = dra.test.policy("gold-quota.lua")

  local function claim(namespace, class)
    return { namespace = namespace, name = "c", requests = { { name = "gpu", class = class, count = 1 } } }
  end

  it("admits gold GPUs in production", function()
    assert.is_true(quota:admit(claim("prod", "gold-gpu")))
    assert.is_true(quota:admit(claim("ml-prod", "gold-gpu")))
  end)

  it("refuses gold GPUs elsewhere, with a reason", function()
    local ok, why = quota:admit(claim("research", "gold-gpu"))
    assert.is_false(ok)
    assert.are.equal("policy gold-quota: class gold-gpu is reserved for the namespaces prod and ml-prod", why)
  end)

  it("does not care about other classes", function()
    assert.is_true(quota:admit(claim("research", "gpu.nvidia.com")))
  end)
end)
