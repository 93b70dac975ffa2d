-- run_summary_spec.lua - `draengine run`: the stream of pods, the summary,
-- determinism, user workloads, extended resources, flags and errors.
local H = require "support.helper"

-- Lines that measure the machine; everything else must be byte-stable.
local function strip_timing(out)
  local keep = {}
  for line in out:gmatch("[^\n]*\n?") do
    if not (line:match("^  setup ") or line:match("^  latency ") or line:match("^  throughput ")) then
      keep[#keep + 1] = line
    end
  end
  return table.concat(keep)
end

local function pods_line(out)
  local a, p, q = out:match("\nPods: ([%d,]+) arrived, ([%d,]+) placed, ([%d,]+) pending\n")
  local function n(x) return tonumber((x:gsub(",", ""))) end
  return n(a), n(p), n(q)
end

local function workload_row(out, name)
  local a, p, q = out:match("\n  " .. name:gsub("%-", "%%-") .. " +(%d+) +(%d+) +(%d+)  ")
  return tonumber(a), tonumber(p), tonumber(q)
end

local function with_file(text, suffix, fn)
  local path = H.write_temp(text, suffix)
  local ok, err = pcall(fn, path)
  os.remove(path)
  if not ok then error(err, 0) end
end

describe("draengine run", function()
  local out, rc, err
  setup(function()
    rc, out, err = H.run({ "run", "--nodes", "24", "--no-policies", "--seed", "3" })
  end)

  it("fills the cluster and reports placed, pending and p99", function()
    assert.are.equal(0, rc, err)
    assert.truthy(out:find(" placed", 1, true))
    assert.truthy(out:find(" pending", 1, true))
    assert.truthy(out:find("p99 ", 1, true))
    local a, p, q = pods_line(out)
    assert.are.equal(a, p + q)
    assert.truthy(p > 50, out)
    -- every built-in workload is listed, and the rows add up
    local sum_a, sum_p = 0, 0
    for _, w in ipairs({ "single-gpu", "whole-node", "gpu-nic-pcie", "gpu-nic-any", "gpu-cpu-numa", "mig-1g",
                         "mig-3g", "tiered", "ext-gpu", "amd-gpu", "amd-partition", "cpu-only" }) do
      local wa, wp, wq = workload_row(out, w)
      assert.is_number(wa, w)
      assert.are.equal(wa, wp + wq)
      sum_a, sum_p = sum_a + wa, sum_p + wp
    end
    assert.are.equal(a, sum_a)
    assert.are.equal(p, sum_p)
  end)

  it("says why pods stay pending", function()
    assert.truthy(out:find("\nPending reasons", 1, true))
    assert.truthy(out:find("nodes are available", 1, true))
  end)

  it("reports devices per vendor and tier, alignment and fragmentation", function()
    assert.truthy(out:match("\n  by vendor: [^\n]*nvidia %d+/%d+"))
    assert.truthy(out:match("\n  by vendor: [^\n]*amd %d+/%d+"))
    assert.truthy(out:match("\n  by tier: "))
    assert.truthy(out:match("\n  PCIe root +%d+%.%d%% %(%d+ of %d+ pods on one root%)"))
    assert.truthy(out:match("\n  NUMA node +%d+%.%d%% "))
    assert.truthy(out:find("Fragmentation", 1, true))
  end)

  it("places every GPU+NIC pod that asked for one PCIe root on one root", function()
    -- the constraint guarantees it; the alignment line counts those pods too
    local _, placed = workload_row(out, "gpu-nic-pcie")
    assert.truthy(placed > 0)
    local aligned, total = out:match("PCIe root +[%d.]+%% %((%d+) of (%d+) pods")
    assert.truthy(tonumber(aligned) >= placed)
    assert.truthy(tonumber(total) >= tonumber(aligned))
  end)

  it("is deterministic apart from the timing lines", function()
    local rc2, out2 = H.run({ "run", "--nodes", "24", "--no-policies", "--seed", "3" })
    assert.are.equal(0, rc2)
    assert.are.equal(strip_timing(out), strip_timing(out2))
    assert.are_not.equal(out, strip_timing(out)) -- there were timing lines to strip
    local _, out3 = H.run({ "run", "--nodes", "24", "--no-policies", "--seed", "4" })
    assert.are_not.equal(strip_timing(out), strip_timing(out3))
  end)

  it("draws no progress bar when stderr is not a terminal", function()
    assert.are.equal("", err)
  end)

  it("draws a progress bar on a terminal and clears it at the end", function()
    local p = io.popen("command -v script 2>/dev/null")
    local script = p:read("l")
    p:close()
    if not script or script == "" then
      pending("script(1) is not installed: no way to give the run a terminal")
      return
    end
    local cmd = H.shell_quote(H.bin) .. " run --nodes 24 --no-policies --seed 3"
    -- script(1) must not inherit the sanitizer runtime preloaded by `make test-asan`
    p = io.popen("env -u LD_PRELOAD script -qec " .. H.shell_quote(cmd) .. " /dev/null")
    local tty = p:read("a")
    p:close()
    assert.truthy(tty:match("^\r%[[#.]+%] +%d+%% GPUs busy +%d+ pods: %d+ placed, %d+ pending\27%[K"), tty:sub(1, 200))
    -- the bar is erased before the summary is printed
    assert.truthy(tty:find("\r\27[Kdraengine run: seed 3", 1, true))
  end)
end)

describe("draengine run with the shipped policies", function()
  local rc, out, err
  setup(function()
    rc, out, err = H.run({ "run", "--nodes", "24", "--seed", "3", "--policies", H.root .. "/policies" })
  end)

  it("loads them and serves the tiered workload from the derived tier", function()
    assert.are.equal(0, rc, err)
    assert.truthy(out:match("\n  policies: %d+ loaded, revision %x+"))
    local _, placed = workload_row(out, "tiered")
    assert.truthy(placed > 0, out)
    assert.truthy(out:match("\n  by tier: [^\n]*gold %d+/%d+"))
    assert.truthy(out:match("\n  by tier: [^\n]*platinum %d+/%d+"))
  end)

  it("is deterministic with policies too", function()
    local _, out2 = H.run({ "run", "--nodes", "24", "--seed", "3", "--policies", H.root .. "/policies" })
    assert.are.equal(strip_timing(out), strip_timing(out2))
  end)

  it("matches NUMA nodes across drivers through the bridged attribute", function()
    -- GB200 GPUs publish no NUMA node; numa-bridge derives the standard one
    -- from the PCI domain, so GPU + CPUs on one NUMA node only fit with it
    with_file([[
patience: 2
workloads:
- name: gpu-cpu
  claim:
    devices:
      requests:
      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}
      - {name: cpu, exactly: {deviceClassName: dra.cpu, capacity: {requests: {dra.cpu/cpu: "16"}}}}
      constraints:
      - {requests: [gpu, cpu], matchAttribute: resource.kubernetes.io/numaNode}
]], ".yaml", function(path)
      local _, plain = H.run({ "run", "--shapes", "gb200-tray", "--nodes", "2", "--workload", path,
                               "--no-policies" })
      local _, bridged = H.run({ "run", "--shapes", "gb200-tray", "--nodes", "2", "--workload", path,
                                 "--policies", H.root .. "/policies" })
      assert.are.same({ 2, 0, 2 }, { workload_row(plain, "gpu-cpu") })
      assert.are.same({ 10, 8, 2 }, { workload_row(bridged, "gpu-cpu") })
      assert.truthy(bridged:find("NUMA node  100.0% (8 of 8 pods", 1, true), bridged)
    end)
  end)

  it("refuses a policy directory that does not load", function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. H.shell_quote(dir))
    local f = assert(io.open(dir .. "/broken.lua", "w"))
    f:write("return {name = 'broken', version = '1.0.0', api = 1, domains = {}, derive = ")
    f:close()
    local rc2, _, err2 = H.run({ "run", "--nodes", "4", "--policies", dir })
    os.execute("rm -rf " .. H.shell_quote(dir))
    assert.are.equal(2, rc2)
    assert.truthy(err2:find("loading policies from " .. dir, 1, true), err2)
    assert.truthy(err2:find("broken.lua", 1, true), err2)
  end)
