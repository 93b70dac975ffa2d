-- policy_load_spec.lua - revisions, metadata validation, packs and domain
-- ownership, all with file:line errors.
local core = require "draengine.core"
local P = require "fixtures.policy.helper"

describe("policy revisions", function()
  it("are the SHA-256 of the content (FIPS 180-4 vectors)", function()
    assert.are.equal("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", core.policy_sha256(""))
    assert.are.equal("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", core.policy_sha256("abc"))
    assert.are.equal("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
      core.policy_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
    assert.are.equal("cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
      core.policy_sha256("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"))
    assert.are.equal("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
      core.policy_sha256(string.rep("a", 1000000)))
  end)

  it("of a policy is the hash of its file, and of a set covers every policy", function()
    local text = P.policy("one", { "one.example.com" }, "return nil")
    local d = P.dir({ ["one.lua"] = text })
    local s = core.policy_load(d)
    assert.are.equal(core.policy_sha256(text), s:info(1).revision)
    local r1 = s:revision()
    s:close()
    P.write(d, { ["one.lua"] = text .. "\n-- edited\n" })
    local s2 = core.policy_load(d)
    assert.are_not.equal(r1, s2:revision())
    s2:close()
    P.rm(d)
  end)
end)

describe("loading a policy directory", function()
  local dirs = {}
  local function mk(files) local d = P.dir(files); dirs[#dirs + 1] = d; return d end
  teardown(function() for _, d in ipairs(dirs) do P.rm(d) end end)

  local function load_error(files)
    local d = mk(files)
    local ok, err = pcall(core.policy_load, d)
    assert.is_false(ok, "expected the load to fail")
    return err, d
  end

  it("loads every *.lua policy and every pack, skipping specs and dot entries", function()
    local d = mk({
      ["a.lua"] = P.policy("a", { "a.example.com" }, "return nil"),
      ["a_spec.lua"] = "error('specs are not policies')",
      [".hidden.lua"] = "error('dot files are skipped')",
      ["vendor/pack.lua"] = [[return { name = "vendor", version = "0.1.0", policies = { "b.lua" },
                                      domains = { "vendor.example.com" } }]],
      ["vendor/b.lua"] = P.policy("b", { "vendor.example.com" }, "return nil"),
      ["vendor/spec/x_spec.lua"] = "error('no')",
      ["notapack/c.lua"] = "error('folders without pack.lua are ignored')",
    })
    local s = core.policy_load(d)
    assert.are.equal(2, s:count())
    assert.are.equal("a", s:info(1).name)
    assert.are.equal("b", s:info(2).name)
    assert.are.equal("vendor", s:info(2).pack)
    s:close()
  end)

  it("takes a directory that is itself a pack", function()
    local d = mk({
      ["pack.lua"] = [[return { name = "solo", version = "1.0.0", policies = { "p.lua" }, domains = { "solo.example.com" } }]],
      ["p.lua"] = P.policy("p", { "solo.example.com" }, "return nil"),
    })
    local s = core.policy_load(d)
    assert.are.equal(1, s:count())
    s:close()
  end)

  it("accepts an empty directory (no policies: Kubernetes-exact behaviour)", function()
    local s = core.policy_load(mk({}))
    assert.are.equal(0, s:count())
    s:close()
  end)

  it("reports syntax errors with file:line", function()
    local err, d = load_error({ ["bad.lua"] = "return {\n  name = 'x',\n  version = \n}\n" })
    assert.truthy(err:find(d .. "/bad.lua:4:", 1, true), err)
  end)

  it("reports runtime errors of the top level with file:line", function()
    local err, d = load_error({ ["boom.lua"] = "local x = 1\nerror('no config')\n" })
    assert.truthy(err:find(d .. "/boom.lua:2: no config", 1, true), err)
  end)

  it("names the file when the top level's error carries no position", function()
    -- a table as the error object, a yield, a binary chunk: Lua's message has no "file:line:"
    for _, text in ipairs({ "error({})\n", "coroutine.yield()\n", "\27Lua" }) do
      local err, d = load_error({ ["bad.lua"] = text })
      assert.truthy(err:find(d .. "/bad.lua: ", 1, true), err)
    end
  end)

  it("bounds the top level with the load budget", function()
    -- the wall-clock deadline far away, so that a loaded machine (ASan, CI
    -- building Kubernetes beside it) cannot make it fire first
    local d = mk({ ["loop.lua"] = "while true do end" })
    local ok, err = pcall(core.policy_load, d, { load_deadline_ms = 600000 })
    assert.is_false(ok, "expected the load to fail")
    assert.truthy(err:find("instruction budget exceeded", 1, true), err)
  end)

  it("requires a returned table", function()
    local err, d = load_error({ ["n.lua"] = "local t = {}\nreturn 42\n" })
    assert.truthy(err:find(d .. "/n.lua:2: a policy must return a table", 1, true), err)
  end)

  it("checks every metadata field, pointing at its line", function()
    local cases = {
      { 'name = "Bad_Name"', "name \"Bad_Name\" must be" },
      { 'version = "1.0"', "is not a semantic version" },
      { "api = 2", "'api' must be 1" },
      { 'derieve = function() end', "unknown field 'derieve'" },
      { 'failure = "sometimes"', "'failure' must be \"open\" or \"closed\"" },
      { "weight = -1", "'weight' must be a number" },
      { 'domains = { "Not A Domain" }', "is not a domain" },
      { 'domains = { "resource.kubernetes.io" }', "can only be owned attribute by attribute" },
      { 'domains = { "x.example.com", "x.example.com" }', "lists \"x.example.com\" twice" },
      { 'drivers = { "x.example.com/foo" }', "is not a DNS subdomain" },
      { "score = 3", "hook 'score' must be a function" },
    }
    for _, c in ipairs(cases) do
      -- the field under test on line 3, overriding a valid default
      local fields = { name = '"ok"', version = '"1.0.0"', api = "1", domains = '{ "x.example.com" }' }
      local key = c[1]:match("^(%w+)")
      fields[key] = nil
      local lines = { "-- case", "return {", "  " .. c[1] .. "," }
      for _, k in ipairs({ "name", "version", "api", "domains" }) do
        if fields[k] then lines[#lines + 1] = "  " .. k .. " = " .. fields[k] .. "," end
      end
      lines[#lines + 1] = "  derive = function() end,"
      lines[#lines + 1] = "}"
      local err, d = load_error({ ["m.lua"] = table.concat(lines, "\n") .. "\n" })
      assert.truthy(err:find(d .. "/m.lua:3:", 1, true), c[1] .. " -> " .. err)
      assert.truthy(err:find(c[2], 1, true), c[1] .. " -> " .. err)
    end
  end)

  it("requires at least one hook and domains for derive", function()
    local err = load_error({ ["h.lua"] = 'return { name = "h", version = "1.0.0", api = 1, domains = {} }' })
    assert.truthy(err:find("defines no hook", 1, true), err)
    err = load_error({ ["d.lua"] = 'return { name = "d", version = "1.0.0", api = 1, domains = {}, derive = function() end }' })
    assert.truthy(err:find("has a derive hook but owns no domain", 1, true), err)
    err = load_error({ ["e.lua"] = 'return { name = "e", version = "1.0.0", api = 1, score = function() return 0 end }' })
    assert.truthy(err:find("'domains' is required", 1, true), err)
  end)

  it("refuses two policies writing the same attribute, naming both files", function()
    local err, d = load_error({
      ["a.lua"] = P.policy("a", { "tier.example.com" }, "return nil"),
      ["b.lua"] = P.policy("b", { "tier.example.com/tier" }, "return nil"),
    })
    assert.truthy(err:find(d .. "/b.lua", 1, true), err)
    assert.truthy(err:find("overlaps \"tier.example.com\" owned by policy a", 1, true), err)
  end)

  it("lets two policies own different attributes of the standard domain", function()
    local d = mk({
      ["numa.lua"] = P.policy("numa", { "resource.kubernetes.io/numaNode" }, "return nil"),
      ["root.lua"] = P.policy("root", { "resource.kubernetes.io/pcieRoot" }, "return nil"),
    })
    local s = core.policy_load(d)
    assert.are.equal(2, s:count())
    s:close()
  end)

  it("refuses duplicate policy names", function()
    local err = load_error({
      ["a.lua"] = P.policy("same", { "a.example.com" }, "return nil"),
      ["b.lua"] = P.policy("same", { "b.example.com" }, "return nil"),
    })
    assert.truthy(err:find("policy name same is already used", 1, true), err)
  end)

  it("keeps pack policies inside the pack's domains", function()
    local err = load_error({
      ["v/pack.lua"] = [[return { name = "v", version = "1.0.0", policies = { "p.lua" }, domains = { "v.example.com" } }]],
      ["v/p.lua"] = P.policy("p", { "other.example.com" }, "return nil"),
    })
    assert.truthy(err:find("owns \"other.example.com\", outside the domains of its pack v", 1, true), err)
  end)

  it("refuses overlapping packs and loose policies inside a pack's domains", function()
    local err = load_error({
      ["v/pack.lua"] = [[return { name = "v", version = "1.0.0", policies = { "p.lua" }, domains = { "v.example.com" } }]],
      ["v/p.lua"] = P.policy("p", { "v.example.com" }, "return nil"),
      ["w/pack.lua"] = [[return { name = "w", version = "1.0.0", policies = { "q.lua" }, domains = { "v.example.com/x" } }]],
      ["w/q.lua"] = P.policy("q", { "v.example.com/x" }, "return nil"),
    })
    assert.truthy(err:find("overlaps", 1, true), err)
    err = load_error({
      ["v/pack.lua"] = [[return { name = "v", version = "1.0.0", policies = { "p.lua" }, domains = { "v.example.com" } }]],
      ["v/p.lua"] = P.policy("p", { "v.example.com/a" }, "return nil"),
      ["loose.lua"] = P.policy("loose", { "v.example.com/b" }, "return nil"),
    })
    assert.truthy(err:find("inside the domains of pack v", 1, true), err)
  end)

  it("checks pack manifests", function()
    local err, d = load_error({ ["v/pack.lua"] = 'return {\n  name = "v",\n  version = "1.0.0",\n  policies = { "../x.lua" },\n  domains = {} }' })
    assert.truthy(err:find(d .. "/v/pack.lua:4:", 1, true), err)
    assert.truthy(err:find("must name a .lua file in the pack folder", 1, true), err)
  end)
end)
