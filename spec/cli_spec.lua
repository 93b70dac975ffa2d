-- cli_spec.lua - the command surface: version, help, unknown commands.
local H = require "support.helper"

describe("draengine command", function()
  it("prints its version", function()
    local rc, out = H.run({ "version" })
    assert.are.equal(0, rc)
    assert.truthy(out:match("^draengine %d+%.%d+%.%d+"))
  end)

  it("lists every subcommand in help", function()
    local rc, out = H.run({ "help" })
    assert.are.equal(0, rc)
    for _, c in ipairs({ "inspect", "allocate", "cel", "run", "sim", "serve", "policy", "bench" }) do
      assert.truthy(out:find("\n  " .. c .. " ", 1, true), c)
    end
  end)

  it("answers --help on every subcommand with exit 0", function()
    for _, c in ipairs({ "inspect", "allocate", "cel", "run", "sim", "sysfs", "serve", "policy",
                         "bench", "version", "help" }) do
      local rc, out = H.run({ c, "--help" })
      assert.are.equal(0, rc, c)
      assert.truthy(out:find("usage: draengine " .. c, 1, true), c .. ": " .. out)
    end
  end)

  it("refuses an unknown command with exit 2", function()
    local rc, _, err = H.run({ "frobnicate" })
    assert.are.equal(2, rc)
    assert.truthy(err:find('unknown command "frobnicate"', 1, true))
  end)

  it("refuses an unknown benchmark by name", function()
    local rc, _, err = H.run({ "bench", "no-such-bench" })
    assert.are.equal(2, rc)
    assert.truthy(err:find('unknown benchmark "no-such-bench"', 1, true))
  end)
end)

