-- run_report_spec.lua - `draengine run --report`: a self-contained HTML page
-- that agrees with the summary, and that headless Chromium renders (the
-- script runs, the cluster picture and charts are in the DOM).
local H = require "support.helper"

local function count(s, pat)
  return select(2, s:gsub(pat, ""))
end

local function find_chromium()
  for _, c in ipairs({ "chromium", "chromium-browser", "google-chrome" }) do
    local p = io.popen("command -v " .. c .. " 2>/dev/null")
    local path = p:read("l")
    p:close()
    if path and path ~= "" then return path end
  end
  return nil
end

-- Chromium must not inherit the sanitizer runtime of `make test-asan`.
local function chromium(bin, args)
  local prof = os.tmpname()
  os.remove(prof)
  local cmd = "env -u LD_PRELOAD -u ASAN_OPTIONS -u LSAN_OPTIONS -u UBSAN_OPTIONS timeout 90 " ..
    H.shell_quote(bin) .. " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run " ..
    "--disable-background-networking --disable-component-update --disable-sync --disable-extensions " ..
    "--user-data-dir=" .. H.shell_quote(prof) .. " " .. args .. " 2>/dev/null"
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  os.execute("rm -rf " .. H.shell_quote(prof))
  return out
end

describe("draengine run --report", function()
  local path, rc, out, html
  setup(function()
    path = os.tmpname() .. ".html"
    rc, out = H.run({ "run", "--nodes", "24", "--no-policies", "--seed", "5", "--report", path })
    html = H.read_file(path)
  end)
  teardown(function() os.remove(path) end)

  it("writes one self-contained page that needs no network", function()
    assert.are.equal(0, rc)
    assert.truthy(out:find("\nReport: " .. path, 1, true))
    assert.truthy(html:match("^<!DOCTYPE html>"))
    assert.is_nil(html:find("<link", 1, true))
    assert.is_nil(html:find(" src=", 1, true))
    assert.is_nil(html:find("url(", 1, true))
    assert.is_nil(html:find("@import", 1, true))
    -- the only URL is the SVG namespace, which is a name, not a fetch
    local urls = {}
    for u in html:gmatch("https?://[^\"' <]+") do urls[u] = true end
    assert.are.same({ ["http://www.w3.org/2000/svg"] = true }, urls)
  end)

  it("draws one cell per device, coloured as the summary counts them", function()
    local devices = tonumber((out:match("\nCluster: [%d,]+ nodes, ([%d,]+) devices"):gsub(",", "")))
    local allocated = tonumber((out:match("\nDevices allocated: ([%d,]+) of"):gsub(",", "")))
    assert.are.equal(devices, count(html, '<rect class="dev"'))
    local free = count(html, 'data%-w="%-1" data%-t="%-?%d+" data%-s="0"')
    assert.are.equal(devices - allocated, free)
    assert.are.equal(24, count(html, '<g class="node"'))
  end)

  it("has the charts, the workloads and the numbers of the summary", function()
    for _, id in ipairs({ "cluster-map", "util-chart", "workload-chart", "vendor-chart", "workloads" }) do
      assert.truthy(html:find('id="' .. id .. '"', 1, true), id)
    end
    local _, placed, pending = out:match("\nPods: ([%d,]+) arrived, ([%d,]+) placed, ([%d,]+) pending")
    assert.truthy(html:find('<b id="kpi-placed">' .. placed:gsub(",", "") .. "</b>", 1, true))
    assert.truthy(html:find('<b id="kpi-pending">' .. pending:gsub(",", "") .. "</b>", 1, true))
    for _, w in ipairs({ "single-gpu", "mig-1g", "ext-gpu", "amd-partition" }) do
      assert.truthy(html:find(">" .. w .. "<", 1, true), w)
    end
  end)

  it("can colour the cluster by the tiers the policies derive", function()
    local p2 = os.tmpname() .. ".html"
    local rc2 = H.run({ "run", "--nodes", "12", "--policies", H.root .. "/policies", "--report", p2 })
    local h2 = H.read_file(p2)
    os.remove(p2)
    assert.are.equal(0, rc2)
    assert.truthy(h2:find('<div class="legend" id="legend-tier"', 1, true))
    for _, t in ipairs({ "platinum", "gold" }) do
      assert.truthy(h2:find("</i>" .. t .. "</span>", 1, true), t)
    end
    assert.truthy(count(h2, 'data%-t="%d+"') > 0)
    assert.are.equal(0, count(html, 'data%-t="%d+"')) -- no policies, no tiers
  end)

  it("renders in headless Chromium", function()
    local bin = find_chromium()
    if not bin then
      pending("chromium is not installed (apt-get install chromium; `make deps` does it as root)")
      return
    end
    local dom = chromium(bin, "--dump-dom " .. H.shell_quote("file://" .. path))
    assert.truthy(dom:find('data-ready="1"', 1, true), "the page script did not run")
    assert.are.equal(count(html, '<rect class="dev"'), count(dom, '<rect class="dev"'))
    assert.truthy(dom:find('<polyline class="series"', 1, true))
    local png = os.tmpname() .. ".png"
    chromium(bin, "--screenshot=" .. H.shell_quote(png) .. " --window-size=1280,1600 " ..
      H.shell_quote("file://" .. path))
    local f = io.open(png, "rb")
    assert.truthy(f, "no screenshot written")
    local data = f:read("a")
    f:close()
    os.remove(png)
    assert.are.equal("\137PNG\r\n\26\n", data:sub(1, 8))
    assert.truthy(#data > 20000, "the screenshot is suspiciously small")
  end)
end)
