-- tmp.lua - busted helper (Makefile: --helper): the specs' temporary files go
-- to one directory per test run, which `make test` removes afterwards.
--
-- Lua's os.tmpname creates /tmp/lua_XXXXXX and never removes it; the specs
-- call it hundreds of times per run (often adding a suffix, so even the
-- files they delete leave the empty original behind).  With
-- DRAENGINE_SPEC_TMP set, os.tmpname hands out fresh names in that
-- directory instead, created empty as Lua's own are.
local dir = os.getenv("DRAENGINE_SPEC_TMP")
if dir and dir ~= "" then
  local n = 0
  os.tmpname = function()
    n = n + 1
    local p = string.format("%s/lua_%06d", dir, n)
    local f = assert(io.open(p, "wb"))
    f:close()
    return p
  end
end
