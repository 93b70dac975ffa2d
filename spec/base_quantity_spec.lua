-- base_quantity_spec.lua - Kubernetes resource.Quantity semantics
-- (k8s.io/apimachinery pkg/api/resource): parsing, rounding, canonical
-- printing, exact comparison and arithmetic, and the CEL-facing helpers.
local core = require "draengine.core"
local Q = core.quantity

local FORMAT_ERR = "quantities must match the regular expression "
  .. "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
local SUFFIX_ERR = "unable to parse quantity's suffix"

local function perr(text)
  local ok, err = pcall(Q, text)
  assert.is_false(ok, "expected an error for " .. text)
  return err
end

describe("quantity parsing", function()
  it("prints canonical forms per format", function()
    local cases = {
      { "0", "0", "DecimalSI" }, { "1", "1", "DecimalSI" },
      { "1Ki", "1Ki", "BinarySI" }, { "1024Mi", "1Gi", "BinarySI" },
      { "1536Mi", "1536Mi", "BinarySI" }, { "1.5Gi", "1536Mi", "BinarySI" },
      { "0.5Gi", "512Mi", "BinarySI" }, { "0.5Mi", "512Ki", "BinarySI" },
      { "1000m", "1", "DecimalSI" }, { "1.5", "1500m", "DecimalSI" },
      { "0.5", "500m", "DecimalSI" }, { "100.035k", "100035", "DecimalSI" },
      { "50k", "50k", "DecimalSI" }, { "2000k", "2M", "DecimalSI" },
      { "0.2G", "200M", "DecimalSI" }, { "8.1k", "8100", "DecimalSI" },
      { "1E", "1E", "DecimalSI" }, { "12E", "12E", "DecimalSI" }, { "1000E", "1000E", "DecimalSI" },
      { "1e3", "1e3", "DecimalExponent" }, { "1E6", "1e6", "DecimalExponent" },
      { "1.2e3", "1200", "DecimalExponent" }, { "1.3E+6", "1300e3", "DecimalExponent" },
      { "1E-3", "1e-3", "DecimalExponent" }, { "0.5e-2", "5e-3", "DecimalExponent" },
      { "1e1000", "10e999", "DecimalExponent" },
      { ".001", "1m", "DecimalSI" }, { "1.", "1", "DecimalSI" }, { "1.G", "1G", "DecimalSI" },
      { "-1", "-1", "DecimalSI" }, { "+5", "5", "DecimalSI" }, { "007", "7", "DecimalSI" },
    }
    for _, c in ipairs(cases) do
      local q = Q(c[1])
      assert.are.equal(c[2], tostring(q), c[1])
      assert.are.equal(c[3], q:fmt(), c[1])
    end
  end)

  it("shows BinarySI values that are not whole or below 1Ki as DecimalSI text", function()
    assert.are.equal("1536", tostring(Q("1.5Ki")))       -- whole, but not a multiple of 1Ki
    assert.are.equal("1126400m", tostring(Q("1.1Ki")))   -- 1126.4
    assert.are.equal("512", tostring(Q("0.5Ki")))        -- below 1024
    assert.are.equal("102435840m", tostring(Q("100.035Ki")))
    assert.are.equal("BinarySI", Q("1.1Ki"):fmt())       -- the format itself is kept
    -- a binary value between 0 and 1 changes format when parsed
    assert.are.equal("DecimalSI", Q("0.000000000001Ki"):fmt())
    assert.are.equal("2n", tostring(Q("0.000000000001Ki")))
  end)

  it("rounds precision finer than 1n up, away from zero", function()
    assert.are.equal("1n", tostring(Q("0.1n")))
    assert.are.equal("4n", tostring(Q("3.001n")))
    assert.are.equal("1n", tostring(Q("0.0000000001")))
    assert.are.equal("1n", tostring(Q("0.0000000005")))
    assert.are.equal("124n", tostring(Q("0.00000012345")))
    assert.are.equal("2e-9", tostring(Q("1.1E-9")))
    assert.are.equal("1e-9", tostring(Q("1e-1000")))
    assert.are.equal("-1n", tostring(Q("-0.1n")))
    assert.are.equal("100u", tostring(Q("0.1m")))
    -- 0.1m is exact at nano precision, so it is not a whole milli
    assert.are.equal(1, Q("0.1m"):milli_value())
    assert.is_nil(Q("0.1m"):milli_exact())
    assert.are.equal(100, Q("0.1"):milli_exact())
  end)

  it("handles negative values", function()
    assert.are.equal("-1536Mi", tostring(Q("-1.5Gi")))
    assert.are.equal("-512", tostring(Q("-0.5Ki")))
    assert.are.equal("-1Ki", tostring(Q("-1Ki")))
    assert.are.equal("-1024", tostring(Q("-1024")))
    assert.are.equal("-1500m", tostring(Q("-1.5")))
    assert.are.equal(-1, Q("-3m"):sign())
    assert.are.equal(0, Q("-0"):sign())
    assert.are.equal("0", tostring(Q("-0")))
    -- Value() rounds away from zero (apimachinery's int64 form)
    assert.are.equal(-2, Q("-1.5"):value())
    assert.are.equal(2, Q("1.5"):value())
    assert.are.equal(-1500, Q("-1.5"):milli_value())
  end)

  it("caps BinarySI values at 2^63-1 like apimachinery, and keeps huge decimal values exact", function()
    assert.are.equal("9223372036854775807", tostring(Q("9Ei")))
    assert.are.equal("9223372036854775807", tostring(Q("9223372036854775807Ki")))
    assert.are.equal("-9223372036854775807", tostring(Q("-9Ei")))
    local big = Q("9999999999999999999999999999999999999G")
    assert.are.equal("9999999999999999999999999999999999999G", tostring(big))
    assert.is_false(big:is_integer())
    assert.are.equal(math.maxinteger, big:value())      -- saturated
    assert.is_true(big > Q("1E"))
    -- 1e37 + 1 and 1e37 + 2 stay exact and ordered
    local x = Q("9999999999999999999999999999999999999")
    assert.are.equal(-1, x:add(Q("1")):cmp(x:add(Q("2"))))
    assert.are.equal("10000000000000000000E", tostring(x:add(1)))
  end)

  it("keeps values near int64 exact", function()
    local m = Q("9223372036854775807")
    assert.are.equal(math.maxinteger, m:value())
    assert.are.equal(math.maxinteger, m:int64_exact())
    -- 19 digits: apimachinery holds it as a big decimal, so not isInteger()
    assert.is_false(m:is_integer())
    assert.are.equal(922337203685477580, Q("922337203685477580"):as_integer())
    assert.are.equal("9223372036854775808", tostring(m:add(1)))
    assert.is_false(m:add(1):is_integer())
    assert.are.equal(math.maxinteger, m:add(1):value())  -- saturated, not wrapped
    assert.are.equal(math.mininteger, Q("-9223372036854775808"):value())
    assert.are.equal("18446744073709551614", tostring(Q("8Ei"):add("8Ei")))
  end)

  it("refuses invalid texts with apimachinery's messages", function()
    for _, s in ipairs({ "10Mo", "Three", "", " 1", "1 ", "1.1.M", "1+1.0M", "aoeu", "1Ki ", "0.1am" }) do
      assert.are.equal(FORMAT_ERR, perr(s), s)
    end
    for _, s in ipairs({ "10Mm", "200K", "0.1mi", ".5i", "1i", "-3.01e-", "1EE", "1e", "1Km", "--1" }) do
      assert.are.equal(SUFFIX_ERR, perr(s), s)
    end
    assert.are.equal("unable to parse numeric part of quantity", perr(".e-20"))
    assert.truthy(perr("99999999999999999999999999999999999999999"):find("out of range", 1, true))
    assert.truthy(perr("1e4294967296"):find("exponent is out of range", 1, true))
  end)

  it("accepts digit-less texts as zero, as apimachinery's scanner does", function()
    -- ParseQuantity("Mi") takes the empty numerator as "0"
    for _, s in ipairs({ "Mi", "k", "+", "-", ".", "e3" }) do
      local q = Q(s)
      assert.is_true(q:sign() == 0, s)
      assert.are.equal("0", tostring(q))
    end
    assert.are.equal("BinarySI", Q("Mi"):fmt())
  end)

  it("takes numbers the way a JSON or YAML number field arrives", function()
    assert.are.equal("8", tostring(Q(8)))
    assert.are.equal("1500m", tostring(Q(1.5)))
    assert.are.equal("100m", tostring(Q(0.1)))
    -- floats arrive as Go's encoding/json writes them: `value: 1e3` is "1000"
    assert.are.equal("1k", tostring(Q(1e3)))
    assert.are.equal("DecimalSI", Q(1e3):fmt())
    assert.are.equal("1e21", tostring(Q(1e21)))
    assert.are.equal("100e-9", tostring(Q(1e-7)))
    local doc = core.yaml_decode("value: 1e3\nother: 2.5\n")[1]
    assert.are.equal("1k", tostring(Q(doc.value)))
    assert.are.equal("2500m", tostring(Q(doc.other)))
    assert.is_true(Q(8):is_integer())
  end)
end)

describe("quantity comparison", function()
  it("is exact across formats", function()
    assert.is_true(Q("200M") == Q("0.2G"))
    assert.is_true(Q("2M") == Q("0.002G") and Q("2000k") == Q("2M"))
    assert.is_false(Q("200M") == Q("0.3G"))
    assert.is_true(Q("50M") < Q("50Mi"))
    assert.are.equal(-1, Q("50M"):cmp(Q("50Mi")))
    assert.are.equal(1, Q("50Mi"):cmp("50M"))
    assert.are.equal(0, Q("1Ki"):cmp("1024"))
    assert.is_true(Q("1024Mi") == Q("1Gi"))
    assert.is_true(Q("1000m") == Q("1"))
    assert.is_true(Q("1e3") == Q("1k"))
    assert.is_true(Q("-1") < Q("0"))
    assert.is_true(Q("-2") < Q("-1"))
    assert.is_true(Q("1n") > Q("0"))
    assert.is_true(Q("1n") <= Q("0.1n"))                -- both round to 1n
    assert.is_true(Q("9999999999999999999999999999999999999G") > Q("9223372036854775807"))
    assert.is_true(Q("-9999999999999999999999999999999999999G") < Q("-9Ei"))
  end)
end)

describe("quantity arithmetic", function()
  it("adds and subtracts exactly, keeping the receiver's format", function()
    assert.is_true(Q("50k"):add(Q("20")) == Q("50.02k"))
    assert.is_false(Q("50k"):add(20) < Q("50020"))
    assert.is_true(Q("50k"):sub(Q("20")) == Q("49.98k"))
    assert.is_true(Q("50k"):sub(20) == Q("49980"))
    assert.are.equal(-49980, Q("50k"):add(20):sub(Q("100k")):as_integer())
    assert.are.equal(20, Q("50k"):add(20):sub(Q("100k")):sub(-50000):as_integer())
    local r = Q("1Gi"):add(Q("500M"))
    assert.are.equal("BinarySI", r:fmt())
    assert.are.equal("1573741824", tostring(r))
    local d = Q("500M"):add(Q("1Gi"))
    assert.are.equal("DecimalSI", d:fmt())
    assert.are.equal("1573741824", tostring(d))
    assert.are.equal("1536Mi", tostring(Q("1Gi"):add("512Mi")))
    assert.are.equal("500m", tostring(Q("1"):sub("0.5")))
    assert.are.equal("-1Gi", tostring(Q("1Gi"):sub("2Gi")))
    assert.are.equal("1n", tostring(Q("1"):sub("999999999n")))
  end)

  it("takes the other operand's format when the receiver is zero", function()
    assert.are.equal("BinarySI", Q("0"):add(Q("1Gi")):fmt())
    assert.are.equal("1Gi", tostring(Q("0"):add(Q("1Gi"))))
    assert.are.equal("DecimalExponent", Q("0"):add(5):fmt())
    assert.are.equal("-1Gi", tostring(Q("0"):sub(Q("1Gi"))))
  end)

  it("does not change its operands", function()
    local a = Q("1Gi")
    a:add("1Gi")
    assert.are.equal("1Gi", tostring(a))
  end)

  it("refuses results beyond 38 significant digits", function()
    local ok, err = pcall(function() return Q("1e40"):add(Q("1n")) end)
    assert.is_false(ok)
    assert.truthy(err:find("out of range", 1, true))
    -- but a sum that fits at a larger exponent is fine
    assert.are.equal("10000000000000000000000000000000000000100", tostring(Q("1e40"):add(Q("100"))))
  end)
end)

describe("quantity CEL helpers", function()
  it("isInteger / asInteger follow apimachinery's AsInt64", function()
    assert.is_true(Q("50"):is_integer())
    assert.is_true(Q("50k"):is_integer())
    assert.is_true(Q("1Ti"):is_integer())
    assert.is_true(Q("1e3"):is_integer())
    -- held with a negative scale or as a big decimal upstream: not integers
    assert.is_false(Q("1000m"):is_integer())
    assert.is_false(Q("1.0"):is_integer())
    assert.is_false(Q("1.5Ki"):is_integer())
    assert.is_false(Q("1Ei"):is_integer())
    assert.is_false(Q("9999999999999999999999999999999999999G"):is_integer())
    local ok, err = pcall(function() return Q("9999999999999999999999999999999999999G"):as_integer() end)
    assert.is_false(ok)
    assert.are.equal("cannot convert value to integer", err)
    assert.are.equal(50000, Q("50k"):as_integer())
    -- the value-based helper the allocator uses says yes for all of them
    assert.are.equal(1, Q("1000m"):int64_exact())
    assert.are.equal(1536, Q("1.5Ki"):int64_exact())
    assert.is_nil(Q("1.5"):int64_exact())
  end)

  it("asApproximateFloat, sign", function()
    assert.are.equal(50703.0, Q("50.703k"):approx())
    assert.are.equal(0.5, Q("500m"):approx())
    assert.are.equal(1073741824.0, Q("1Gi"):approx())
    assert.are.equal(-1, Q("-1Ki"):sign())
    assert.are.equal(1, Q("1n"):sign())
    assert.are.equal(0, Q("0Gi"):sign())
  end)

  it("value and milli_value round up", function()
    assert.are.equal(1, Q("1n"):value())
    assert.are.equal(1, Q("1n"):milli_value())
    assert.are.equal(1500, Q("1.5"):milli_value())
    assert.are.equal(85899345920, Q("80Gi"):value())
    assert.are.equal(2, Q("1001m"):value())
    assert.is_true(Q("1.5"):milli_exact() == 1500)
  end)
end)