end)

describe("draengine run --workload", function()
  it("runs a user's mix: 2 DGX nodes hold exactly 16 single-GPU pods", function()
    with_file([[
patience: 2
workloads:
- name: one-gpu
  claim:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
]], ".yaml", function(path)
      local rc, out, err = H.run({ "run", "--shapes", "dgx-h100", "--nodes", "2", "--no-policies",
                                   "--workload", path })
      assert.are.equal(0, rc, err)
      local a, p, q = pods_line(out)
      assert.are.same({ 18, 16, 2 }, { a, p, q })
      assert.truthy(out:find("whole GPUs 16/16", 1, true), out)
    end)
  end)

  it("serves extended-resource pods through the class that names the resource", function()
    with_file([[
{"patience": 1, "workloads": [
  {"name": "two-gpus", "extendedResources": {"nvidia.com/gpu": 2}}]}
]], ".json", function(path)
      local rc, out, err = H.run({ "run", "--shapes", "dgx-h100", "--nodes", "1", "--no-policies",
                                   "--workload", path })
      assert.are.equal(0, rc, err)
      local a, p = pods_line(out)
      assert.are.equal(4, p)
      assert.are.equal(5, a)
    end)
  end)

  it("reports a resource no class serves as the pending reason", function()
    with_file([[
workloads:
- name: tpu
  extendedResources: {google.com/tpu: 1}
]], ".yaml", function(path)
      local rc, out = H.run({ "run", "--shapes", "dgx-h100", "--nodes", "1", "--no-policies", "--workload", path })
      assert.are.equal(0, rc)
      assert.truthy(out:find("tpu: no DeviceClass serves extended resource google.com/tpu", 1, true), out)
    end)
  end)

  it("stops at --max-pods", function()
    local rc, out = H.run({ "run", "--nodes", "24", "--no-policies", "--max-pods", "10" })
    assert.are.equal(0, rc)
    assert.are.equal(10, (pods_line(out)))
  end)

  it("prints the built-in mix in the --workload format, and running it gives the same result", function()
    local rc, mix = H.run({ "run", "--print-workload" })
    assert.are.equal(0, rc)
    assert.truthy(mix:find('"workloads"', 1, true))
    with_file(mix, ".json", function(path)
      local _, a = H.run({ "run", "--nodes", "16", "--no-policies", "--seed", "2" })
      local _, b = H.run({ "run", "--nodes", "16", "--no-policies", "--seed", "2", "--workload", path })
      assert.are.equal(strip_timing(a), strip_timing(b))
    end)
  end)

  it("refuses a bad workload file with the file and field in the message", function()
    with_file("workloads:\n- name: Bad_Name\n  claim: {devices: {requests: []}}\n", ".yaml", function(path)
      local rc, _, err = H.run({ "run", "--workload", path, "--no-policies" })
      assert.are.equal(2, rc)
      assert.truthy(err:find(path .. ": workloads[0].name: must be a DNS label", 1, true), err)
    end)
    with_file("workloads:\n- name: x\n  weight: -1\n  claim: {devices: {requests: []}}\n", ".yaml", function(path)
      local rc, _, err = H.run({ "run", "--workload", path, "--no-policies" })
      assert.are.equal(2, rc)
      assert.truthy(err:find("workloads[0].weight: must be a positive number", 1, true), err)
    end)
    with_file("workloads:\n- name: x\n  claim: {devices: {requests: [{name: a, exactly: {deviceClassName: \"no such\"}}]}}\n",
      ".yaml", function(path)
        local rc, _, err = H.run({ "run", "--workload", path, "--no-policies", "--nodes", "2" })
        assert.are.equal(2, rc)
        assert.truthy(err:find("workload: " .. path, 1, true), err)
      end)
  end)

  it("accepts the example of the README", function()
    local readme = H.read_file(H.root .. "/README.md")
    local section = readme:match("<!%-%- section:run %-%->(.-)<!%-%- /section:run %-%->")
    local example = section:match("%*%*Workload format%.%*%*.-```yaml\n(.-)```")
    assert.is_string(example)
    with_file(example, ".yaml", function(path)
      local rc, out, err = H.run({ "run", "--workload", path, "--nodes", "8", "--no-policies" })
      assert.are.equal(0, rc, err)
      assert.is_number((workload_row(out, "gpu-nic")))
      assert.is_number((workload_row(out, "ext-gpu")))
    end)
  end)

  it("refuses bad flags", function()
    local rc, _, err = H.run({ "run", "--nodes", "zero" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("--nodes", 1, true))
    rc, _, err = H.run({ "run", "--shapes", "nope", "--no-policies" })
    assert.are.equal(2, rc)
    assert.truthy(err:find('unknown shape "nope"', 1, true))
  end)
end)
