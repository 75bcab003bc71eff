wrk.method = "POST"
wrk.body = '{"amount":1000,"currency":"EUR","customer":"cus_42","description":"Order 1001"}'
wrk.headers["Content-Type"] = "application/json"
local thread_count = 0
function setup(thread)
  thread_count = thread_count + 1
  thread:set("tid", thread_count)
end
local prefix
local counter = 0
function init(args)
  prefix = args[1] .. "-" .. tostring(tid)
end
function request()
  counter = counter + 1
  wrk.headers["Idempotency-Key"] = '"' .. prefix .. "-" .. counter .. '"'
  return wrk.format()
end
