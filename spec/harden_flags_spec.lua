-- harden_flags_spec.lua - number, real, duration and boolean flag values on
-- every command go through one parser (engine/cli/flags.c): negatives,
-- overflow, NaN/inf, junk and out-of-range values exit 2 with the flag named;
-- nothing wraps around into a huge limit.
local H = require "support.helper"

local NOCFG = "/nonexistent/draengine-spec-kubeconfig"

-- a refusal: exit 2, the flag and the offending text named on stderr
local function refused(args, flag, text)
  local rc, out, err = H.run(args)
  assert.are.equal(2, rc, table.concat(args, " ") .. "\n" .. err)
  assert.truthy(err:find(flag, 1, true), "flag not named: " .. err)
  if text then assert.truthy(err:find(text, 1, true), "value/reason not named: " .. err) end
  assert.are.equal("", out)
  return err
end

-- serve gets past its flags and stops at the missing kubeconfig
local function serve_accepts(args)
  local all = { "serve", "--kubeconfig", NOCFG }
  for _, a in ipairs(args) do all[#all + 1] = a end
  local rc, _, err = H.run(all)
  assert.are.equal(2, rc, err)
  assert.truthy(err:find(NOCFG, 1, true), "stopped before the kubeconfig: " .. err)
  return err
end

describe("number flags", function()
  local bad = { "-5", "-0", "0x", "1e3", " 5", "5 ", "", "5k", "+5", "18446744073709551616",
    "99999999999999999999999", "0x10000000000000000", "1.5", "٣" }

  it("allocate --max-search-steps refuses every value that is not a positive integer", function()
    for _, v in ipairs(bad) do refused({ "allocate", "-f", "x.yaml", "--max-search-steps", v }, "--max-search-steps") end
    refused({ "allocate", "-f", "x.yaml", "--max-search-steps", "0" }, "--max-search-steps", "too small")
    local err = refused({ "allocate", "-f", "x.yaml", "--max-search-steps=-5" }, "--max-search-steps", "negative")
    assert.truthy(err:find('"-5"', 1, true))
    refused({ "allocate", "-f", "x.yaml", "--seed", "-1" }, "--seed", "negative")
  end)

  it("the largest and hex values are read exactly, and a leading zero is decimal", function()
    -- accepted values get past the flags to the missing file
    for _, v in ipairs({ "18446744073709551615", "0xffffffffffffffff", "010", "1" }) do
      local rc, _, err = H.run({ "allocate", "-f", "/nonexistent/x.yaml", "--max-search-steps", v })
      assert.are.equal(2, rc)
      assert.falsy(err:find("--max-search-steps", 1, true), err)
      assert.truthy(err:find("/nonexistent/x.yaml", 1, true), err)
    end
  end)

  it("run, sim and bench refuse negatives, zero counts and overflow", function()
    refused({ "run", "--nodes", "-1" }, "--nodes", "negative")
    refused({ "run", "--nodes", "0" }, "--nodes", "too small")
    refused({ "run", "--max-pods", "10000001" }, "--max-pods", "too large")
    refused({ "run", "--seed", "99999999999999999999" }, "--seed", "too large")
    refused({ "sim", "--nodes", "0x" }, "--nodes", "not a number")
    refused({ "sim", "--seed", "-3" }, "--seed", "negative")
    refused({ "bench", "policy-overhead", "--", "--pods", "-1" }, "--pods", "negative")
    refused({ "bench", "reload-100k", "--", "--nodes", "4294967297" }, "--nodes", "too large")
    refused({ "bench", "load-100k", "--", "--nodes", "" }, "--nodes", "empty")
  end)

  it("policy commands refuse bad budgets instead of wrapping or shifting past 64 bits", function()
    for _, sub in ipairs({ "test", "lint", "bench", "list", "diff" }) do
      refused({ "policy", sub, "--instructions", "-5" }, "--instructions", "negative")
      refused({ "policy", sub, "--deadline-ms", "18446744073709551615" }, "--deadline-ms", "too large")
      refused({ "policy", sub, "--memory-mb", "17592186044416" }, "--memory-mb", "too large")
      refused({ "policy", sub, "--instructions" }, "--instructions", "needs a value")
      refused({ "policy", sub, "--instructions=abc" }, "--instructions", "not a number")
    end
    refused({ "policy", "bench", "--iterations", "0" }, "--iterations", "too small")
    refused({ "policy", "bench", "--iterations", "abc" }, "--iterations", "not a number")
    -- a flag of another subcommand is unknown here, never ignored
    refused({ "policy", "test", "--iterations", "3" }, "--iterations", "unknown flag")
    refused({ "policy", "lint", "--from", "x" }, "--from", "unknown flag")
  end)
end)

describe("serve's flags", function()
  it("refuses a NaN, infinite, negative or zero QPS and an overflowing burst", function()
    for _, v in ipairs({ "nan", "NaN", "-nan", "inf", "-inf", "infinity", "-1", "0", "0.0", "1e400", "1e7", "", "5qps" }) do
      refused({ "serve", "--kube-api-qps", v }, "--kube-api-qps")
    end
    serve_accepts({ "--kube-api-qps", "0.5" })
    serve_accepts({ "--kube-api-qps=1e3" })
    for _, v in ipairs({ "-1", "0", "2147483648", "99999999999", "1.5" }) do
      refused({ "serve", "--kube-api-burst", v }, "--kube-api-burst")
    end
    refused({ "serve", "--port", "65536" }, "--port", "too large")
    refused({ "serve", "--port", "-1" }, "--port", "negative")
    refused({ "serve", "-v", "11" }, "-v", "too large")
    refused({ "serve", "--v=-2" }, "-v", "negative")
    refused({ "serve", "--jitter-seed", "-1" }, "--jitter-seed", "negative")
    refused({ "serve", "--leader-elect=maybe" }, "--leader-elect", "not a boolean")
    refused({ "serve", "--policy-watch=yes" }, "--policy-watch", "not a boolean")
    refused({ "serve", "--kube-api-http2=h2" }, "--kube-api-http2", "not a boolean")
    serve_accepts({ "--kube-api-http2" })
    serve_accepts({ "--kube-api-http2=false" })
  end)

  it("reads Go durations exactly and refuses negative, unitless, unknown and overflowing ones", function()
    for _, v in ipairs({ "-1s", "-1ns", "1", "1.5", "1x", "s", ".s", "1m30", "1d", "", "9999999999h",
      "106751d", "2562048h", "9223372036854775808ns" }) do
      refused({ "serve", "--pod-max-backoff", v }, "--pod-max-backoff")
    end
    for _, v in ipairs({ "0", "0s", "-0s", "+5s", "1m30s", "1.5h", "500ms", "2us", "2µs", "2μs", "1h1m1.5s",
      "9223372036854775807ns", ".5s", "5.s" }) do
      serve_accepts({ "--pod-max-backoff", v, "--pod-initial-backoff", "0s" })
    end
    -- the values are exact: 1.5h is longer than 1h30m0.000000001s by nothing, shorter by 1ns
    serve_accepts({ "--pod-initial-backoff", "1.5h", "--pod-max-backoff", "1h30m" })
    local err = refused({ "serve", "--pod-initial-backoff", "1.5h", "--pod-max-backoff", "1h29m59.999999999s" },
      "--pod-initial-backoff", "longer than --pod-max-backoff")
    assert.truthy(err:find("1h30m0s", 1, true), err)
  end)

  it("accepts --pod-initial-backoff 0s and refuses an initial backoff above the maximum", function()
    serve_accepts({ "--pod-initial-backoff", "0s" })
    serve_accepts({ "--pod-initial-backoff", "0s", "--pod-max-backoff", "0s" })
    serve_accepts({ "--pod-initial-backoff", "10s" })
    refused({ "serve", "--pod-initial-backoff", "3s", "--pod-max-backoff", "2s" }, "--pod-initial-backoff",
      "longer than --pod-max-backoff (2s)")
    -- against the default maximum (10s) when only the initial one is given
    refused({ "serve", "--pod-initial-backoff", "11s" }, "--pod-max-backoff", "the default")
    refused({ "serve", "--pod-max-backoff", "500ms" }, "--pod-initial-backoff", "longer than")
  end)

  it("keeps periods positive and in client-go's order", function()
    refused({ "serve", "--leader-elect-lease-duration", "0s" }, "--leader-elect-lease-duration", "too short")
    refused({ "serve", "--watch-backoff", "0" }, "--watch-backoff", "too short")
    refused({ "serve", "--leader-elect-renew-deadline", "20s" }, "--leader-elect-renew-deadline")
    refused({ "serve", "--leader-elect-retry-period", "9s" }, "--leader-elect-retry-period")
    serve_accepts({ "--leader-elect-lease-duration", "40s", "--leader-elect-renew-deadline", "20s" })
    serve_accepts({ "--policy-rescan", "0s" })
  end)
end)