describe("feature gates", function()
  local core = require "draengine.core"
  it("have the 1.37 defaults", function()
    local g = core.gates()
    assert.is_true(g.DRAPrioritizedList)
    assert.is_true(g.DRAConsumableCapacity)
    assert.is_true(g.DRADeviceBindingConditions)
    assert.is_false(g.DRAListTypeAttributes)
    assert.is_false(g.DRADerivedAttributes)
  end)
  it("are overridden by name, with the values strconv.ParseBool reads", function()
    local g = core.gates("DRAListTypeAttributes=true, DRADeviceTaintRules=F,DRAConsumableCapacity=0,DRAFractionalCapacityRange=False")
    assert.is_true(g.DRAListTypeAttributes)
    assert.is_false(g.DRADeviceTaintRules)
    assert.is_false(g.DRAConsumableCapacity)
    assert.is_true(g.NodeDeclaredFeatures)
  end)
  it("refuse unknown names and bad values as component-base words it", function()
    assert.has_error(function() core.gates("NoSuchGate=true") end, "unrecognized feature gate: NoSuchGate")
    assert.has_error(function() core.gates("DRAAdminAccess=maybe") end,
      'invalid value of DRAAdminAccess=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax')
    assert.has_error(function() core.gates("DRAAdminAccess") end, "missing bool value for DRAAdminAccess")
  end)
  it("refuse to turn off a gate that 1.37 locks to true", function()
    for _, name in ipairs({ "DynamicResourceAllocation", "DRAAdminAccess", "DRAPrioritizedList",
                            "DRAResourceClaimDeviceStatus", "DRAExtendedResource", "NodeDeclaredFeatures" }) do
      assert.has_error(function() core.gates(name .. "=false") end,
        "cannot set feature gate " .. name .. " to false, feature is locked to true")
      assert.is_true(core.gates(name .. "=true")[name])
    end
    -- several refusals are joined as utilerrors' aggregate does
    assert.has_error(function() core.gates("DRAAdminAccess=false,DRAExtendedResource=false") end,
      "[cannot set feature gate DRAAdminAccess to false, feature is locked to true, " ..
      "cannot set feature gate DRAExtendedResource to false, feature is locked to true]")
    -- GA but not locked in 1.37
    assert.is_false(core.gates("DRADeviceTaints=false,DRADeviceTaintRules=false").DRADeviceTaints)
  end)
  it("refuse an enabled gate whose dependencies are off", function()
    assert.has_error(function() core.gates("DRAWorkloadResourceClaims=true") end,
      "DRAWorkloadResourceClaims is enabled, but depends on features that are disabled: [GenericWorkload]")
    assert.has_error(function() core.gates("DRAPartitionableDevicesType=true") end,
      "DRAPartitionableDevicesType is enabled, but depends on features that are disabled: [DRAResourcePoolStatus]")
    assert.has_error(function() core.gates("DRADeviceTaints=false") end,
      "DRADeviceTaintRules is enabled, but depends on features that are disabled: [DRADeviceTaints]")
    local g = core.gates("GenericWorkload=true,DRAWorkloadResourceClaims=true")
    assert.is_true(g.DRAWorkloadResourceClaims)
  end)
  it("exit 2 with component-base's message on every command that takes them", function()
    local cases = {
      { "run", "--nodes", "2", "--max-pods", "1" },
      { "inspect", "-f", H.root .. "/spec/fixtures/alloc/three-nodes.yaml" },
      { "serve", "--master", "https://127.0.0.1:1", "--leader-elect=false" },
      { "cel", "true" },
      { "policy", "diff", "--from", H.root .. "/policies", "--to", H.root .. "/policies",
        "-f", H.root .. "/spec/fixtures/alloc/three-nodes.yaml" },
    }
    for _, args in ipairs(cases) do
      args[#args + 1] = "--feature-gates=DRAPrioritizedList=false"
      local rc, out, err = H.run(args)
      assert.are.equal(2, rc, args[1] .. ": " .. err)
      assert.matches("cannot set feature gate DRAPrioritizedList to false, feature is locked to true", err, 1, true)
      assert.are.equal("", out, args[1])
    end
  end)
  it("are taken by allocate in the allocator's library mode, with a warning", function()
    -- the conformance vectors (upstream's allocator unit tests) switch locked gates off
    local rc, _, err = H.run({ "allocate", "--node", "node-a", "-f", H.root .. "/spec/fixtures/alloc/three-nodes.yaml",
      "--feature-gates=DRAAdminAccess=false,DRADeviceTaints=false" })
    assert.are.equal(0, rc, err)
    assert.matches("warning: --feature-gates: [cannot set feature gate DRAAdminAccess to false, feature is locked to true, " ..
      "DRADeviceTaintRules is enabled, but depends on features that are disabled: [DRADeviceTaints]]", err, 1, true)
    rc, _, err = H.run({ "allocate", "--node", "node-a", "-f", H.root .. "/spec/fixtures/alloc/three-nodes.yaml",
      "--feature-gates=NoSuchGate=true" })
    assert.are.equal(2, rc)
    assert.matches("unrecognized feature gate: NoSuchGate", err, 1, true)
  end)
end)

describe("draengine runs as started", function()
  -- decisions take their records from pre-faulted storage (base/slab.h),
  -- so nothing asks glibc for huge pages or re-executes the binary
  it("leaves GLIBC_TUNABLES alone and keeps its pid", function()
    local script = "sleep 2 | env -u GLIBC_TUNABLES " .. H.shell_quote(H.bin) .. " cel --batch >/dev/null &\n" ..
      "pid=$!; sleep 0.7; cat /proc/$pid/comm; " ..
      "tr '\\0' '\\n' </proc/$pid/environ | grep '^GLIBC_TUNABLES=' || echo none; " ..
      "{ kill $pid; wait; } 2>/dev/null"
    local p = assert(io.popen("sh -c " .. H.shell_quote(script) .. " 2>/dev/null"))
    local out = p:read("a")
    p:close()
    assert.are.equal("draengine\nnone\n", out)
  end)
end)

describe("draengine bench allocate-scale", function()
  it("runs allocate on two generated snapshots and removes them", function()
    local before = {}
    local p = io.popen("ls /tmp/draengine-scale-* 2>/dev/null")
    for l in p:lines() do before[l] = true end
    p:close()
    local rc, out, err = H.run({ "bench", "allocate-scale", "--", "--nodes", "20", "--pods", "12" })
    assert.are.equal(0, rc, err)
    local fig = {}
    for name, v in out:gmatch("BENCH (%S+) (%S+)") do fig[name] = tonumber(v) end
    for _, n in ipairs({ "2", "20" }) do
      assert.is_true(fig["allocate-scale-" .. n .. "-seconds"] > 0, n)
      assert.is_true(fig["allocate-scale-" .. n .. "-rss-mib"] > 0, n)
    end
    assert.is_true(fig["allocate-scale-ratio"] > 0)
    assert.are.equal(fig["allocate-scale-20-seconds"], fig["allocate-scale-seconds"])
    assert.is_nil(fig["allocate-scale-20-instructions"])
    p = io.popen("ls /tmp/draengine-scale-* 2>/dev/null")
    for l in p:lines() do assert.is_true(before[l] or false, l .. " left behind") end
    p:close()
  end)
end)

describe("draengine bench policy-overhead", function()
  it("splits bench policy-overhead's pods by where they land with --phases", function()
    local rc, out, err = H.run({ "bench", "policy-overhead", "--", "--nodes", "20", "--rounds", "1", "--phases" })
    assert.are.equal(0, rc, err)
    assert.is_nil(err:find("unscheduled", 1, true), err)
    local fig = {}
    for name, v in out:gmatch("BENCH (%S+) (%S+)") do fig[name] = tonumber(v) end
    assert.are.equal(160, fig["policy-overhead-pods"])
    -- 8 pods fill a node in every configuration (bin-packing or canonical
    -- order); the first pod of the run is reported on its own
    for _, c in ipairs({ "off", "on", "facts" }) do
      local p = "policy-overhead-phase-" .. c .. "-"
      assert.are.equal(19, fig[p .. "node-first-pods"], c)
      assert.are.equal(20, fig[p .. "node-second-pods"], c)
      assert.are.equal(120, fig[p .. "node-later-pods"], c)
      for _, ph in ipairs({ "node-first", "node-second", "node-later" }) do
        assert.is_true(fig[p .. ph .. "-us-per-pod"] > 0, c .. " " .. ph)
        assert.is_true(fig[p .. ph .. "-ms"] > 0, c .. " " .. ph)
      end
    end
  end)

  it("prints no phase figures without --phases", function()
    local rc, out, err = H.run({ "bench", "policy-overhead", "--", "--nodes", "4", "--rounds", "1" })
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("BENCH policy-overhead-ratio ", 1, true))
    assert.is_nil(out:find("phase", 1, true))
  end)

  it("removes bench policy-overhead's temp dir when stopped with SIGTERM", function()
    -- one shell: start the bench, wait for the dir it makes, stop it, look
    local script = [=[
before=$(ls -d /tmp/draengine-overhead-* 2>/dev/null)
"$0" bench policy-overhead -- --nodes 3000 >/dev/null 2>&1 &
pid=$!
i=0; new=
while [ $i -lt 600 ] && [ -z "$new" ]; do
  for d in /tmp/draengine-overhead-*; do
    [ -d "$d" ] || continue
    case "$before" in *"$d"*) ;; *) new=$d ;; esac
  done
  [ -z "$new" ] && sleep 0.05
  i=$((i+1))
done
kill -TERM $pid
wait $pid
echo "rc=$? dir=${new:-none}"
if [ -n "$new" ] && [ ! -e "$new" ]; then echo gone; fi
]=]
    local p = assert(io.popen("env -u LD_PRELOAD sh -c " .. H.shell_quote(script) .. " " .. H.shell_quote(H.bin)))
    local out = p:read("a")
    p:close()
    assert.truthy(out:find("rc=143 dir=/tmp/draengine-overhead-", 1, true), out)
    assert.truthy(out:find("\ngone\n", 1, true), out)
  end)
end)
