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
    local free = count(html, 'data%-w="%-1" data%-s="0"')
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

  it("can colour the cluster by any derived attribute, tiers in their own colours", function()
    local p2 = os.tmpname() .. ".html"
    local rc2, out2 = H.run({ "run", "--nodes", "12", "--policies", H.root .. "/policies", "--report", p2 })
    local h2 = H.read_file(p2)
    os.remove(p2)
    assert.are.equal(0, rc2)
    -- one button per derived attribute, each with its legend
    local facets = {}
    for k, name in h2:gmatch('<button data%-f="(%d+)">([^<]+)</button>') do facets[name] = tonumber(k) end
    for _, a in ipairs({ "tier.draengine.io/tier", "tier.draengine.io/class", "resource.kubernetes.io/numaNode" }) do
      assert.is_not_nil(facets[a], a)
      assert.truthy(h2:find('<div class="legend" id="legend-' .. facets[a] .. '"', 1, true), a)
    end
    -- gold is gold, platinum and silver their metals
    local legend = h2:match('<div class="legend" id="legend%-' .. facets["tier.draengine.io/tier"] .. '".-</div>')
    assert.truthy(legend:find('<i style="background:#d4af37"></i>gold</span>', 1, true), legend)
    assert.truthy(legend:find('<i style="background:#7d8fa3"></i>platinum</span>', 1, true), legend)
    -- every cell carries its value per attribute
    assert.truthy(h2:find('data%-v="[%d,%-]+"'))
    -- and the page names the revision that decided
    local rev = out2:match("policies: %d+ loaded, revision (%x+)")
    assert.truthy(h2:find('<code id="policy-revision">' .. rev, 1, true), rev)
    assert.truthy(html:find("policies: none (Kubernetes allocation only)", 1, true))
    assert.is_nil(html:find('<button data-f="0">', 1, true)) -- no policies, nothing derived
  end)

  it("draws shared devices by the workloads holding shares, named in the tooltip", function()
    local p3 = os.tmpname() .. ".html"
    local wl = os.tmpname() .. ".json"
    H.write(wl, [[{"patience": 3, "workloads": [
      {"name": "cpu-a", "weight": 1, "summary": "4 CPUs",
       "claim": {"devices": {"requests": [{"name": "cpu", "exactly": {"deviceClassName": "dra.cpu",
         "capacity": {"requests": {"dra.cpu/cpu": "4"}}}}]}}},
      {"name": "cpu-b", "weight": 1, "summary": "8 CPUs",
       "claim": {"devices": {"requests": [{"name": "cpu", "exactly": {"deviceClassName": "dra.cpu",
         "capacity": {"requests": {"dra.cpu/cpu": "8"}}}}]}}}]}]])
    local rc3, out3, err3 = H.run({ "run", "--nodes", "4", "--shapes", "cpu-2socket", "--no-policies",
                                   "--workload", wl, "--max-pods", "12", "--report", p3 })
    local h3 = H.read_file(p3)
    os.remove(p3)
    os.remove(wl)
    assert.are.equal(0, rc3, out3 .. err3)
    local title = h3:match("<title>[^<]*: shared, %d+ shares? held by [^<]*</title>")
    assert.truthy(title, "no shared device in the picture")
    assert.truthy(title:find("cpu%-a %(%d+%)") or title:find("cpu%-b %(%d+%)"), title)
    assert.truthy(h3:find('<rect class="share"', 1, true) or not title:find(", ", 1, true), title)
  end)

  it("aligns table headers with their columns and keeps reasons whole", function()
    assert.truthy(html:find('<th class="l">workload</th><th class="l">what</th><th>arrived</th>', 1, true))
    assert.truthy(html:find('<th class="l">first pending reason</th>', 1, true))
    -- reasons are whole: they used to stop at 511 bytes, mid-word; this run has longer ones
    local longest = 0
    for reason in html:gmatch('<td class="l why">([^<]*)</td>') do
      reason = reason:gsub("&gt;", ">"):gsub("&lt;", "<"):gsub("&amp;", "&"):gsub("&quot;", '"'):gsub("&#39;", "'")
      longest = math.max(longest, #reason)
      if #reason > 0 then assert.truthy(reason:find("^0/24 nodes are available: "), reason) end
    end
    assert.is_true(longest > 511, "no reason longer than the old cut: " .. longest)
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
