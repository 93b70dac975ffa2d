-- summary.lua - busted output handler: prints each failure in full and ends
-- the run with one line "N passed, N failed" (errors count as failures,
-- pending tests are reported but not counted). Loaded with
-- `busted -o spec/support/summary.lua`.
return function(options)
  local busted = require 'busted'
  local handler = require 'busted.outputHandlers.base'()
  local pretty = require 'pl.pretty'

  local function describe(el)
    local msg = el.message
    if type(msg) ~= 'string' then msg = msg == nil and 'Nil error' or pretty.write(msg) end
    local where = ''
    if el.element and el.element.trace and el.element.trace.short_src then
      where = el.element.trace.short_src .. ':' .. el.element.trace.currentline .. ': '
    end
    return where .. el.name .. '\n    ' .. msg:gsub('\n', '\n    ')
  end

  local seen_file
  handler.fileStart = function(file)
    seen_file = file.name
    io.write(file.name, ' ')
    io.flush()
    return nil, true
  end
  handler.fileEnd = function()
    io.write('\n')
    io.flush()
    return nil, true
  end

  handler.testEnd = function(element, parent, status)
    local c = status == 'success' and '.' or status == 'pending' and 'p' or 'F'
    io.write(c)
    io.flush()
    return nil, true
  end

  handler.suiteEnd = function()
    local failed = handler.failuresCount + handler.errorsCount
    if failed > 0 then
      io.write('\nFailures:\n')
      for _, f in ipairs(handler.failures) do io.write('  FAIL ', describe(f), '\n') end
      for _, f in ipairs(handler.errors) do io.write('  ERROR ', describe(f), '\n') end
    end
    if handler.pendingsCount > 0 then
      io.write(string.format('(%d pending)\n', handler.pendingsCount))
    end
    io.write(string.format('%d passed, %d failed\n', handler.successesCount, failed))
    io.flush()
    return nil, true
  end

  busted.subscribe({ 'file', 'start' }, handler.fileStart)
  busted.subscribe({ 'file', 'end' }, handler.fileEnd)
  busted.subscribe({ 'test', 'end' }, handler.testEnd, { predicate = handler.cancelOnPending })
  busted.subscribe({ 'suite', 'end' }, handler.suiteEnd)
  return handler
end
