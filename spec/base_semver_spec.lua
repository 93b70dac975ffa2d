-- base_semver_spec.lua - semantic versions as blang/semver v4 parses them,
-- Kubernetes' normalising semver(s, true), and semver 2.0.0 precedence.
local core = require "draengine.core"
local V = core.semver

local function perr(text, norm)
  local ok, err = pcall(V, text, norm)
  assert.is_false(ok, "expected an error for " .. text)
  return err
end

describe("semver parsing", function()
  it("reads the parts of a full version", function()
    local v = V("1.2.3-rc.1+build.5")
    assert.are.equal(1, v.major)
    assert.are.equal(2, v.minor)
    assert.are.equal(3, v.patch)
    assert.are.equal("rc.1", v.prerelease)
    assert.are.equal("build.5", v.build)
    assert.are.equal("1.2.3-rc.1+build.5", tostring(v))
    local plain = V("0.0.1")
    assert.is_nil(plain.prerelease)
    assert.is_nil(plain.build)
    -- build split happens at the first '+', prerelease at the first '-' before it
    local w = V("1.0.0-a-b+c-d")
    assert.are.equal("a-b", w.prerelease)
    assert.are.equal("c-d", w.build)
  end)

  it("is strict, with blang's messages", function()
    local cases = {
      { "", "Version string empty" },
      { "v1.0", "No Major.Minor.Patch elements found" },
      { "1.0", "No Major.Minor.Patch elements found" },
      { "1", "No Major.Minor.Patch elements found" },
      { "v1.0.0", 'Invalid character(s) found in major number "v1"' },
      { "01.2.3", 'Major number must not contain leading zeroes "01"' },
      { "1.02.3", 'Minor number must not contain leading zeroes "02"' },
      { "1.2.03", 'Patch number must not contain leading zeroes "03"' },
      { "1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"' },
      { "1.2.3-", "Prerelease is empty" },
      { "1.2.3-a..b", "Prerelease is empty" },
      { "1.2.3+", "Build meta data is empty" },
      { "1.2.3+a..b", "Build meta data is empty" },
      { "1.2.3-a_b", 'Invalid character(s) found in prerelease "a_b"' },
      { "1.2.3+a/b", 'Invalid character(s) found in build meta data "a/b"' },
      { "1.2-rc.3", 'Invalid character(s) found in minor number "2-rc"' },
      { " 1.2.3", 'Invalid character(s) found in major number " 1"' },
      { "1.2.3 ", 'Invalid character(s) found in patch number "3 "' },
      { "1.2.3\n", 'Invalid character(s) found in patch number "3\\n"' },
      { ".1.2", 'strconv.ParseUint: parsing "": invalid syntax' },
      { "1..2", 'strconv.ParseUint: parsing "": invalid syntax' },
      { "18446744073709551616.0.0", 'strconv.ParseUint: parsing "18446744073709551616": value out of range' },
      { "1.2.3-18446744073709551616", 'strconv.ParseUint: parsing "18446744073709551616": value out of range' },
    }
    for _, c in ipairs(cases) do
      assert.are.equal(c[2], perr(c[1]), c[1])
    end
    -- the largest numbers still fit
    assert.are.equal("18446744073709551615.0.0-0", tostring(V("18446744073709551615.0.0-0")))
  end)

  it("normalises like Kubernetes' semver(s, true)", function()
    local cases = {
      { "v1.2.3", "1.2.3" }, { "v01.01", "1.1.0" }, { "1", "1.0.0" }, { "1.2", "1.2.0" },
      { "00.00.00", "0.0.0" }, { "1.2.007-rc.1", "1.2.7-rc.1" }, { "1.0.0+b", "1.0.0+b" },
      { "v0", "0.0.0" },
    }
    for _, c in ipairs(cases) do
      assert.are.equal(c[2], tostring(V(c[1], true)), c[1])
    end
    assert.is_true(V("v01.01", true) == V("1.1.0"))
    assert.are.equal("short version cannot contain PreRelease/Build meta data", perr("1.2-rc", true))
    assert.are.equal("short version cannot contain PreRelease/Build meta data", perr("1+b", true))
    -- only the number parts lose leading zeros, never prerelease identifiers
    assert.are.equal('Numeric PreRelease version must not contain leading zeroes "01"',
      perr("1.2.3-01", true))
    -- white space is not trimmed
    assert.are.equal('Invalid character(s) found in major number "0 1"', perr(" 1.2.3", true))
    assert.are.equal('strconv.ParseUint: parsing "": invalid syntax', perr("", true))
  end)
end)

describe("semver precedence", function()
  it("orders the semver.org example chain", function()
    local chain = { "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
      "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0" }
    for i = 1, #chain do
      for j = 1, #chain do
        local want = i < j and -1 or (i > j and 1 or 0)
        assert.are.equal(want, V(chain[i]):cmp(V(chain[j])), chain[i] .. " vs " .. chain[j])
      end
    end
  end)

  it("compares numbers numerically and ignores build metadata", function()
    assert.is_true(V("1.10.0") > V("1.9.0"))
    assert.is_true(V("10.0.0") > V("9.99.99"))
    assert.is_true(V("1.0.0-2") < V("1.0.0-10"))
    assert.is_true(V("1.0.0-10") < V("1.0.0-a"))         -- numbers sort below text
    assert.is_true(V("1.0.0-B") < V("1.0.0-a"))          -- byte order
    assert.is_true(V("1.0.0-a.1") > V("1.0.0-a"))        -- more identifiers win a tie
    assert.is_true(V("1.0.0+a") == V("1.0.0+b"))
    assert.are.equal(0, V("1.0.0+a"):cmp("1.0.0"))
    assert.is_true(V("0.0.1") <= V("0.0.1"))
    assert.is_true(V("1.0.0-rc") < V("1.0.0"))
  end)
end)
