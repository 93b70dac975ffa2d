-- support_tmp_spec.lua - spec/support/tmp.lua: under `make test` the specs'
-- os.tmpname files live in the run's own directory, which the Makefile
-- removes, instead of piling up in /tmp.
describe("spec temporary files", function()
  local dir = os.getenv("DRAENGINE_SPEC_TMP")

  it("come from the run's directory, fresh and empty", function()
    if not dir or dir == "" then
      pending("busted was started without DRAENGINE_SPEC_TMP (not through make test)")
      return
    end
    local a, b = os.tmpname(), os.tmpname()
    assert.are_not.equal(a, b)
    for _, p in ipairs({ a, b }) do
      assert.are.equal(dir .. "/", p:sub(1, #dir + 1))
      local f = assert(io.open(p, "rb"))
      assert.are.equal("", f:read("a"))
      f:close()
      os.remove(p)
    end
  end)
end)
