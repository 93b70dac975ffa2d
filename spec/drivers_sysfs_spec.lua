-- drivers_sysfs_spec.lua - PCI discovery from sysfs against fake /sys trees
-- built here with real directories and relative symlinks, the way the
-- kernel lays them out (bus/pci/devices/<BDF> -> ../../../devices/pci.../<BDF>).
local H = require "support.helper"
local core = require "draengine.core"

local sh, write = H.sh, H.write

-- devs: list of { path = "pci0000:00/0000:00:01.0/0000:01:00.0", vendor =, device =,
-- class =, numa = (number, or false for no file), driver = }
local function make_tree(devs, extra)
  local p = io.popen("mktemp -d")
  local root = p:read("l")
  p:close()
  local script = { "set -e", "cd " .. H.shell_quote(root), "mkdir -p bus/pci/devices bus/pci/drivers" }
  for _, d in ipairs(devs) do
    local dir = "devices/" .. d.path
    local bdf = d.path:match("([^/]+)$")
    script[#script + 1] = "mkdir -p " .. H.shell_quote(dir)
    script[#script + 1] = "ln -s " .. H.shell_quote("../../../" .. dir) .. " bus/pci/devices/" .. H.shell_quote(bdf)
    if d.driver then
      script[#script + 1] = "mkdir -p bus/pci/drivers/" .. d.driver
      local depth = select(2, dir:gsub("/", "")) + 1
      script[#script + 1] = "ln -s " .. H.shell_quote(string.rep("../", depth) .. "bus/pci/drivers/" .. d.driver)
        .. " " .. H.shell_quote(dir .. "/driver")
    end
  end
  for _, c in ipairs(extra or {}) do script[#script + 1] = c end
  sh("sh -c " .. H.shell_quote(table.concat(script, "\n")))
  for _, d in ipairs(devs) do
    local dir = root .. "/devices/" .. d.path
    write(dir .. "/vendor", (d.vendor or "0x8086") .. "\n")
    write(dir .. "/device", (d.device or "0x0001") .. "\n")
    write(dir .. "/class", (d.class or "0x028000") .. "\n")
    if d.numa ~= false then write(dir .. "/numa_node", tostring(d.numa or -1) .. "\n") end
  end
  return root
end

local function rm(root)
  sh("rm -rf " .. H.shell_quote(root))
end

local function devmap(slices)
  local m = {}
  for _, s in ipairs(slices) do
    for _, d in ipairs(s.spec.devices) do m[d.name] = d end
  end
  return m
end

local function attr(d, k)
  local v = d.attributes[k]
  return v and (v.string or v.int)
end

local BASIC = {
  { path = "pci0000:00/0000:00:00.0", vendor = "0x8086", device = "0x09a2", class = "0x060000", numa = 0 },
  { path = "pci0000:00/0000:00:01.0", vendor = "0x8086", device = "0x347a", class = "0x060400", numa = 0 },
  { path = "pci0000:00/0000:00:01.0/0000:01:00.0", vendor = "0x10de", device = "0x2330", class = "0x030200",
    numa = 0, driver = "nvidia" },
  { path = "pci0000:00/0000:00:02.0/0000:02:00.0", vendor = "0x15b3", device = "0x1021", class = "0x020700",
    numa = -1, driver = "mlx5_core" },
  { path = "pci0000:00/0000:00:1f.3", vendor = "0x8086", device = "0xa348", class = "0x040300", numa = false },
  { path = "pci0001:40/0001:40:00.0/0001:41:00.0", vendor = "0x1002", device = "0x74a1", class = "0x120000",
    numa = 1 },
  { path = "pci10000:00/10000:00:01.0/10000:01:00.0", vendor = "0x144d", device = "0xa80a", class = "0x010802",
    numa = 0, driver = "nvme" },
}

describe("sysfs discovery", function()
  local root
  before_each(function() root = make_tree(BASIC, { "mkdir -p bus/pci/devices/not-a-device" }) end)
  after_each(function() rm(root) end)

  it("derives bus ID, PCIe root and NUMA node, skipping bridges and non-PCI entries", function()
    local slices = core.sysfs{ driver = "pci.example.com", node = "node-a", root = root }
    assert.are.equal(1, #slices)
    local s = slices[1]
    assert.are.equal("pci.example.com", s.spec.driver)
    assert.are.equal("node-a", s.spec.nodeName)
    assert.are.same({ name = "node-a", generation = 1, resourceSliceCount = 1 }, s.spec.pool)
    -- the host bridge (0x0600) and the PCI bridge (0x0604) are plumbing
    assert.are.equal(5, #s.spec.devices)
    local m = devmap(slices)
    local gpu = m["pci-0000-01-00-0"]
    assert.are.equal("0000:01:00.0", attr(gpu, "resource.kubernetes.io/pciBusID"))
    assert.are.equal("pci0000:00", attr(gpu, "resource.kubernetes.io/pcieRoot"))
    assert.are.equal(0, attr(gpu, "resource.kubernetes.io/numaNode"))
    assert.are.equal("0x10de", attr(gpu, "vendorID"))
    assert.are.equal("0x2330", attr(gpu, "deviceID"))
    assert.are.equal("0x030200", attr(gpu, "class"))
    assert.are.equal("nvidia", attr(gpu, "kernelDriver"))
  end)

  it("lists devices in address order", function()
    local names = {}
    for _, d in ipairs(core.sysfs{ driver = "pci.example.com", node = "n", root = root }[1].spec.devices) do
      names[#names + 1] = d.name
    end
    assert.are.same({ "pci-0000-00-1f-3", "pci-0000-01-00-0", "pci-0000-02-00-0", "pci-0001-41-00-0",
                      "pci-10000-01-00-0" }, names)
  end)

  it("omits numaNode for -1 and for a missing numa_node file", function()
    local m = devmap(core.sysfs{ driver = "pci.example.com", node = "n", root = root })
    assert.is_nil(m["pci-0000-02-00-0"].attributes["resource.kubernetes.io/numaNode"])
    assert.is_nil(m["pci-0000-00-1f-3"].attributes["resource.kubernetes.io/numaNode"])
    assert.are.equal(1, attr(m["pci-0001-41-00-0"], "resource.kubernetes.io/numaNode"))
  end)

  it("handles several PCI domains, including 5-digit VMD domains", function()
    local m = devmap(core.sysfs{ driver = "pci.example.com", node = "n", root = root })
    assert.are.equal("pci0001:40", attr(m["pci-0001-41-00-0"], "resource.kubernetes.io/pcieRoot"))
    assert.are.equal("pci10000:00", attr(m["pci-10000-01-00-0"], "resource.kubernetes.io/pcieRoot"))
    assert.are.equal("10000:01:00.0", attr(m["pci-10000-01-00-0"], "resource.kubernetes.io/pciBusID"))
  end)

  it("keeps only the requested classes, bridges included when asked for", function()
    local m = devmap(core.sysfs{ driver = "gpu.example.com", node = "n", root = root,
                                 class_prefixes = { "0x03", "0x12" } })
    local names = {}
    for k in pairs(m) do names[#names + 1] = k end
    table.sort(names)
    assert.are.same({ "pci-0000-01-00-0", "pci-0001-41-00-0" }, names)
    m = devmap(core.sysfs{ driver = "x.example.com", node = "n", root = root, class_prefixes = { "0x0604" } })
    assert.is_table(m["pci-0000-00-01-0"])
  end)

  it("refuses bad driver names, class prefixes and node names", function()
    assert.has_error(function() core.sysfs{ driver = "Bad_Driver", node = "n", root = root } end)
    assert.has_error(function() core.sysfs{ driver = "a.b", node = "n", root = root, class_prefixes = { "03" } } end,
      'class prefix "03" must be 0x followed by 1 to 6 hex digits')
    assert.has_error(function() core.sysfs{ driver = "a.b", node = "Node_A", root = root } end)
  end)
end)

describe("sysfs discovery errors", function()
  it("names the file with a malformed numa_node", function()
    local root = make_tree({ { path = "pci0000:00/0000:00:03.0", class = "0x030000", numa = "zero" } })
    local ok, err = pcall(core.sysfs, { driver = "a.b", node = "n", root = root })
    rm(root)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('0000:00:03.0/numa_node: "zero" is not a NUMA node number', 1, true))
  end)

  it("reports a missing sysfs tree", function()
    local ok, err = pcall(core.sysfs, { driver = "a.b", node = "n", root = "/nonexistent/sys" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cannot read /nonexistent/sys/bus/pci/devices", 1, true))
  end)
end)

describe("sysfs slicing", function()
  it("splits more than 128 devices into slices of one pool with the right count", function()
    local devs = {}
    for i = 0, 129 do
      devs[#devs + 1] = { path = string.format("pci0000:00/0000:%02x:00.0", i), class = "0x020000", numa = i % 2 }
    end
    local root = make_tree(devs)
    local slices = core.sysfs{ driver = "nic.example.com", node = "big", root = root }
    rm(root)
    assert.are.equal(2, #slices)
    assert.are.equal(128, #slices[1].spec.devices)
    assert.are.equal(2, #slices[2].spec.devices)
    for _, s in ipairs(slices) do
      assert.are.equal(2, s.spec.pool.resourceSliceCount)
      assert.are.equal("big", s.spec.pool.name)
    end
    assert.are_not.equal(slices[1].metadata.name, slices[2].metadata.name)
  end)

  it("publishes an empty pool when nothing matches", function()
    local root = make_tree({ { path = "pci0000:00/0000:00:01.0", class = "0x060400" } })
    local slices = core.sysfs{ driver = "a.b", node = "n", root = root }
    rm(root)
    assert.are.equal(1, #slices)
    assert.are.same({}, slices[1].spec.devices)
  end)
end)

describe("draengine sysfs", function()
  it("prints the slice as YAML or JSON", function()
    local root = make_tree(BASIC)
    local rc, out = H.run({ "sysfs", "--driver", "pci.example.com", "--node", "node-a", "--root", root,
                            "--class-prefix", "0x03", "-o", "json" })
    local irc, _, ierr = H.run({ "inspect", "-f", "-" }, out)
    assert.are.equal(0, irc, ierr)
    local rc2, yaml = H.run({ "sysfs", "--driver", "pci.example.com", "--node", "node-a", "--root", root })
    rm(root)
    assert.are.equal(0, rc)
    assert.truthy(out:find('"name": "pci-0000-01-00-0"', 1, true))
    assert.is_nil(out:find("pci-0000-02-00-0", 1, true))
    assert.truthy(out:find('"kind": "List"', 1, true))
    assert.are.equal(0, rc2)
    assert.truthy(yaml:match("^%-%-%-\n"))
  end)

  it("requires --driver and exits 2 with a message", function()
    local rc, _, err = H.run({ "sysfs" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("--driver NAME is required", 1, true))
  end)

  it("works on this machine", function()
    local f = io.open("/sys/bus/pci/devices", "r")
    if not f then
      pending("no /sys/bus/pci on this machine")
      return
    end
    f:close()
    local rc, out, err = H.run({ "sysfs", "--driver", "pci.example.com", "--node", "this-node" })
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("resourceSliceCount", 1, true))
    local irc, iout, ierr = H.run({ "inspect", "-f", "-" }, out)
    assert.are.equal(0, irc, ierr)
    assert.truthy(iout:find("node this-node", 1, true))
  end)
end)
