-- alloc_revision_spec.lua - `allocate --policies` says which policy revision
-- decided (issue #5: the revision appears in logs, metrics and decisions):
-- the annotation draengine.dev/policy-revision on every allocated claim of
-- -o json|yaml, a header line over -o table; without --policies the output
-- carries neither.
local H = require "support.helper"
local W = require "support.watch"
local core = require "draengine.core"

local ANN = "draengine.dev/policy-revision"

local function revision(dir)
  local rc, out = H.run({ "policy", "list", dir })
  assert.are.equal(0, rc)
  return assert(out:match("^revision (%x+)\n"))
end

describe("the policy revision in allocate's decisions", function()
  local dir, pol
  before_each(function()
    dir = W.tmpdir()
    W.write(dir .. "/nodes.yaml", W.node("node-a") .. "---\n" .. W.node("node-b"))
    W.write(dir .. "/slices.yaml", W.slice("node-a", 1) .. "---\n" .. W.slice("node-b", 1))
    W.write(dir .. "/class.yaml", W.class)
    -- p1 keeps an annotation of its own
    W.write(dir .. "/p1.yaml", W.pod("p1"):gsub("metadata: {name: p1%-gpu, namespace: default}",
      "metadata: {name: p1-gpu, namespace: default, annotations: {team: ml}}"))
    W.write(dir .. "/p2.yaml", W.pod("p2"))
    pol = W.tmpdir()
    for _, f in ipairs({ "binpack.lua", "numa-bridge.lua" }) do
      W.write(pol .. "/" .. f, H.read_file(H.root .. "/policies/" .. f)) -- no cp: it would run under ASan's preload
    end
  end)
  after_each(function()
    W.rmdir(dir)
    W.rmdir(pol)
  end)

  it("annotates every allocated claim with the active revision (-o json and -o yaml)", function()
    local rev = revision(pol)
    assert.are.equal(64, #rev)
    local rc, out, err = H.run({ "allocate", "-f", dir, "--policies", pol, "-o", "json" })
    assert.are.equal(0, rc, err)
    local doc = core.json_decode(out)
    local claims = {}
    for _, item in ipairs(doc.items) do
      if item.kind == "ResourceClaim" then claims[#claims + 1] = item end
    end
    assert.are.equal(4, #doc.items, "two claims and the two pods they were allocated for")
    assert.are.equal(2, #claims)
    for _, item in ipairs(claims) do
      assert.are.equal(rev, item.metadata.annotations[ANN])
      assert.truthy(item.status.allocation)
    end
    assert.are.equal("ml", claims[1].metadata.annotations.team)
    rc, out = H.run({ "allocate", "-f", dir, "--policies", pol, "-o", "yaml" })
    assert.are.equal(0, rc)
    assert.are.equal(2, select(2, out:gsub("      " .. ANN:gsub("%p", "%%%0") .. ": " .. rev .. "\n", "")))
  end)

  it("annotates with --node too, and names the revision over the table", function()
    local rev = revision(pol)
    local rc, out = H.run({ "allocate", "--node", "node-a", "-f", dir .. "/slices.yaml", "-f", dir .. "/class.yaml",
                            "-f", dir .. "/nodes.yaml", "-f", dir .. "/p2.yaml", "--policies", pol, "-o", "json" })
    assert.are.equal(0, rc)
    assert.are.equal(rev, core.json_decode(out).items[1].metadata.annotations[ANN])
    local rc2, table = H.run({ "allocate", "-f", dir, "--policies", pol, "-o", "table" })
    assert.are.equal(0, rc2)
    local first, rest = table:match("^([^\n]*)\n(.*)$")
    assert.are.equal("policy revision " .. rev:sub(1, 12) .. " (2 policies in " .. pol .. ")", first)
    -- the rest is the table without policies (these policies change nothing here)
    local _, plain = H.run({ "allocate", "-f", dir, "-o", "table" })
    assert.are.equal(plain, rest)
  end)

  it("gives an empty policy directory a revision of its own", function()
    local empty = W.tmpdir()
    local rc, out = H.run({ "allocate", "-f", dir, "--policies", empty, "-o", "json" })
    assert.are.equal(0, rc)
    -- SHA-256 of nothing
    assert.are.equal("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      core.json_decode(out).items[1].metadata.annotations[ANN])
    W.rmdir(empty)
  end)

  it("leaves the output without --policies as it was: no annotation, no header", function()
    for _, fmt in ipairs({ "json", "yaml", "table" }) do
      local rc, out = H.run({ "allocate", "-f", dir, "-o", fmt })
      assert.are.equal(0, rc)
      assert.falsy(out:find("draengine.dev", 1, true), out)
      assert.falsy(out:find("policy revision", 1, true), out)
    end
  end)
end)
